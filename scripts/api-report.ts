/**
 * The package's public API as text, one report per entry point of package.json's `exports`, kept in
 * api/<entry>.api.md so that a change to the API is a reviewed diff (as api-extractor's reports are).
 * The declarations are TypeScript's own (.d.ts emitted in memory, comments left out); each export
 * is followed by the declarations it refers to that the entry does not export itself.
 *
 *   npm run api:report      writes api/*.api.md (test/unit/api-report.test.ts compares them)
 */
import { createHash } from 'node:crypto'
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import ts from 'typescript'

const ROOT = resolve(__dirname, '..')

/** The entry points of package.json's `exports`, by report name. */
export const ENTRIES: Record<string, string> = {
  index: 'src/index.ts',
  emulator: 'src/emulator/index.ts',
  context: 'src/context/index.ts',
  nodes: 'nodes/index.ts',
}

export function reportPath(name: string): string {
  return join(ROOT, 'api', `${name}.api.md`)
}

/** A class without its private members (a constructor stays: a private one says it cannot be called). */
function withoutPrivates(node: ts.Declaration): ts.Node {
  if (!ts.isClassDeclaration(node)) return node
  const hidden = (m: ts.ClassElement) =>
    !ts.isConstructorDeclaration(m) &&
    ((m.name !== undefined && ts.isPrivateIdentifier(m.name)) ||
      (ts.getCombinedModifierFlags(m) & ts.ModifierFlags.Private) !== 0)
  return ts.factory.updateClassDeclaration(
    node,
    node.modifiers,
    node.name,
    node.typeParameters,
    node.heritageClauses,
    node.members.filter((m) => !hidden(m)),
  )
}

/** The reports of every entry, by report name. */
export function apiReports(): Record<string, string> {
  const parsed = ts.getParsedCommandLineOfConfigFile(
    join(ROOT, 'tsconfig.json'),
    {},
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} },
  )!
  const options: ts.CompilerOptions = {
    ...parsed.options,
    declaration: true,
    emitDeclarationOnly: true,
    noEmit: false,
    sourceMap: false,
    declarationMap: false,
  }
  const entries = Object.values(ENTRIES).map((file) => join(ROOT, file))
  const emitted = new Map<string, string>()
  ts.createProgram(entries, options).emit(undefined, (file, text) => emitted.set(resolve(file), text), undefined, true)

  // A second program over the emitted declarations alone.
  const host = ts.createCompilerHost(options)
  const readFile = host.readFile.bind(host)
  host.readFile = (file) => emitted.get(resolve(file)) ?? readFile(file)
  host.fileExists = (file) => emitted.has(resolve(file)) || ts.sys.fileExists(file)
  // The emitted folders exist in memory only: without a build there is no dist/ to find them in.
  const emittedDirs = new Set<string>()
  for (const file of emitted.keys())
    for (let dir = dirname(file); !emittedDirs.has(dir) && dir !== dirname(dir); dir = dirname(dir))
      emittedDirs.add(dir)
  host.directoryExists = (dir) => emittedDirs.has(resolve(dir)) || ts.sys.directoryExists(dir)
  const outDir = resolve(options.outDir!)
  const declarationOf = (file: string) => join(outDir, file.replace(/\.ts$/, '.d.ts'))
  const program = ts.createProgram(
    Object.values(ENTRIES).map(declarationOf),
    {
      ...options,
      noEmit: true,
      skipLibCheck: true,
      rootDir: outDir,
      outDir: undefined,
      declaration: false,
      emitDeclarationOnly: false,
    },
    host,
  )
  const checker = program.getTypeChecker()
  const printer = ts.createPrinter({ removeComments: true })
  const ours = (node: ts.Node) => emitted.has(resolve(node.getSourceFile().fileName))

  const reports: Record<string, string> = {}
  for (const [name, file] of Object.entries(ENTRIES)) {
    const source = program.getSourceFile(declarationOf(file))!
    const module = checker.getSymbolAtLocation(source)!
    const printed = new Set<ts.Node>()
    const blocks: string[] = []
    const queue: ts.Symbol[] = []
    const print = (symbol: ts.Symbol): string[] => {
      const real = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol
      const texts: string[] = []
      for (const declaration of real.declarations ?? []) {
        // A type parameter is printed with what declares it.
        if (!ours(declaration) || printed.has(declaration) || ts.isTypeParameterDeclaration(declaration)) continue
        printed.add(declaration)
        const text = printer
          .printNode(ts.EmitHint.Unspecified, withoutPrivates(declaration), declaration.getSourceFile())
          .trim()
        texts.push(ts.isVariableDeclaration(declaration) ? `declare const ${text};` : text)
        // Follow what it refers to: a type, a `typeof` value, a base class.
        const visit = (n: ts.Node): void => {
          if (ts.isTypeReferenceNode(n) || ts.isTypeQueryNode(n) || ts.isExpressionWithTypeArguments(n)) {
            const target = ts.isTypeReferenceNode(n) ? n.typeName : ts.isTypeQueryNode(n) ? n.exprName : n.expression
            const name = ts.isQualifiedName(target)
              ? target.right
              : ts.isPropertyAccessExpression(target)
                ? target.name
                : target
            const referred = checker.getSymbolAtLocation(name)
            if (referred) queue.push(referred)
          }
          ts.forEachChild(n, visit)
        }
        visit(declaration)
      }
      return texts
    }
    const exported = module.exports?.get(ts.InternalSymbolName.ExportEquals)
    const exports = exported ? [exported] : checker.getExportsOfModule(module)
    for (const symbol of [...exports].sort((a, b) => a.name.localeCompare(b.name))) {
      const texts = print(symbol)
      blocks.push(`// export ${symbol === exported ? '=' : symbol.name}\n${texts.join('\n')}`)
    }
    const referred: Array<[string, string]> = []
    while (queue.length > 0) {
      const symbol = queue.shift()!
      const texts = print(symbol)
      if (texts.length > 0) referred.push([symbol.name, texts.join('\n')])
    }
    referred.sort((a, b) => a[0].localeCompare(b[0]) || a[1].localeCompare(b[1]))
    const entry = name === 'index' ? 'node-red-contrib-aio-statestore' : `node-red-contrib-aio-statestore/${name}`
    reports[name] = [
      `# API report: ${entry}`,
      '',
      `What \`${entry}\` exports (${relative(ROOT, join(ROOT, file))}), as TypeScript declares it, then the`,
      'declarations those refer to that it does not export. Written by `npm run api:report`; a change',
      'to the public API shows here as a diff (test/unit/api-report.test.ts fails until it is written).',
      '',
      '```ts',
      blocks.join('\n\n'),
      '',
      '// referred to, not exported',
      referred.map(([, text]) => text).join('\n\n'),
      '```',
      '',
    ].join('\n')
  }
  return reports
}

/** The files a report is made of: the sources, the compiler's settings and version, the dependencies' types, this script. */
function inputsHash(): string {
  const hash = createHash('sha256').update(ts.version)
  const files = ['tsconfig.json', 'package-lock.json', relative(ROOT, __filename)]
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true }).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (entry.name.endsWith('.ts')) files.push(path)
    }
  }
  walk('src')
  for (const file of files) hash.update(`\0${file}\0`).update(readFileSync(join(ROOT, file)))
  return hash.digest('hex')
}

/** apiReports(), kept under node_modules/.cache by a hash of what they are made of: the same sources are reported once. */
export function cachedApiReports(): Record<string, string> {
  const dir = join(ROOT, 'node_modules', '.cache', 'aio-statestore-api-report')
  const file = join(dir, `${inputsHash()}.json`)
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>
  } catch {
    const reports = apiReports()
    mkdirSync(dir, { recursive: true })
    writeFileSync(file, JSON.stringify(reports))
    return reports
  }
}

if (require.main === module) {
  for (const [name, text] of Object.entries(apiReports())) {
    const path = reportPath(name)
    let old = ''
    try {
      old = readFileSync(path, 'utf8')
    } catch {
      // a new entry
    }
    if (old !== text) writeFileSync(path, text)
    console.log(`${relative(ROOT, path)}${old === text ? '' : ' (written)'}`)
  }
}

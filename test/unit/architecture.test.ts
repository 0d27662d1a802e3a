/**
 * The import rules of docs/architecture.md, read from the sources with TypeScript's own import
 * scanner: the rooms form layers, imports only run downwards, nothing outside src/client opens a
 * client file other than its index, the emulator's core is data and rules only, and no file is on
 * an import circle. A violation names the file and the import.
 */
import { strict as assert } from 'node:assert'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import ts from 'typescript'

const ROOT = resolve(__dirname, '..', '..')

/** Each room and its layer: a file may import its own room and rooms of lower layers only. */
const LAYERS: Array<[room: string, layer: number]> = [
  ['src/hlc', 0],
  ['src/resp', 0],
  ['src/diagnostics', 0],
  ['src/formats', 0],
  ['src/lang', 0],
  ['src/protocol', 1],
  ['src/checks', 2],
  ['src/transport', 2],
  ['src/client', 3],
  ['src/locks', 4],
  ['src/emulator', 4],
  ['src/observe', 5],
  ['src/export', 5],
  ['src/context', 6],
  ['src/cli', 6],
  ['src/function-nodes', 6],
  ['src/index.ts', 7],
  ['nodes/lib', 8],
  ['nodes/sidebar', 8],
  ['nodes/msg', 9],
  ['nodes/config', 10],
  ['nodes/lock', 11],
  ['nodes', 12],
]

/** The client's connection and correlation, for another protocol: the emulator's admin channel's alone. */
const CLIENT_SIDE_DOOR = 'src/client/channel.ts'

/** What the emulator's core may import from outside itself: the shared protocol rooms, and hashing. */
const CORE_MAY_IMPORT = ['src/diagnostics/errors.ts', 'src/hlc', 'src/resp', 'src/protocol', 'node:crypto']

/** A Node-RED package: only nodes/ may load one, by import or by run-time require. */
const NODE_RED_PACKAGE = /^(node-red|@node-red\/[^'"]+)$/

/**
 * Files outside nodes/ allowed to load a Node-RED package at run time, each with its reason
 * (docs/architecture.md says the same).
 */
const NODE_RED_LOADERS: Record<string, string> = {
  // Node-RED hands a context store no logger: it borrows the runtime's log, and falls back to the console.
  'src/context/config.ts': '@node-red/util',
}

/**
 * Run-time loads of a Node-RED package that TypeScript's scanner does not see: a call with the
 * package name as its one argument, such as `createRequire(entry)('@node-red/util')`.
 */
function nodeRedLoadsOf(file: string): Import[] {
  const text = readFileSync(join(ROOT, file), 'utf8')
  return [...text.matchAll(/\(\s*['"](node-red|@node-red\/[^'"]+)['"]\s*\)/g)].map((m) => ({ from: file, to: m[1]! }))
}

interface Import {
  from: string
  /** A path relative to the repository for a file of ours, else the module name. */
  to: string
}

function sourceFiles(dir: string): string[] {
  const out: string[] = []
  for (const name of readdirSync(join(ROOT, dir))) {
    const path = join(dir, name)
    if (statSync(join(ROOT, path)).isDirectory()) out.push(...sourceFiles(path))
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(path)
  }
  return out
}

function resolveLocal(from: string, spec: string): string {
  const base = resolve(ROOT, dirname(from), spec)
  for (const candidate of [`${base}.ts`, join(base, 'index.ts'), base]) {
    try {
      if (statSync(candidate).isFile()) return relative(ROOT, candidate)
    } catch {
      // not this one
    }
  }
  throw new Error(`${from}: cannot resolve ${spec}`)
}

function importsOf(file: string): Import[] {
  const info = ts.preProcessFile(readFileSync(join(ROOT, file), 'utf8'), true, true)
  return info.importedFiles.map(({ fileName }) => ({
    from: file,
    to: fileName.startsWith('.') ? resolveLocal(file, fileName) : fileName,
  }))
}

/**
 * The rooms docs/architecture.md's picture draws, each at its layer: a line starts with its layer's
 * number (a line without one continues the layer above it) and names its rooms first, before the
 * words that say what they hold.
 */
function roomsInPicture(architecture: string): Array<[room: string, layer: number]> {
  const picture = /^```\n([\s\S]*?)^```$/m.exec(architecture)?.[1] ?? ''
  const rooms: Array<[string, number]> = []
  let layer = -1
  for (const line of picture.split('\n')) {
    const numbered = /^ *(\d+) {2}/.exec(line)
    if (numbered) layer = Number(numbered[1])
    const words = line
      .slice(numbered?.[0].length ?? 0)
      .trim()
      .split(/\s+/)
    for (const word of words) {
      if (!/^(?:src|nodes)(?:\/[\w.-]+)*\/?$/.test(word)) break
      rooms.push([word.replace(/\/$/, ''), layer])
    }
  }
  return rooms
}

function roomOf(file: string): [string, number] | null {
  for (const [room, layer] of LAYERS) if (file === room || file.startsWith(`${room}/`)) return [room, layer]
  return null
}

/** Each import circle, as the files on it from the first one reached back to it. */
function circlesIn(edgeList: Import[]): string[] {
  const edges = new Map<string, string[]>()
  for (const i of edgeList) edges.set(i.from, [...(edges.get(i.from) ?? []), i.to])
  const state = new Map<string, 'open' | 'done'>()
  const circles: string[] = []
  const visit = (file: string, path: string[]): void => {
    if (state.get(file) === 'done') return
    if (state.get(file) === 'open') {
      circles.push([...path.slice(path.indexOf(file)), file].join(' -> '))
      return
    }
    state.set(file, 'open')
    for (const next of edges.get(file) ?? []) visit(next, [...path, file])
    state.set(file, 'done')
  }
  for (const file of edges.keys()) visit(file, [])
  return circles
}

const files = [...sourceFiles('src'), ...sourceFiles('nodes')]
const imports = files.flatMap(importsOf)
const local = imports.filter((i) => i.to.endsWith('.ts'))

describe('architecture: the import rules of docs/architecture.md', () => {
  it('every source file belongs to a room of the layer table', () => {
    assert.deepEqual(
      files.filter((f) => roomOf(f) === null),
      [],
    )
  })

  it("docs/architecture.md's picture draws every room of the layer table at its layer, and no other", () => {
    const drawn = roomsInPicture(readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8'))
    const byName = (a: [string, number], b: [string, number]) => a[0].localeCompare(b[0])
    assert.deepEqual([...drawn].sort(byName), [...LAYERS].sort(byName))
  })

  it('the picture is read as it is drawn: rooms before their words, a line without a number in the layer above', () => {
    const doc = [
      '# A',
      '```',
      ' 2  nodes/                 glue for src/x/ and nodes/y/',
      ' 1  src/a/    src/b.ts the a  |  the b',
      '    src/c/                 the c',
      '```',
      '```',
      ' 9  src/elsewhere/',
      '```',
    ].join('\n')
    assert.deepEqual(roomsInPicture(doc), [
      ['nodes', 2],
      ['src/a', 1],
      ['src/b.ts', 1],
      ['src/c', 1],
    ])
  })

  it('imports run from a room to itself or to a lower layer, never up or sideways', () => {
    const wrong = local
      .filter((i) => {
        const [fromRoom, fromLayer] = roomOf(i.from)!
        const [toRoom, toLayer] = roomOf(i.to)!
        return fromRoom !== toRoom && toLayer >= fromLayer
      })
      .map((i) => `${i.from} imports ${i.to}`)
    assert.deepEqual(wrong, [])
  })

  it('nothing outside src/client imports a client file other than its front door, src/client/index.ts, or its side door', () => {
    const wrong = local
      .filter(
        (i) =>
          !i.from.startsWith('src/client/') &&
          i.to.startsWith('src/client/') &&
          i.to !== 'src/client/index.ts' &&
          i.to !== CLIENT_SIDE_DOOR,
      )
      .map((i) => `${i.from} imports ${i.to}`)
    assert.deepEqual(wrong, [])
  })

  it("only the emulator's admin channel opens the client's side door (its connection and correlation for another protocol)", () => {
    const openers = local.filter((i) => i.to === CLIENT_SIDE_DOOR && !i.from.startsWith('src/client/'))
    assert.deepEqual(
      openers.filter((i) => !i.from.startsWith('src/emulator/admin/')).map((i) => `${i.from} imports ${i.to}`),
      [],
    )
    assert.ok(openers.length > 0, 'the admin channel opens it')
  })

  it("the emulator's core imports no adapter and no I/O: only itself, the protocol rooms and hashing", () => {
    const wrong = imports
      .filter((i) => i.from.startsWith('src/emulator/core/') && !i.to.startsWith('src/emulator/core/'))
      .filter((i) => !CORE_MAY_IMPORT.some((allowed) => i.to === allowed || i.to.startsWith(`${allowed}/`)))
      .map((i) => `${i.from} imports ${i.to}`)
    assert.deepEqual(wrong, [])
  })

  it('inside the emulator, a folder imports only the folders its picture in docs/architecture.md draws beside it as used: none upwards', () => {
    const USES: Record<string, string[]> = {
      core: [],
      broker: [],
      journal: ['core'],
      service: ['core', 'broker', 'journal'],
      admin: ['core', 'service'],
    }
    const folder = (file: string) => /^src\/emulator\/([^/]+)\//.exec(file)?.[1]
    const wrong = local.filter((i) => {
      const from = folder(i.from)
      const to = folder(i.to)
      return from !== undefined && from in USES && to !== undefined && to !== from && !USES[from]!.includes(to)
    })
    assert.deepEqual(
      wrong.map((i) => `${i.from} imports ${i.to}`),
      [],
    )
  })

  it('the embedded broker knows nothing of the state store: it imports no other emulator folder', () => {
    const wrong = local.filter(
      (i) =>
        i.from.startsWith('src/emulator/broker/') &&
        i.to.startsWith('src/emulator/') &&
        !i.to.startsWith('src/emulator/broker/') &&
        i.to !== 'src/emulator/logger.ts' &&
        i.to !== 'src/emulator/within.ts',
    )
    assert.deepEqual(
      wrong.map((i) => `${i.from} imports ${i.to}`),
      [],
    )
  })

  it('only nodes/ imports or requires a Node-RED package (node-red, @node-red/*), also at run time', () => {
    const loads = [...imports, ...files.flatMap(nodeRedLoadsOf)].filter((i) => NODE_RED_PACKAGE.test(i.to))
    const wrong = loads
      .filter((i) => !i.from.startsWith('nodes/') && NODE_RED_LOADERS[i.from] !== i.to)
      .map((i) => `${i.from} loads ${i.to}`)
    assert.deepEqual([...new Set(wrong)], [])
    // The scanners see what they check: an import in nodes/, a require, and the allowed run-time load.
    assert.ok(loads.some((i) => i.from.startsWith('nodes/') && i.to === 'node-red'))
    assert.ok(imports.some((i) => i.from === 'src/context/config.ts' && i.to === 'node:module'))
    assert.ok(loads.some((i) => i.from === 'src/context/config.ts' && i.to === '@node-red/util'))
  })

  it('every export is named: no file re-exports a module whole (export *), so nothing becomes public by accident', () => {
    const wrong = files.filter((f) => /^\s*export \*/m.test(readFileSync(join(ROOT, f), 'utf8')))
    assert.deepEqual(wrong, [])
  })

  it('no file is on an import circle', () => {
    assert.deepEqual(circlesIn(local), [])
  })

  it('the circle finder finds a circle, and only a circle', () => {
    const edge = (from: string, to: string): Import => ({ from, to })
    assert.deepEqual(circlesIn([edge('a', 'b'), edge('b', 'c'), edge('c', 'a'), edge('c', 'd')]), ['a -> b -> c -> a'])
    assert.deepEqual(circlesIn([edge('a', 'b'), edge('a', 'c'), edge('b', 'd'), edge('c', 'd')]), [])
  })

  it('finds what it checks: a known import of each kind is seen', () => {
    // Guards against a scanner that sees nothing and so passes every rule.
    assert.ok(local.some((i) => i.from === 'src/locks/lease.ts' && i.to === 'src/client/index.ts'))
    assert.ok(imports.some((i) => i.from === 'src/emulator/broker/broker.ts' && i.to === 'node:net'))
    assert.ok(local.some((i) => i.from === 'nodes/msg/handler.ts' && i.to === 'nodes/lib/status.ts'))
    assert.ok(local.length > 200, `only ${local.length} imports found`)
  })
})

import { readFileSync } from 'node:fs'
import { isNode, LineCounter, parseAllDocuments, type Document } from 'yaml'
import { AuthorizationPolicy } from './core/authorization-policy'
import { PersistencePolicy } from './core/persistence-policy'
import { authorizationSources, persistenceSource } from './core/resource-documents'
import { pathText, ResourceError } from './core/resource-error'
import { authenticationSources, type AuthenticationSources } from './core/authentication-documents'

/**
 * Reading the cluster resources a user applies (`--auth`, `--broker-config`) from a file: YAML or
 * JSON (JSON is YAML), one document or several (`---`). What is wrong stops the emulator with the
 * file, the line, the field (which names the rule) and the reason.
 */

/** A resource file that cannot be used; `message` says the file, the line and why. */
export class ResourceFileError extends Error {
  readonly code = 'ResourceFileInvalid'
  constructor(
    readonly file: string,
    readonly line: number | null,
    readonly reason: string,
  ) {
    super(`${file}${line !== null ? `:${line}` : ''}: ${reason}`)
    this.name = 'ResourceFileError'
  }
}

interface Parsed {
  documents: Document[]
  lines: LineCounter
}

function parseFile(file: string): Parsed {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new ResourceFileError(
      file,
      null,
      `cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    )
  }
  const lines = new LineCounter()
  const documents = parseAllDocuments(text, { lineCounter: lines, prettyErrors: false })
  if (!Array.isArray(documents)) return { documents: [], lines }
  for (const doc of documents) {
    const problem = doc.errors[0]
    if (problem)
      throw new ResourceFileError(
        file,
        lines.linePos(problem.pos[0]).line,
        `is not valid YAML or JSON: ${problem.message.split('\n')[0]}`,
      )
  }
  return { documents, lines }
}

function compile<T>(file: string, build: (values: unknown[]) => T): T {
  const { documents, lines } = parseFile(file)
  const values = documents
    .map((d) => d.toJS({ maxAliasCount: 100 }) as unknown)
    .filter((v) => v !== null && v !== undefined)
  // Documents that are empty (a trailing `---`) are skipped; indices below are of the kept ones.
  const kept = documents.filter((d) => {
    const v = d.contents
    return v !== null && !(isNode(v) && (v as { value?: unknown }).value === null)
  })
  try {
    return build(values)
  } catch (err) {
    if (!(err instanceof ResourceError)) throw err
    const doc = kept[err.document]
    const where = err.path.length > 0 ? `${pathText(err.path)}: ` : ''
    const docNote = kept.length > 1 ? `document ${err.document + 1}, ` : ''
    throw new ResourceFileError(file, doc ? lineOf(doc, err.path, lines) : null, `${docNote}${where}${err.reason}`)
  }
}

/** The line of the deepest node of `path` that exists in the document. */
function lineOf(doc: Document, path: ReadonlyArray<string | number>, lines: LineCounter): number | null {
  for (let n = path.length; n >= 0; n--) {
    const node = n === 0 ? doc.contents : doc.getIn(path.slice(0, n), true)
    if (isNode(node) && node.range) return lines.linePos(node.range[0]).line
  }
  return null
}

export function readAuthorizationFile(file: string): AuthorizationPolicy {
  return compile(file, (values) => AuthorizationPolicy.compile(authorizationSources(values)))
}

export function readBrokerConfigFile(file: string): PersistencePolicy {
  return compile(file, (values) => {
    const source = persistenceSource(values)
    return PersistencePolicy.compile(source.value, source.fields)
  })
}

/**
 * `--authn`: BrokerAuthentication X.509 attributes and ServiceAccount `aio-broker-auth/` annotations (see
 * core/authentication-documents.ts).
 */
export function readAuthenticationFile(file: string): AuthenticationSources {
  return compile(file, (values) => authenticationSources(values))
}

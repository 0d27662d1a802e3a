import { KeyCache } from './key-cache'
import { getPath, parsePath, setPath, type Segment } from './path'
import { encode, inactive, named, withoutMethods, type Session } from './session'

type Scope = Record<string, unknown>

/**
 * A key name with nothing that needs parsing (`/^[A-Za-z_$][\w$-]*$/`): the common case, read
 * without the parser. Tested by char codes: the RegExp took twice as long as the read it guards.
 */
export function isPlain(key: string): boolean {
  const n = key.length
  if (n === 0) return false
  for (let i = 0; i < n; i++) {
    const c = key.charCodeAt(i)
    const letter = (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95 /* _ */ || c === 36 /* $ */
    if (letter || (i > 0 && ((c >= 48 && c <= 57) || c === 45)) /* digit, - */) continue
    return false
  }
  return true
}

/**
 * The store with `cache: true`: `get` and `keys` answer from the cache, synchronously; `set`
 * changes the cache at once and writes through (key-cache.ts).
 */
export class CachedStore {
  readonly cache: KeyCache

  constructor(private readonly session: Session) {
    this.cache = new KeyCache(session)
  }

  /** Throws what a malformed key throws. */
  get(scope: string, key: string): unknown {
    return read(this.cache.data.get(scope), key)
  }

  /** One value per key; throws what the first malformed key throws. */
  getAll(scope: string, keys: readonly string[]): unknown[] {
    const data = this.cache.data.get(scope)
    return keys.map((k) => read(data, k))
  }

  /**
   * Changes the cache and queues the writes of the top-level keys touched. `log`: nobody waits, a failure is logged.
   */
  set(scope: string, paths: Array<readonly Segment[]>, values: unknown[], log: boolean): Array<Promise<void>> {
    const data = this.cache.scopeData(scope)
    const touched = new Set<string>()
    paths.forEach((parts, i) => {
      if (setPath(data, parts, values[i])) touched.add(String(parts[0]))
    })
    return [...touched].map((top) => this.cache.write(scope, top, encode(this.session, scope, data[top]), log))
  }

  keys(scope: string): string[] {
    return withoutMethods(scope, Object.keys(this.cache.data.get(scope) ?? {}))
  }

  async delete(scope: string): Promise<void> {
    const tops = new Set(Object.keys(this.cache.data.get(scope) ?? {}))
    for (const top of this.session.index?.current.get(scope) ?? []) tops.add(top)
    this.cache.data.delete(scope)
    try {
      await Promise.all([...tops].map((top) => this.cache.write(scope, top, null, false)))
    } catch (err) {
      throw named(this.session, err, `deleting the context ${scope}`)
    }
  }

  async clean(activeNodes: string[]): Promise<void> {
    const scopes = new Set(this.cache.data.keys())
    for (const scope of this.session.index?.current.keys() ?? []) scopes.add(scope)
    await Promise.all(inactive(scopes, activeNodes).map((scope) => this.delete(scope)))
  }
}

/** Node-RED's getObjectProperty for a context: only a malformed key throws. */
function read(data: Scope | undefined, key: string): unknown {
  if (isPlain(key)) return data?.[key]
  const parts = parsePath(key)
  return data ? getPath(data, parts) : undefined
}

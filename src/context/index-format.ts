/**
 * The key index as stored (docs/context.md, "Keys"): BUCKETS keys `<prefix>#keys/<00..ff>`, each
 * `{"<scope>": ["<key>", …]}` sorted, and the delta `<prefix>#keys/delta`,
 * `{"<scope>": {"<key>": true|false}}`, whose entries override the buckets'. Pure: no I/O.
 */

/** Scope → its top-level keys. */
export type IndexState = Map<string, Set<string>>

/** Scope → key → whether it exists: the changes not folded into the buckets yet, which override them. */
export type Delta = Map<string, Map<string, boolean>>

export type DeltaChange = [scope: string, top: string, exists: boolean]

/** A key entry that appeared in or disappeared from the index. */
export interface IndexEntry {
  scope: string
  top: string
}

/**
 * How many index keys the list is spread over. Fixed, so every runtime sharing a prefix agrees
 * where an entry lives without asking; 256 keeps each one small (about 400 entries at 100,000 keys)
 * while opening the store costs only 256 reads and notifications.
 */
export const BUCKETS = 256

/**
 * How many entries the delta may hold before it is folded into the buckets: a batch of checks
 * rewrites one key (the delta, at most some 40 KB) instead of one bucket per key, and a fold (every
 * bucket read and rewritten once) is paid once per this many changes.
 */
export const DELTA_LIMIT = 2048

/** The index bucket of a key: FNV-1a of `<scope>/<key>` (a stable, cheap spread; no security role). */
export function bucketOf(scope: string, top: string): number {
  let hash = 0x811c9dc5
  const text = `${scope}/${top}`
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193)
  }
  return (hash >>> 0) % BUCKETS
}

export function bucketKey(prefix: string, bucket: number): string {
  return `${prefix}#keys/${bucket.toString(16).padStart(2, '0')}`
}

export function deltaKey(prefix: string): string {
  return `${prefix}#keys/delta`
}

export function lockKey(prefix: string): string {
  return `${prefix}#lock`
}

/**
 * A bucket's stored bytes (null: absent, empty). Throws on anything but a JSON object; non-string entries are skipped.
 */
export function parseBucket(value: Buffer | null): IndexState {
  const state: IndexState = new Map()
  if (value === null) return state
  for (const [scope, tops] of Object.entries(parseObject(value))) {
    if (Array.isArray(tops)) state.set(scope, new Set(tops.filter((t): t is string => typeof t === 'string')))
  }
  return state
}

/** A bucket's bytes: scopes and keys sorted, so equal lists are equal bytes; null when empty (the key is deleted). */
export function serializeBucket(state: IndexState): string | null {
  if (state.size === 0) return null
  // no prototype: a scope named __proto__ is a key like any other
  const out = Object.create(null) as Record<string, string[]>
  for (const scope of [...state.keys()].sort()) out[scope] = [...state.get(scope)!].sort()
  return JSON.stringify(out)
}

/**
 * The delta's stored bytes (null: absent, empty). Throws on anything but a JSON object; non-boolean entries are
 * skipped.
 */
export function parseDelta(value: Buffer | null): Delta {
  const delta: Delta = new Map()
  if (value === null) return delta
  for (const [scope, tops] of Object.entries(parseObject(value))) {
    if (typeof tops !== 'object' || tops === null || Array.isArray(tops)) continue
    const entries = Object.entries(tops).filter((e): e is [string, boolean] => typeof e[1] === 'boolean')
    if (entries.length > 0) delta.set(scope, new Map(entries))
  }
  return delta
}

export function serializeDelta(delta: Delta): string | null {
  if (delta.size === 0) return null
  const out = Object.create(null) as Record<string, Record<string, boolean>>
  for (const [scope, tops] of delta) out[scope] = Object.fromEntries(tops)
  return JSON.stringify(out)
}

export function countDelta(delta: Delta): number {
  let n = 0
  for (const tops of delta.values()) n += tops.size
  return n
}

/** Lists (`exists`) or unlists the key in `state`; a scope left empty is dropped. */
export function mark(state: IndexState, scope: string, top: string, exists: boolean): void {
  const tops = state.get(scope) ?? new Set<string>()
  if (exists) tops.add(top)
  else tops.delete(top)
  if (tops.size > 0) state.set(scope, tops)
  else state.delete(scope)
}

/** Sets the key's delta entry in place. */
export function markDelta(delta: Delta, scope: string, top: string, exists: boolean): void {
  const tops = delta.get(scope) ?? new Map<string, boolean>()
  tops.set(top, exists)
  delta.set(scope, tops)
}

function parseObject(value: Buffer): Record<string, unknown> {
  const json = JSON.parse(value.toString('utf8')) as unknown
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new Error('not an object')
  return json as Record<string, unknown>
}

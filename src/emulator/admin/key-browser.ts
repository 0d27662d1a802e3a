import { setImmediate as yieldToEventLoop } from 'node:timers/promises'
import { compileGlob, Glob, KEY_PATTERN_GLOB, literalTokens } from '../core/glob'
import { PatternError, type Principal } from '../core/principal'
import { PersistencePolicy } from '../core/persistence-policy'
import type { AuthorizationPolicy, Decision } from '../core/authorization-policy'
import type { Keyspace, StoredRecord } from '../core/keyspace'

/**
 * The emulator's admin channel: looking at the whole store from outside the state store protocol
 * (a key browser for people), so the service's wire behaviour stays that of the real service.
 * Off by default (`EmulatorOptions.admin`): an emulator started with it registers here under its
 * broker URL, where the Node-RED sidebar in the same process finds it. `adminOverMqtt` (the CLI's
 * `--admin`) also serves it over MQTT for other processes (wire.ts, server.ts).
 */

export interface KeyQuery {
  /** Glob over the key (`*`, `?`); all keys when absent or empty. */
  pattern?: string
  /** The `next` of the previous page: keys sorted after it. */
  after?: string
  /** Keys per page, 1 to 1000 (default 100). */
  limit?: number
  signal?: AbortSignal
}

export interface KeyEntry {
  /** The key's bytes as hex (what a cursor and an inspection take). */
  keyHex: string
  /** The key as UTF-8 text, or null for binary keys (then show keyHex). */
  key: string | null
  /** Value bytes. */
  size: number
  version: string
  /** Wall-clock ms, or null for none. */
  expiresAt: number | null
  fencingToken: string | null
  /** SET to be persisted (a key rule or the dynamic property): kept on disk when the emulator has a persistence file. */
  persisted: boolean
}

export interface KeyPage {
  keys: KeyEntry[]
  /** Keys matching the pattern in the whole store (at the time of the scan). */
  matching: number
  /** Keys in the store. */
  total: number
  /** Cursor for the next page, or null when this is the last. */
  next: string | null
}

export interface KeyDetails extends KeyEntry {
  value: Buffer
  /**
   * Why the key is in the persistence file (`stateStoreResources[0] Pattern "cfg/*"`, `mode All`,
   * `the user property aio-persistence=true`); null when it is not.
   */
  persistedBy: string | null
  /**
   * Why a key that is not persisted is not: `no-file` (this emulator has no persistence file, so it
   * keeps no key across restarts), `no-rule` (no key rule names it and it was not SET with the
   * dynamic property); null when it is persisted.
   */
  notPersistedBecause: 'no-file' | 'no-rule' | null
  /**
   * What the authorization rules let one client do with this key, and by which rule; null when no
   * policy is in force or no client was named.
   */
  access: { clientId: string; read: Decision; write: Decision } | null
}

export interface AdminOptions {
  /** How long one step of a scan may hold the event loop (tests make it 0). */
  stepMs?: number
  /** The persistence policy in force, to say why a key is persisted. */
  persistencePolicy?: PersistencePolicy
  /** Whether the emulator has a persistence file (without one, no key is kept across restarts). */
  persistence?: boolean
  /** The authorization rules in force, to say what a client may do with a key. */
  authorization?: AuthorizationPolicy | null
  /** Who a client id is to the rules (the embedded broker knows user names and attributes). */
  principalOf?: (clientId: string) => Principal
}

/** How long one scan step may hold the event loop before it yields. */
const STEP_MS = 8
const CHECK_EVERY = 512
const MAX_LIMIT = 1000

const utf8 = new TextDecoder('utf-8', { fatal: true })

function entry(id: string, record: StoredRecord, size: number): KeyEntry {
  const bytes = Buffer.from(id, 'latin1')
  let key: string | null
  try {
    key = utf8.decode(bytes)
  } catch {
    key = null
  }
  return {
    keyHex: bytes.toString('hex'),
    key,
    size,
    version: record.version.toString(),
    expiresAt: record.expiresAt === 0 ? null : record.expiresAt,
    fencingToken: record.fencingToken?.toString() ?? null,
    persisted: record.persisted,
  }
}

export class EmulatorAdmin {
  private readonly stepMs: number
  private readonly persistencePolicy: PersistencePolicy
  private readonly persistence: boolean
  private readonly authorization: AuthorizationPolicy | null
  private readonly principalOf: (clientId: string) => Principal

  constructor(
    private readonly store: Keyspace,
    options: AdminOptions = {},
  ) {
    this.stepMs = options.stepMs ?? STEP_MS
    this.persistencePolicy = options.persistencePolicy ?? PersistencePolicy.dynamicOnly
    this.persistence = options.persistence ?? false
    this.authorization = options.authorization ?? null
    this.principalOf = options.principalOf ?? ((clientId) => ({ clientId }))
  }

  get keyCount(): number {
    return this.store.size
  }

  /**
   * One page of keys in byte order, filtered by a glob. The store is a hash map, so every page is
   * one pass over it keeping the `limit` smallest keys past the cursor (O(n log limit), no sorted
   * copy of a million keys); the pass yields to the event loop every few milliseconds, so requests
   * keep being served while it runs. Paging by the last key stays right while keys change.
   */
  async listKeys(query: KeyQuery = {}): Promise<KeyPage> {
    const limit = Math.min(MAX_LIMIT, Math.max(1, Math.floor(query.limit ?? 100)))
    const pattern = query.pattern ? filterOf(query.pattern) : null
    const after = query.after ? Buffer.from(query.after, 'hex').toString('latin1') : null
    /** Sorted ascending; at most limit + 1 (the extra one says whether there is a next page). */
    const best: Array<[string, StoredRecord]> = []
    const keep = limit + 1
    let matching = 0
    let since = 0
    let stepStart = performance.now()
    for (const item of this.store.scan()) {
      const id = item[0]
      if (++since >= CHECK_EVERY) {
        since = 0
        if (performance.now() - stepStart > this.stepMs) {
          await yieldToEventLoop()
          query.signal?.throwIfAborted()
          stepStart = performance.now()
        }
      }
      if (pattern !== null && !pattern.matches(id)) continue
      matching += 1
      if (after !== null && id <= after) continue
      if (best.length === keep && id >= best[keep - 1]![0]) continue
      let lo = 0
      let hi = best.length
      while (lo < hi) {
        const mid = (lo + hi) >>> 1
        if (best[mid]![0] < id) lo = mid + 1
        else hi = mid
      }
      best.splice(lo, 0, item)
      if (best.length > keep) best.pop()
    }
    const more = best.length > limit
    const page = more ? best.slice(0, limit) : best
    const keys = page.map(([id, record]) => entry(id, record, record.value.length))
    return { keys, matching, total: this.store.size, next: more && keys.length > 0 ? keys[keys.length - 1]!.keyHex : null }
  }

  /**
   * A key with its value and everything the store knows about it; null when it does not exist.
   * `asClientId`: also what the authorization rules let that client do with the key.
   */
  inspect(key: Buffer, asClientId?: string): KeyDetails | null {
    const record = this.store.get(key)
    if (!record) return null
    const value = record.value
    const id = key.toString('latin1')
    return {
      ...entry(id, record, value.length),
      value,
      persistedBy: record.persisted && this.persistence ? this.whyPersisted(id) : null,
      notPersistedBecause: record.persisted && this.persistence ? null : this.persistence ? 'no-rule' : 'no-file',
      access: this.access(id, asClientId),
    }
  }

  private access(id: string, clientId: string | undefined): KeyDetails['access'] {
    if (!this.authorization || clientId === undefined) return null
    const principal = this.principalOf(clientId)
    return { clientId, read: this.authorization.decideKey(principal, 'read', id), write: this.authorization.decideKey(principal, 'write', id) }
  }

  /** A persisted key is one the key rules name, or one SET with the dynamic property. */
  private whyPersisted(id: string): string {
    const policy = this.persistencePolicy
    return policy.decideKey(id).rule ?? `the user property ${policy.userPropertyKey}=${policy.userPropertyValue}`
  }
}

/** The key filter: the state store's glob; a pattern that is no glob (an unclosed `[`) is taken literally. */
function filterOf(pattern: string): Glob {
  const latin1 = Buffer.from(pattern, 'utf8').toString('latin1')
  try {
    return compileGlob(latin1, KEY_PATTERN_GLOB)
  } catch (err) {
    if (!(err instanceof PatternError)) throw err
    return new Glob([literalTokens(latin1)])
  }
}

const byBrokerUrl = new Map<string, EmulatorAdmin>()

/** host:port of a broker URL, with the loopback names made one, so `mqtt://localhost:1883` finds `mqtt://127.0.0.1:1883`. */
function brokerAddress(url: string): string | null {
  try {
    const u = new URL(url)
    const host = u.hostname === 'localhost' || u.hostname === '[::1]' || u.hostname === '::1' ? '127.0.0.1' : u.hostname
    const port = u.port || (u.protocol === 'mqtts:' ? '8883' : u.protocol === 'ws:' ? '80' : u.protocol === 'wss:' ? '443' : '1883')
    return `${host}:${port}`
  } catch {
    return null
  }
}

export function registerAdmin(brokerUrl: string, admin: EmulatorAdmin): () => void {
  const address = brokerAddress(brokerUrl)
  if (address === null) return () => {}
  byBrokerUrl.set(address, admin)
  return () => {
    if (byBrokerUrl.get(address) === admin) byBrokerUrl.delete(address)
  }
}

/** The admin channel of an emulator in this process serving at this broker URL, if it has one. */
export function adminFor(brokerUrl: string): EmulatorAdmin | null {
  const address = brokerAddress(brokerUrl)
  return address === null ? null : (byBrokerUrl.get(address) ?? null)
}

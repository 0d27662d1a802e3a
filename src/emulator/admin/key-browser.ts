import { compileGlob, Glob, KEY_PATTERN_GLOB, literalTokens } from '../core/glob'
import { PatternError, type Principal } from '../core/principal'
import { PersistencePolicy } from '../core/persistence-policy'
import type { AuthorizationPolicy, Decision } from '../core/authorization-policy'
import type { Keyspace, StoredRecord } from '../core/keyspace'
import { keyWindow, type KeyWindow } from './key-window'

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
  /**
   * SET to be persisted (a key rule or the dynamic property): kept on disk when the emulator has a persistence file.
   */
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
   * Why a key that is not persisted is not: `noFile` (this emulator has no persistence file, so it
   * keeps no key across restarts), `noRule` (no key rule names it and it was not SET with the
   * dynamic property); null when it is persisted.
   */
  notPersistedBecause: 'noFile' | 'noRule' | null
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
const MAX_LIMIT = 1000
/**
 * Key bytes one page holds at most (one longer key still makes a page alone): what bounds the work of building its
 * entries.
 */
export const MAX_PAGE_KEY_BYTES = 256 * 1024
/** Pages one pass over the store keeps ready: while the store does not change, the next ones need no pass. */
export const WINDOW_PAGES = 64
/** Listings kept ready at once; the least recently used goes first. */
const MAX_READY = 8
/** Key bytes one listing kept ready may hold (a window of long keys serves its one page only). */
const MAX_READY_BYTES = 4 * 1024 * 1024

/** What a pass found beyond the page it served, for the page after it. */
interface Ready {
  window: KeyWindow
  /** Where the next page starts in the window. */
  from: number
  /** The store's generation the window holds true for. */
  generation: number
}

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
  /** By pattern and cursor (the last key of the page served), least recently used first. */
  private readonly ready = new Map<string, Ready>()

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
   * One page of keys in byte order, filtered by a glob. The store is a hash map, so a page comes
   * from one pass over it (key-window.ts) keeping the smallest keys past the cursor, WINDOW_PAGES
   * pages of them: while the store does not change, the pages after it are served from what that
   * pass kept, so paging through a quiet store makes one pass per WINDOW_PAGES pages. The pass is
   * a KeyWalk (the one SCAN takes) on a time budget: it yields to the event loop every few
   * milliseconds, also in the middle of one key's match, whatever the pattern. Paging by the last
   * key stays right while keys change (a change means a new pass).
   */
  async listKeys(query: KeyQuery = {}): Promise<KeyPage> {
    const limit = Math.min(MAX_LIMIT, Math.max(1, Math.floor(query.limit ?? 100)))
    const pattern = query.pattern ?? ''
    const after = query.after ? Buffer.from(query.after, 'hex').toString('latin1') : null
    const readyKey = JSON.stringify([pattern, after])
    let ready = this.ready.get(readyKey)
    this.ready.delete(readyKey)
    if (!ready || ready.generation !== this.store.generation) {
      const generation = this.store.generation
      const window = await keyWindow(
        this.store,
        pattern ? filterOf(pattern) : null,
        after,
        limit * WINDOW_PAGES,
        this.stepMs,
        query.signal,
      )
      // A window the store changed under while it was made is used for this page only.
      ready = { window, from: 0, generation: this.store.generation === generation ? generation : -1 }
    }
    const { ids, matching, truncated } = ready.window
    // The page: the next live keys up to the limit and the byte cap (one key at least).
    const keys: KeyEntry[] = []
    let at = ready.from
    let last: string | null = null
    let bytes = 0
    while (keys.length < limit && at < ids.length) {
      const id = ids[at]!
      if (keys.length > 0 && bytes + id.length > MAX_PAGE_KEY_BYTES) break
      at++
      last = id
      const record = this.store.recordOf(id)
      if (!record) continue
      keys.push(entry(id, record, record.value.length))
      bytes += id.length
    }
    const more = at < ids.length || truncated
    const next = more && last !== null ? Buffer.from(last, 'latin1').toString('hex') : null
    // Kept for the next page while the store does not change: stale ones are dropped first.
    for (const [key, kept] of this.ready) if (kept.generation !== this.store.generation) this.ready.delete(key)
    if (
      next !== null &&
      at < ids.length &&
      ready.generation === this.store.generation &&
      ready.window.bytes <= MAX_READY_BYTES
    ) {
      if (this.ready.size >= MAX_READY) this.ready.delete(this.ready.keys().next().value!)
      this.ready.set(JSON.stringify([pattern, last]), { window: ready.window, from: at, generation: ready.generation })
    }
    return { keys, matching, total: this.store.size, next }
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
      notPersistedBecause: record.persisted && this.persistence ? null : this.persistence ? 'noRule' : 'noFile',
      access: this.access(id, asClientId),
    }
  }

  private access(id: string, clientId: string | undefined): KeyDetails['access'] {
    if (!this.authorization || clientId === undefined) return null
    const principal = this.principalOf(clientId)
    return {
      clientId,
      read: this.authorization.decideKey(principal, 'read', id),
      write: this.authorization.decideKey(principal, 'write', id),
    }
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

/**
 * host:port of a broker URL, with the loopback names made one, so `mqtt://localhost:1883` finds
 * `mqtt://127.0.0.1:1883`.
 */
function brokerAddress(url: string): string | null {
  try {
    const u = new URL(url)
    const host = u.hostname === 'localhost' || u.hostname === '[::1]' || u.hostname === '::1' ? '127.0.0.1' : u.hostname
    const port =
      u.port ||
      (u.protocol === 'mqtts:' ? '8883' : u.protocol === 'ws:' ? '80' : u.protocol === 'wss:' ? '443' : '1883')
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

import { randomBytes } from 'node:crypto'
import { compileScanGlob } from './glob'
import { KeyWalk, PAUSED, StepBudget } from './key-walk'

/**
 * SCAN's paging: which keys one page holds and what its continuation token means. Pure: no MQTT.
 *
 * A scan walks the store's own iteration (a JavaScript Map's, which survives changes made between
 * steps: a key deleted before it is reached is skipped, a key added is reached later), so every key
 * that exists for the whole scan is returned exactly once, and a key added or deleted meanwhile may
 * or may not be. The token names the walk kept here (a random id) and the page it follows; it
 * is opaque to the caller. Presenting the token of the page before the last again (a caller's retry
 * after a lost answer) gets the last page again, so a retry loses nothing. A walk unused for
 * `idleMs` is forgotten, as are all of them on a restart: its token is then refused.
 */

export interface ScanLimits {
  /** Keys in one page at most. */
  maxKeys: number
  /** Key bytes in one page at most (one longer key still makes a page alone). */
  maxBytes: number
  /** Keys looked at for one page at most: what bounds the time one request holds the event loop. */
  maxVisited: number
  /** And the time one page may take, in ms: under load a page ends early rather than hold the event loop. */
  maxPageMs: number
  /** A walk not continued for this long is forgotten. */
  idleMs: number
  /** Walks kept at once; the least recently used goes first. */
  maxWalks: number
}

export const DEFAULT_SCAN_LIMITS: ScanLimits = {
  maxKeys: 1000,
  maxBytes: 128 * 1024,
  maxVisited: 20_000,
  maxPageMs: 5,
  idleMs: 60_000,
  maxWalks: 1024,
}

/** What a scan needs of the store: its keys in an order that survives changes, and whether one is live. */
export interface ScannedStore {
  ids(): Iterator<string>
  has(id: string): boolean
}

export type ScanAnswer =
  | { ok: true; keys: Buffer[]; token: Buffer | null }
  | { ok: false; refusal: 'SyntaxError' | 'ScanTokenUnknown'; detail: string }

export interface ScanRequest {
  pattern: Buffer
  token: Buffer | null
  /** Who asks: a walk is continued only by the caller who began it. */
  clientId: string
  /** Whether the caller may read this key; keys it may not are left out of its pages. */
  mayRead: (key: Buffer) => boolean
}

interface Walk {
  readonly id: string
  readonly pattern: string
  readonly clientId: string
  /** The keys matching, a page's budget at a time (it keeps a match the last page paused). */
  readonly keys: KeyWalk
  /** The number of the last page given out (1 for the first). */
  page: number
  last: { keys: Buffer[]; token: Buffer | null }
  usedAt: number
}

/** Throws on bytes that are not UTF-8: which keys SCAN never returns. */
const strictUtf8 = new TextDecoder('utf-8', { fatal: true })

function isUtf8(key: Buffer): boolean {
  try {
    strictUtf8.decode(key)
    return true
  } catch {
    return false
  }
}

const ID_BYTES = 8
const TOKEN_BYTES = ID_BYTES + 4

export class ScanWalks {
  /** By id, least recently used first (a Map keeps insertion order; a use re-inserts). */
  private readonly walks = new Map<string, Walk>()

  constructor(
    private readonly store: ScannedStore,
    private readonly limits: ScanLimits = DEFAULT_SCAN_LIMITS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Walks kept now; for tests and the log. */
  get size(): number {
    return this.walks.size
  }

  page(request: ScanRequest): ScanAnswer {
    const now = this.now()
    this.forgetIdle(now)
    const pattern = request.pattern.toString('latin1')
    if (request.token === null) {
      const glob = compileScanGlob(request.pattern)
      if (!glob.ok) return { ok: false, refusal: 'SyntaxError', detail: `SCAN pattern: ${glob.reason}` }
      const walk: Walk = {
        id: randomBytes(ID_BYTES).toString('latin1'),
        pattern,
        clientId: request.clientId,
        keys: new KeyWalk(glob.glob, this.store.ids()),
        page: 0,
        last: { keys: [], token: null },
        usedAt: now,
      }
      if (this.walks.size >= this.limits.maxWalks) this.walks.delete(this.walks.keys().next().value!)
      this.walks.set(walk.id, walk)
      return this.advance(walk, request.mayRead)
    }
    const token = request.token
    const walk = token.length === TOKEN_BYTES ? this.walks.get(token.toString('latin1', 0, ID_BYTES)) : undefined
    if (!walk || walk.clientId !== request.clientId || walk.pattern !== pattern) {
      return {
        ok: false,
        refusal: 'ScanTokenUnknown',
        detail: `a ${token.length}-byte token this emulator does not know for this client and pattern`,
      }
    }
    this.walks.delete(walk.id)
    this.walks.set(walk.id, walk)
    walk.usedAt = now
    const after = token.readUInt32BE(ID_BYTES)
    if (after === walk.page) return this.advance(walk, request.mayRead)
    if (after === walk.page - 1) return { ok: true, ...walk.last }
    return {
      ok: false,
      refusal: 'ScanTokenUnknown',
      detail: `the token of page ${after}; this scan is at page ${walk.page}`,
    }
  }

  /** The walk's next page; the time budget holds inside one key's match too (the walk pauses there). */
  private advance(walk: Walk, mayRead: (key: Buffer) => boolean): ScanAnswer {
    const { maxKeys, maxBytes, maxVisited, maxPageMs } = this.limits
    const budget = new StepBudget(maxPageMs)
    const visitLimit = walk.keys.visited + maxVisited
    const keys: Buffer[] = []
    let bytes = 0
    let done = false
    while (keys.length < maxKeys && bytes < maxBytes) {
      const id = walk.keys.next(budget, visitLimit)
      if (id === PAUSED) break
      if (id === null) {
        done = true
        break
      }
      // Matched first: the liveness check and the Buffer are for the few keys that match.
      if (!this.store.has(id)) continue
      const key = Buffer.from(id, 'latin1')
      if (isUtf8(key) && mayRead(key)) {
        keys.push(key)
        bytes += key.length
      }
      // The authorization rules' patterns matched this key: their time counts too.
      budget.look()
    }
    walk.page++
    // A finished walk is kept until idle all the same, so that a retry of its last page is answered.
    const token = done ? null : tokenOf(walk)
    walk.last = { keys, token }
    return { ok: true, keys, token }
  }

  private forgetIdle(now: number): void {
    for (const walk of this.walks.values()) {
      if (now - walk.usedAt < this.limits.idleMs) break
      this.walks.delete(walk.id)
    }
  }
}

function tokenOf(walk: Walk): Buffer {
  const token = Buffer.alloc(TOKEN_BYTES)
  token.write(walk.id, 0, 'latin1')
  token.writeUInt32BE(walk.page, ID_BYTES)
  return token
}

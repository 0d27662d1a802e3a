import { randomBytes } from 'node:crypto'
import { NotSupportedError } from '../diagnostics/errors'
import type { KeyScan, StateStoreClient } from '../client'

/**
 * The sidebar's key browser over SCAN: what any state store that answers SCAN can show, with no
 * emulator-only channel. Pages of at most `limit` keys, each with its size and version from a GET;
 * the SCAN pager (its token kept inside, ADR 34) stays here between the editor's "next page"
 * requests, under a cursor id of its own, for a few minutes.
 */

export interface ScannedKey {
  keyHex: string
  key: string
  size: number
  version: string | null
}

export interface ScannedPage {
  keys: ScannedKey[]
  /** The cursor for the next page, or null when this is the last. */
  next: string | null
}

interface Browse {
  readonly pager: KeyScan
  /** Keys SCAN returned that did not fit the last page. */
  readonly buffered: string[]
  done: boolean
  usedAt: number
}

/**
 * A page already given out under a cursor: asked for again (the editor re-reads it after a Set or Delete), it is the
 * same keys, read again.
 */
interface Served {
  readonly names: string[]
  readonly next: string | null
  usedAt: number
}

const IDLE_MS = 5 * 60_000
const MAX_BROWSES = 16
const MAX_SERVED = 64
const MAX_LIMIT = 200

export class ScanKeyBrowser {
  /** By the cursor of the page they continue with. */
  private readonly browses = new Map<string, Browse>()
  /** By the cursor they were asked for with. */
  private readonly served = new Map<string, Served>()
  /** Whether the store answers SCAN: unknown until a scan has been tried, then what it said. */
  private supported: boolean | null = null

  constructor(
    private readonly client: StateStoreClient,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Whether this store can be browsed with SCAN. Asked once (a SCAN of one page); a store that
   * says "unknown command" is remembered as without, a failure to ask (a timeout) is not remembered.
   */
  async answersScan(timeoutMs: number): Promise<boolean> {
    if (this.supported !== null) return this.supported
    try {
      await this.client.scan('*', { timeoutMs }).next()
      this.supported = true
    } catch (err) {
      if (!(err instanceof NotSupportedError)) return false
      this.supported = false
    }
    return this.supported
  }

  /**
   * A page of keys matching the glob (all keys when empty), from the start or at `cursor` (the
   * `next` of an earlier page); null when the store has no SCAN. Asking for a cursor again gives
   * the same keys (those still there), read again; a cursor forgotten starts over.
   */
  async page(query: {
    pattern?: string
    cursor?: string
    limit?: number
    timeoutMs?: number
  }): Promise<ScannedPage | null> {
    const limit = Math.min(MAX_LIMIT, Math.max(1, Math.floor(query.limit ?? 50)))
    const now = this.now()
    this.forgetIdle(now)
    const cursor = query.cursor
    const again = cursor !== undefined ? this.served.get(cursor) : undefined
    if (again) {
      again.usedAt = now
      return { keys: await this.describeAll(again.names, query.timeoutMs), next: again.next }
    }
    let browse = cursor !== undefined ? this.browses.get(cursor) : undefined
    if (browse) this.browses.delete(cursor!)
    else
      browse = {
        pager: this.client.scan(
          query.pattern || '*',
          query.timeoutMs !== undefined ? { timeoutMs: query.timeoutMs } : {},
        ),
        buffered: [],
        done: false,
        usedAt: now,
      }
    try {
      // One key past the page, so that the last page is known to be the last.
      while (browse.buffered.length <= limit && !browse.done) {
        const keys = await browse.pager.next()
        if (keys === null) browse.done = true
        else browse.buffered.push(...keys)
      }
    } catch (err) {
      if (err instanceof NotSupportedError) {
        this.supported = false
        return null
      }
      throw err
    }
    this.supported = true
    const names = browse.buffered.splice(0, limit).sort()
    let next: string | null = null
    if (browse.buffered.length > 0) {
      next = randomBytes(8).toString('hex')
      browse.usedAt = now
      remember(this.browses, next, browse, MAX_BROWSES)
    }
    if (cursor !== undefined) remember(this.served, cursor, { names, next, usedAt: now }, MAX_SERVED)
    return { keys: await this.describeAll(names, query.timeoutMs), next }
  }

  private async describeAll(names: string[], timeoutMs: number | undefined): Promise<ScannedKey[]> {
    const keys = await Promise.all(names.map((name) => this.describe(name, timeoutMs)))
    return keys.filter((k) => k !== null)
  }

  /** A listed key's size and version; null when it was deleted in between. */
  private async describe(key: string, timeoutMs: number | undefined): Promise<ScannedKey | null> {
    const { value, version } = await this.client.get(key, timeoutMs !== undefined ? { timeoutMs } : {})
    if (value === null) return null
    return {
      keyHex: Buffer.from(key, 'utf8').toString('hex'),
      key,
      size: value.length,
      version: version?.toString() ?? null,
    }
  }

  private forgetIdle(now: number): void {
    for (const map of [this.browses, this.served])
      for (const [id, entry] of map) if (now - entry.usedAt >= IDLE_MS) map.delete(id)
  }
}

/** Sets the entry, dropping the oldest one beyond `max`. */
function remember<T>(map: Map<string, T>, id: string, entry: T, max: number): void {
  if (map.size >= max) map.delete(map.keys().next().value!)
  map.set(id, entry)
}

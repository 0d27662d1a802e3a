import { randomBytes } from 'node:crypto'
import { NotSupportedError } from '../errors'
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

const IDLE_MS = 5 * 60_000
const MAX_BROWSES = 16
const MAX_LIMIT = 200

export class ScanKeyBrowser {
  private readonly browses = new Map<string, Browse>()
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

  /** A page of keys matching the glob (all keys when empty), from the start or after `cursor`; null when the store has no SCAN. */
  async page(query: { pattern?: string; cursor?: string; limit?: number; timeoutMs?: number }): Promise<ScannedPage | null> {
    const limit = Math.min(MAX_LIMIT, Math.max(1, Math.floor(query.limit ?? 50)))
    this.forgetIdle()
    let id = query.cursor
    let browse = id !== undefined ? this.browses.get(id) : undefined
    if (!browse) {
      // A cursor that expired starts over: the browser shows the first page again rather than nothing.
      id = randomBytes(8).toString('hex')
      browse = { pager: this.client.scan(query.pattern || '*', query.timeoutMs !== undefined ? { timeoutMs: query.timeoutMs } : {}), buffered: [], done: false, usedAt: this.now() }
    }
    this.browses.delete(id!)
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
    const keys = await Promise.all(names.map((name) => this.describe(name, query.timeoutMs)))
    const more = browse.buffered.length > 0
    if (more) {
      browse.usedAt = this.now()
      if (this.browses.size >= MAX_BROWSES) this.browses.delete(this.browses.keys().next().value!)
      this.browses.set(id!, browse)
    }
    return { keys: keys.filter((k) => k !== null), next: more ? id! : null }
  }

  /** A listed key's size and version; null when it was deleted in between. */
  private async describe(key: string, timeoutMs: number | undefined): Promise<ScannedKey | null> {
    const { value, version } = await this.client.get(key, timeoutMs !== undefined ? { timeoutMs } : {})
    if (value === null) return null
    return { keyHex: Buffer.from(key, 'utf8').toString('hex'), key, size: value.length, version: version?.toString() ?? null }
  }

  private forgetIdle(): void {
    const now = this.now()
    for (const [id, browse] of this.browses) if (now - browse.usedAt >= IDLE_MS) this.browses.delete(id)
  }
}

import type { RequestPrint } from './request-print'

/**
 * The command cache: a request seen again with the same (Response Topic, Correlation Data), the
 * entry's id, while its Message Expiry lasts is a re-send, answered with the first answer and never
 * executed twice (spec section 10). A re-send is also the same request (its `RequestPrint`, which
 * the entry keeps): another request under the same id is a conflict, never answered from the cache
 * (the RPC command cache calls it a protocol error). Bounded in entries and bytes; expired entries
 * go in insertion order as new ones arrive, so there is no timer per entry.
 */

export interface CachedAnswer {
  payload: Buffer
  /** The `__ts` of the answer, byte for byte; undefined when it had none. */
  timestamp: string | undefined
}

export interface DedupEntry {
  readonly id: string
  /** What the request was: a re-send is the same. */
  readonly request: RequestPrint
  /** Wall-clock ms at which the request expires. */
  readonly expiresAt: number
  answer: CachedAnswer | null
  /**
   * Re-sends that arrived while the first was still being executed (null for none, the usual case: no array per entry).
   */
  waiters: Array<(answer: CachedAnswer | null) => void> | null
  done: boolean
  bytes: number
}

export type Lookup =
  | { state: 'new' }
  | { state: 'done'; entry: DedupEntry }
  | { state: 'pending'; entry: DedupEntry }
  /** The correlation data is remembered for a different request. */
  | { state: 'conflict'; entry: DedupEntry }

export interface DedupOptions {
  maxEntries?: number
  maxBytes?: number
}

// Per-entry bookkeeping beyond the payload and the id (object, Map slot), roughly.
const ENTRY_OVERHEAD = 160

export class DedupCache {
  private readonly entries = new Map<string, DedupEntry>()
  /**
   * Entries in insertion order, from `head` on, dropped ones included until passed (they are skipped).
   * Eviction reads from here, not from the Map: a Map iterated from its start walks over every slot
   * its deletions left, which made eviction a fifth of the emulator's request time under load.
   */
  private order: Array<DedupEntry | undefined> = []
  private head = 0
  private readonly maxEntries: number
  private readonly maxBytes: number
  private bytes = 0

  constructor(options: DedupOptions = {}) {
    this.maxEntries = options.maxEntries ?? 100_000
    this.maxBytes = options.maxBytes ?? 64 * 1024 * 1024
  }

  static idOf(responseTopic: string, correlationData: Buffer): string {
    // A topic name cannot contain U+0000, so the separator is unambiguous.
    return `${responseTopic}\u0000${correlationData.toString('latin1')}`
  }

  get size(): number {
    return this.entries.size
  }

  lookup(id: string, request: RequestPrint, now: number): Lookup {
    const entry = this.entries.get(id)
    if (!entry) return { state: 'new' }
    if (entry.expiresAt <= now) {
      this.drop(entry)
      return { state: 'new' }
    }
    if (!entry.request.equals(request)) return { state: 'conflict', entry }
    return entry.done ? { state: 'done', entry } : { state: 'pending', entry }
  }

  /** Records that a request is being executed; evicts what has expired or no longer fits. */
  begin(id: string, request: RequestPrint, expiresAt: number, now: number): DedupEntry {
    const entry: DedupEntry = {
      id,
      request,
      expiresAt,
      answer: null,
      waiters: null,
      done: false,
      bytes: ENTRY_OVERHEAD + id.length + request.bytes,
    }
    const replaced = this.entries.get(id)
    if (replaced) this.drop(replaced)
    this.entries.set(id, entry)
    this.order.push(entry)
    this.bytes += entry.bytes
    this.evict(now)
    return entry
  }

  /** Puts back an answered entry from the journal, if it has not expired. */
  restore(id: string, request: RequestPrint, expiresAt: number, answer: CachedAnswer, now: number): void {
    if (expiresAt <= now) return
    const entry = this.begin(id, request, expiresAt, now)
    this.complete(entry, answer)
  }

  /** Calls `waiter` with the answer once the entry's request has one (null: it got none). */
  whenAnswered(entry: DedupEntry, waiter: (answer: CachedAnswer | null) => void): void {
    if (entry.done) return waiter(entry.answer)
    ;(entry.waiters ??= []).push(waiter)
  }

  complete(entry: DedupEntry, answer: CachedAnswer | null): void {
    entry.done = true
    entry.answer = answer
    if (this.entries.get(entry.id) === entry) {
      if (answer) {
        entry.bytes += answer.payload.length
        this.bytes += answer.payload.length
      } else {
        // Nothing to replay: a re-send is executed as a new request.
        this.drop(entry)
      }
    }
    const waiters = entry.waiters
    entry.waiters = null
    if (waiters) for (const w of waiters) w(answer)
  }

  /** Drops from the oldest on: what has expired, and whatever no longer fits the budget. */
  private evict(now: number): void {
    const order = this.order
    while (this.head < order.length) {
      const entry = order[this.head]!
      if (this.entries.get(entry.id) === entry) {
        const overBudget = this.entries.size > this.maxEntries || this.bytes > this.maxBytes
        if (!overBudget && entry.expiresAt > now) break
        this.drop(entry)
      }
      order[this.head++] = undefined
    }
    // Passed slots go once they are half the array; dropped entries behind one that stays, once they
    // outnumber the live ones: each compaction copies fewer slots than were added since the last.
    if (this.head >= 256 && this.head * 2 >= order.length) {
      this.order = order.slice(this.head)
      this.head = 0
    } else if (order.length - this.head > 2 * this.entries.size + 256) {
      this.order = order.slice(this.head).filter((e) => e !== undefined && this.entries.get(e.id) === e)
      this.head = 0
    }
  }

  private drop(entry: DedupEntry): void {
    if (this.entries.get(entry.id) !== entry) return
    this.entries.delete(entry.id)
    this.bytes -= entry.bytes
  }
}

import { Hlc, type HybridLogicalClock } from '../hlc'
import type { ServiceErrorCode } from '../errors'
import { ExpiryHeap } from './expiry-heap'

/**
 * The key-value state of the emulator: records, versions, fencing tokens and expiry. Pure: no MQTT,
 * no files. Changes are reported through `onChange`, synchronously and in the order they happen,
 * which is what notifications and persistence rely on.
 */

export type SetCondition = 'always' | 'NX' | 'NEX'

export interface StoredRecord {
  /** A Buffer that owns its bytes (never a view into a network read). */
  value: Buffer
  version: Hlc
  fencingToken: Hlc | null
  /** Wall-clock ms after which the key no longer exists; 0 for never. */
  expiresAt: number
  /** Whether the record is in the persistence log. */
  persisted: boolean
}

export type StoreChange =
  | { kind: 'set'; key: Buffer; record: StoredRecord; wasPersisted: boolean }
  | { kind: 'delete'; key: Buffer; version: Hlc; cause: 'del' | 'vdel' | 'expired'; wasPersisted: boolean }

export interface WriteOptions {
  /** `__ft` of the request, already parsed and checked for drift. */
  fencingToken?: Hlc | null
}

export interface SetOptions extends WriteOptions {
  condition?: SetCondition
  /** Milliseconds from now; undefined for no expiry. */
  expiryMs?: number
  persist?: boolean
}

export type SetOutcome = { kind: 'applied'; version: Hlc } | { kind: 'not-applied'; version: Hlc } | { kind: 'error'; code: ServiceErrorCode }
export type DeleteOutcome =
  | { kind: 'deleted'; version: Hlc }
  | { kind: 'missing' }
  | { kind: 'mismatch'; version: Hlc }
  | { kind: 'error'; code: ServiceErrorCode }

export interface Timers {
  set(fn: () => void, ms: number): unknown
  clear(handle: unknown): void
}

export interface StoreOptions {
  /** Mints every version; its node id is the service's. */
  clock: HybridLogicalClock
  /** Wall clock in ms for expiry; the clock's own by default is Date.now. Inject with the clock's for tests. */
  now?: () => number
  /** Key quota; unlimited when undefined. */
  maxKeys?: number
  onChange?: (change: StoreChange) => void
  /** How the one expiry timer is armed; injectable for tests. */
  timers?: Timers
}

// setTimeout takes at most a signed 32-bit delay; later deadlines re-arm when the timer fires.
const MAX_TIMER_MS = 0x7fffffff

const realTimers: Timers = {
  set: (fn, ms) => {
    const t = setTimeout(fn, ms)
    t.unref()
    return t
  },
  clear: (handle) => clearTimeout(handle as NodeJS.Timeout),
}

export class Store {
  /** Keyed by the latin1 string of the key bytes: one byte per character, so binary keys are exact and compact. */
  private readonly records = new Map<string, StoredRecord>()
  private readonly expiry = new ExpiryHeap()
  private readonly clock: HybridLogicalClock
  private readonly now: () => number
  private readonly timers: Timers
  private readonly maxKeys: number
  private onChange: (change: StoreChange) => void
  private timer: unknown = null
  private timerDeadline = 0
  private closed = false

  constructor(options: StoreOptions) {
    this.clock = options.clock
    this.now = options.now ?? Date.now
    this.timers = options.timers ?? realTimers
    this.maxKeys = options.maxKeys ?? Infinity
    this.onChange = options.onChange ?? (() => {})
  }

  /** Replaces the change listener (the service wires it after replaying persistence). */
  setListener(onChange: (change: StoreChange) => void): void {
    this.onChange = onChange
  }

  get size(): number {
    return this.records.size
  }

  get(key: Buffer): StoredRecord | null {
    return this.live(key.toString('latin1'))
  }

  set(key: Buffer, value: Buffer, options: SetOptions = {}): SetOutcome {
    const id = key.toString('latin1')
    const existing = this.live(id)
    const token = options.fencingToken ?? null
    const fenced = checkFence(existing, token)
    if (fenced) return { kind: 'error', code: fenced }
    const condition = options.condition ?? 'always'
    if (existing) {
      if (condition === 'NX') return { kind: 'not-applied', version: existing.version }
      if (condition === 'NEX' && !existing.value.equals(value)) return { kind: 'not-applied', version: existing.version }
    } else if (this.records.size >= this.maxKeys) {
      // Keys past their deadline still count until collected; collect before refusing.
      this.expireDue()
      if (this.records.size >= this.maxKeys) return { kind: 'error', code: 'QuotaExceeded' }
    }
    const version = this.clock.tick()
    const expiresAt = options.expiryMs !== undefined ? this.now() + options.expiryMs : 0
    const record: StoredRecord = {
      value: own(value),
      version,
      fencingToken: newerToken(existing?.fencingToken ?? null, token),
      expiresAt,
      persisted: options.persist === true,
    }
    this.records.set(id, record)
    if (expiresAt !== 0) this.track(id, expiresAt)
    this.onChange({ kind: 'set', key, record, wasPersisted: existing?.persisted ?? false })
    return { kind: 'applied', version }
  }

  del(key: Buffer, options: WriteOptions = {}): DeleteOutcome {
    const id = key.toString('latin1')
    const existing = this.live(id)
    if (!existing) return { kind: 'missing' }
    const fenced = checkFence(existing, options.fencingToken ?? null)
    if (fenced) return { kind: 'error', code: fenced }
    return { kind: 'deleted', version: this.remove(id, existing, 'del') }
  }

  vdel(key: Buffer, value: Buffer, options: WriteOptions = {}): DeleteOutcome {
    const id = key.toString('latin1')
    const existing = this.live(id)
    if (!existing) return { kind: 'missing' }
    const fenced = checkFence(existing, options.fencingToken ?? null)
    if (fenced) return { kind: 'error', code: fenced }
    if (!existing.value.equals(value)) return { kind: 'mismatch', version: existing.version }
    return { kind: 'deleted', version: this.remove(id, existing, 'vdel') }
  }

  /**
   * Puts a record back as it was (persistence replay): no version is minted, no change is reported.
   * A record already past its deadline is not loaded.
   */
  load(key: Buffer, record: StoredRecord): void {
    const id = key.toString('latin1')
    if (record.expiresAt !== 0 && record.expiresAt <= this.now()) {
      this.records.delete(id)
      return
    }
    this.records.set(id, { ...record, value: own(record.value) })
    if (record.expiresAt !== 0) this.track(id, record.expiresAt)
  }

  /** Forgets a key without a trace (persistence replay of a deletion). */
  unload(key: Buffer): void {
    this.records.delete(key.toString('latin1'))
  }

  /** Every live record; for snapshots. */
  *entries(): IterableIterator<[Buffer, StoredRecord]> {
    const now = this.now()
    for (const [id, record] of this.records) {
      if (record.expiresAt === 0 || record.expiresAt > now) yield [Buffer.from(id, 'latin1'), record]
    }
  }

  /** Deletes every key whose deadline has passed, reporting each; arms the timer for the next one. */
  expireDue(): void {
    const now = this.now()
    for (;;) {
      const top = this.expiry.peek()
      if (!top || top.deadline > now) break
      this.expiry.pop()
      const record = this.records.get(top.id)
      // Entries left behind by a re-SET or a delete are skipped here rather than searched for earlier.
      if (record && record.expiresAt === top.deadline) this.remove(top.id, record, 'expired')
    }
    this.arm()
  }

  close(): void {
    this.closed = true
    if (this.timer !== null) this.timers.clear(this.timer)
    this.timer = null
  }

  /** The record if it exists and has not expired; an expired one is deleted on the spot. */
  private live(id: string): StoredRecord | null {
    const record = this.records.get(id)
    if (!record) return null
    if (record.expiresAt !== 0 && record.expiresAt <= this.now()) {
      this.remove(id, record, 'expired')
      return null
    }
    return record
  }

  private remove(id: string, record: StoredRecord, cause: 'del' | 'vdel' | 'expired'): Hlc {
    this.records.delete(id)
    const version = this.clock.tick()
    this.onChange({ kind: 'delete', key: Buffer.from(id, 'latin1'), version, cause, wasPersisted: record.persisted })
    return version
  }

  private track(id: string, deadline: number): void {
    this.expiry.push(deadline, id)
    if (this.expiry.size > 2 * this.records.size + 1024) {
      // Renewals leave stale entries behind; rebuild from the records before they dominate.
      this.expiry.rebuild(liveDeadlines(this.records))
    }
    this.arm()
  }

  private arm(): void {
    if (this.closed) return
    const top = this.expiry.peek()
    if (!top) {
      if (this.timer !== null) this.timers.clear(this.timer)
      this.timer = null
      return
    }
    if (this.timer !== null && this.timerDeadline === top.deadline) return
    if (this.timer !== null) this.timers.clear(this.timer)
    this.timerDeadline = top.deadline
    const delay = Math.min(Math.max(0, top.deadline - this.now()), MAX_TIMER_MS)
    this.timer = this.timers.set(() => {
      this.timer = null
      this.expireDue()
    }, delay)
  }
}

function* liveDeadlines(records: Map<string, StoredRecord>): IterableIterator<{ deadline: number; id: string }> {
  for (const [id, r] of records) if (r.expiresAt !== 0) yield { deadline: r.expiresAt, id }
}

/** The fencing rules of the service (spec section 4). */
function checkFence(existing: StoredRecord | null, token: Hlc | null): ServiceErrorCode | null {
  const stored = existing?.fencingToken
  if (!stored) return null
  if (!token) return 'MissingFencingToken'
  if (Hlc.compare(token, stored) < 0) return 'FencingTokenLowerVersion'
  return null
}

function newerToken(stored: Hlc | null, token: Hlc | null): Hlc | null {
  if (!stored) return token
  if (!token) return stored
  return Hlc.compare(token, stored) > 0 ? token : stored
}

/**
 * A copy that owns exactly its bytes. Payloads arrive as views into larger socket reads; keeping
 * the view would keep the whole read alive for as long as the key lives. Small values are not
 * copied into Node's shared pool either: a view into the pool keeps its whole slab (64 KiB on
 * Node 24) alive, and values written at different times land in different slabs, so a store of
 * small keys held some 8 KB per key (measured: 5,000 keys, 40 MB); a standalone ArrayBuffer
 * costs a few hundred bytes of bookkeeping.
 */
function own(bytes: Buffer): Buffer {
  if (bytes.byteOffset === 0 && bytes.buffer.byteLength === bytes.length) return bytes
  const copy = Buffer.allocUnsafeSlow(bytes.length)
  bytes.copy(copy)
  return copy
}

import { Hlc, type HybridLogicalClock } from '../../hlc'
import type { ServiceErrorCode } from '../../diagnostics/errors'
import type { SetCondition } from '../../protocol'
import { ExpiryHeap } from './expiry-heap'

/**
 * The key-value state of the emulator: records, versions, fencing tokens and expiry. Pure: no MQTT,
 * no files. Changes are reported through `onChange`, synchronously and in the order they happen,
 * which is what notifications and persistence rely on.
 */

export interface StoredRecord {
  /**
   * The value's bytes, never a view into a network read. Read from the store, a small value is a
   * fresh Buffer made for the reader (see `PackedRecord`): use it, don't keep it for long.
   */
  readonly value: Buffer
  readonly version: Hlc
  readonly fencingToken: Hlc | null
  /** Wall-clock ms after which the key no longer exists; 0 for never. */
  readonly expiresAt: number
  /** Whether the record is in the persistence journal. */
  readonly persisted: boolean
}

export type KeyChange =
  /** `value` is the value as written (the record may hold it in another form): notifications are made from it. */
  | { kind: 'set'; key: Buffer; value: Buffer; record: StoredRecord; wasPersisted: boolean }
  | { kind: 'delete'; key: Buffer; version: Hlc; cause: 'del' | 'vdel' | 'expired'; wasPersisted: boolean }

export interface WriteOptions {
  /** `__ft` of the request, already parsed and checked for drift. */
  fencingToken?: Hlc | null
  /**
   * What the clock read after merging the request's `__ts`: the version of the write, so that the
   * HLC receive rule is applied once. A fresh tick instead when the clock has moved on since.
   */
  received?: Hlc | null
}

export interface SetOptions extends WriteOptions {
  condition?: SetCondition
  /** Milliseconds from now; undefined for no expiry. */
  expiryMs?: number
  persist?: boolean
}

/** The bound that refused a write, by its option's name (the CLI's flag is `--max-keys` for `maxKeys`, and so on). */
export type QuotaLimit = 'maxKeys' | 'maxBytes' | 'maxValueBytes' | 'maxKeyBytes'

/** A write refused by a bound: which, the bound, and what the write would have made of it. */
export interface QuotaRefusal {
  limit: QuotaLimit
  max: number
  /** The key's or the value's bytes, the keys held, or the bytes the store would hold with the write. */
  needed: number
}

/** `persistent`: the change is one persistence keeps (the key is, or was, persisted). */
export type SetOutcome =
  | { kind: 'applied'; version: Hlc; persistent: boolean }
  | { kind: 'notApplied'; version: Hlc }
  | { kind: 'error'; code: ServiceErrorCode; quota?: QuotaRefusal }
export type DeleteOutcome =
  | { kind: 'deleted'; version: Hlc; persistent: boolean }
  | { kind: 'missing' }
  | { kind: 'mismatch'; version: Hlc }
  | { kind: 'error'; code: ServiceErrorCode }

export interface Timers {
  set(fn: () => void, ms: number): unknown
  clear(handle: unknown): void
}

export interface KeyspaceOptions {
  /** Mints every version; its node id is the service's. */
  clock: HybridLogicalClock
  /** Wall clock in ms for expiry; the clock's own by default is Date.now. Inject with the clock's for tests. */
  now?: () => number
  /** Key quota; unlimited when undefined. */
  maxKeys?: number
  /** Byte quota over every key and value and their bookkeeping (RECORD_OVERHEAD_BYTES); unlimited when undefined. */
  maxBytes?: number
  /** The largest value a SET may store; unlimited when undefined. */
  maxValueBytes?: number
  /** The longest key a SET may store; unlimited when undefined. */
  maxKeyBytes?: number
  onChange?: (change: KeyChange) => void
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

/**
 * Values shorter than this are kept as latin1 strings: one byte per character, exact for any bytes,
 * 16 bytes of header in the heap. A Buffer of its own costs some 200 bytes of ArrayBuffer
 * bookkeeping besides its bytes, which doubles a key of 100 bytes; past a few KiB that is noise,
 * and a copy per read is not.
 */
const SMALL_VALUE_BYTES = 4096

/**
 * What the byte quota counts for one key beyond its key and value bytes: the map entry, the record,
 * the key string's header. Measured on Node.js 24 with a million keys of a few bytes: 110 bytes of
 * heap per key after a full GC, 180 bytes of RSS.
 */
export const RECORD_OVERHEAD_BYTES = 160
/**
 * And for a key with an expiry or a fencing token: its own attributes, its version object and its
 * entry in the expiry heap. Measured the same way: 300 bytes of heap per key in all, 430 of RSS.
 */
export const OWN_ATTRIBUTES_OVERHEAD_BYTES = 240

/**
 * What a record holds besides its value and version numbers. Records with no fencing token and no
 * expiry (most keys) share one per node id and persistence flag, so they pay nothing for these
 * fields; a record with either has its own, which also keeps its version object as it came.
 */
class Attributes {
  constructor(
    readonly nodeId: string,
    /** The version as minted or loaded, on a record's own attributes; null on shared ones. */
    readonly version: Hlc | null,
    readonly fencingToken: Hlc | null,
    readonly expiresAt: number,
    readonly persisted: boolean,
  ) {}
}

/**
 * One key's record, as compact as the heap allows (a million keys are a target): the value as a
 * latin1 string when small, the version as two numbers (its node id is in the attributes). The
 * `StoredRecord` fields are built when read, so a GET makes one Buffer and one `Hlc`.
 */
class PackedRecord implements StoredRecord {
  constructor(
    private readonly data: string | Buffer,
    private readonly timestamp: number,
    private readonly counter: number,
    readonly attributes: Attributes,
  ) {}

  get value(): Buffer {
    const data = this.data
    return typeof data === 'string' ? Buffer.from(data, 'latin1') : data
  }

  get version(): Hlc {
    return this.attributes.version ?? new Hlc(this.timestamp, this.counter, this.attributes.nodeId)
  }

  get fencingToken(): Hlc | null {
    return this.attributes.fencingToken
  }

  get expiresAt(): number {
    return this.attributes.expiresAt
  }

  get persisted(): boolean {
    return this.attributes.persisted
  }

  /** Value bytes. */
  get size(): number {
    return this.data.length
  }

  /** What the byte quota counts for the record with its key of `keyBytes`. */
  cost(keyBytes: number): number {
    return recordCost(keyBytes, this.data.length, this.attributes.version !== null)
  }

  /** Whether the value is exactly these bytes, without making a Buffer of it. */
  holds(bytes: Buffer): boolean {
    const data = this.data
    return typeof data === 'string'
      ? bytes.length === data.length && bytes.toString('latin1') === data
      : data.equals(bytes)
  }
}

export class Keyspace {
  /** Keyed by the latin1 string of the key bytes: one byte per character, so binary keys are exact and compact. */
  private readonly records = new Map<string, PackedRecord>()
  /**
   * The shared attributes by node id: [not persisted, persisted]. Node ids are this clock's and those of restored
   * versions, a handful.
   */
  private readonly shared = new Map<string, [Attributes, Attributes]>()
  private readonly expiry = new ExpiryHeap()
  private readonly clock: HybridLogicalClock
  private readonly now: () => number
  private readonly timers: Timers
  private readonly maxKeys: number
  private readonly maxBytes: number
  private readonly maxValueBytes: number
  private readonly maxKeyBytes: number
  /** Key and value bytes and bookkeeping of every record held (expired ones too, until collected). */
  private heldBytes = 0
  /** Records put or dropped so far. */
  private changes = 0
  private onChange: (change: KeyChange) => void
  private timer: unknown = null
  private timerDeadline = 0
  private closed = false
  /** The last version minted: a reading is never the version of two changes. */
  private minted: Hlc | null = null

  constructor(options: KeyspaceOptions) {
    this.clock = options.clock
    this.now = options.now ?? Date.now
    this.timers = options.timers ?? realTimers
    this.maxKeys = options.maxKeys ?? Infinity
    this.maxBytes = options.maxBytes ?? Infinity
    this.maxValueBytes = options.maxValueBytes ?? Infinity
    this.maxKeyBytes = options.maxKeyBytes ?? Infinity
    this.onChange = options.onChange ?? (() => {})
  }

  /** Replaces the change listener (the service wires it after replaying persistence). */
  setListener(onChange: (change: KeyChange) => void): void {
    this.onChange = onChange
  }

  get size(): number {
    return this.records.size
  }

  /** A number that changes whenever a record is put or dropped: equal readings mean the same records. */
  get generation(): number {
    return this.changes
  }

  /** The longest key a SET may store (Infinity for no bound). */
  get keyLimit(): number {
    return this.maxKeyBytes
  }

  /** Key and value bytes held, with their bookkeeping (what the byte quota counts). */
  get bytes(): number {
    return this.heldBytes
  }

  get(key: Buffer): StoredRecord | null {
    return this.live(key.toString('latin1'))
  }

  set(key: Buffer, value: Buffer, options: SetOptions = {}): SetOutcome {
    if (key.length > this.maxKeyBytes) return quota('maxKeyBytes', this.maxKeyBytes, key.length)
    const id = key.toString('latin1')
    const existing = this.live(id)
    const token = options.fencingToken ?? null
    const fenced = checkFence(existing, token)
    if (fenced) return { kind: 'error', code: fenced }
    const condition = options.condition ?? 'always'
    if (existing) {
      if (condition === 'NX') return { kind: 'notApplied', version: existing.version }
      if (condition === 'NEX' && !existing.holds(value)) return { kind: 'notApplied', version: existing.version }
    } else if (this.records.size >= this.maxKeys) {
      // Keys past their deadline still count until collected; collect before refusing.
      this.expireDue()
      if (this.records.size >= this.maxKeys) return quota('maxKeys', this.maxKeys, this.records.size + 1)
    }
    if (value.length > this.maxValueBytes) return quota('maxValueBytes', this.maxValueBytes, value.length)
    const fencingToken = newerToken(existing?.fencingToken ?? null, token)
    const ownAttributes = fencingToken !== null || options.expiryMs !== undefined
    const growth = recordCost(id.length, value.length, ownAttributes) - (existing ? existing.cost(id.length) : 0)
    if (growth > 0 && this.heldBytes + growth > this.maxBytes) {
      this.expireDue()
      if (this.heldBytes + growth > this.maxBytes) return quota('maxBytes', this.maxBytes, this.heldBytes + growth)
    }
    const version = this.mint(options.received)
    const expiresAt = options.expiryMs !== undefined ? this.now() + options.expiryMs : 0
    const record = this.slot(value, version, fencingToken, expiresAt, options.persist === true)
    this.put(id, record)
    if (expiresAt !== 0) this.track(id, expiresAt)
    const wasPersisted = existing?.persisted ?? false
    this.onChange({ kind: 'set', key, value, record, wasPersisted })
    return { kind: 'applied', version, persistent: record.persisted || wasPersisted }
  }

  del(key: Buffer, options: WriteOptions = {}): DeleteOutcome {
    const id = key.toString('latin1')
    const existing = this.live(id)
    if (!existing) return { kind: 'missing' }
    const fenced = checkFence(existing, options.fencingToken ?? null)
    if (fenced) return { kind: 'error', code: fenced }
    return {
      kind: 'deleted',
      persistent: existing.persisted,
      version: this.remove(id, existing, 'del', options.received),
    }
  }

  vdel(key: Buffer, value: Buffer, options: WriteOptions = {}): DeleteOutcome {
    const id = key.toString('latin1')
    const existing = this.live(id)
    if (!existing) return { kind: 'missing' }
    const fenced = checkFence(existing, options.fencingToken ?? null)
    if (fenced) return { kind: 'error', code: fenced }
    if (!existing.holds(value)) return { kind: 'mismatch', version: existing.version }
    return {
      kind: 'deleted',
      persistent: existing.persisted,
      version: this.remove(id, existing, 'vdel', options.received),
    }
  }

  /**
   * Puts a record back as it was (persistence replay): no version is minted, no change is reported.
   * A record already past its deadline is not loaded.
   */
  load(key: Buffer, record: StoredRecord): void {
    const id = key.toString('latin1')
    if (record.expiresAt !== 0 && record.expiresAt <= this.now()) {
      this.drop(id)
      return
    }
    this.put(id, this.slot(record.value, record.version, record.fencingToken, record.expiresAt, record.persisted))
    if (record.expiresAt !== 0) this.track(id, record.expiresAt)
  }

  /** Forgets a key without a trace (persistence replay of a deletion). */
  unload(key: Buffer): void {
    this.drop(key.toString('latin1'))
  }

  /** Every live record; for snapshots. */
  *entries(): IterableIterator<[Buffer, StoredRecord]> {
    const now = this.now()
    for (const [id, record] of this.records) {
      if (record.expiresAt === 0 || record.expiresAt > now) yield [Buffer.from(id, 'latin1'), record]
    }
  }

  /**
   * Every live record with its key as a latin1 string (one character per byte), made without a
   * Buffer per key: for scans over the whole store (the admin key browser). Survives changes
   * between steps (a Map iterator does), so a caller may pause in between.
   */
  *scan(): IterableIterator<[string, StoredRecord]> {
    for (const [id, record] of this.records) {
      if (record.expiresAt === 0 || record.expiresAt > this.now()) yield [id, record]
    }
  }

  /**
   * Every key as a latin1 string, live or past its deadline, in the store's order: the cheapest walk
   * (no record read, no clock read per key), for SCAN, which asks `has` only of the keys it matches.
   * Survives changes between steps as a Map iterator does.
   */
  ids(): IterableIterator<string> {
    return this.records.keys()
  }

  /** Whether the key (a latin1 string) exists and has not expired; an expired one is deleted on the spot. */
  has(id: string): boolean {
    return this.live(id) !== null
  }

  /** The record of a key given as a latin1 string (from `ids`), if it exists and has not expired. */
  recordOf(id: string): StoredRecord | null {
    return this.live(id)
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

  private slot(
    value: Buffer,
    version: Hlc,
    fencingToken: Hlc | null,
    expiresAt: number,
    persisted: boolean,
  ): PackedRecord {
    const data = value.length < SMALL_VALUE_BYTES ? value.toString('latin1') : own(value)
    let attributes: Attributes
    if (fencingToken === null && expiresAt === 0) {
      let pair = this.shared.get(version.nodeId)
      if (!pair) {
        pair = [
          new Attributes(version.nodeId, null, null, 0, false),
          new Attributes(version.nodeId, null, null, 0, true),
        ]
        this.shared.set(version.nodeId, pair)
      }
      attributes = pair[persisted ? 1 : 0]
    } else {
      attributes = new Attributes(version.nodeId, version, fencingToken, expiresAt, persisted)
    }
    return new PackedRecord(data, version.timestamp, version.counter, attributes)
  }

  /** The record if it exists and has not expired; an expired one is deleted on the spot. */
  private live(id: string): PackedRecord | null {
    const record = this.records.get(id)
    if (!record) return null
    if (record.expiresAt !== 0 && record.expiresAt <= this.now()) {
      this.remove(id, record, 'expired')
      return null
    }
    return record
  }

  /** Every record goes in and out through these two, which keep the byte count. */
  private put(id: string, record: PackedRecord): void {
    const old = this.records.get(id)
    this.heldBytes += record.cost(id.length) - (old ? old.cost(id.length) : 0)
    this.records.set(id, record)
    this.changes++
  }

  private drop(id: string): void {
    const old = this.records.get(id)
    if (!old) return
    this.heldBytes -= old.cost(id.length)
    this.records.delete(id)
    this.changes++
  }

  private remove(id: string, record: PackedRecord, cause: 'del' | 'vdel' | 'expired', received?: Hlc | null): Hlc {
    this.drop(id)
    const version = this.mint(received)
    this.onChange({ kind: 'delete', key: Buffer.from(id, 'latin1'), version, cause, wasPersisted: record.persisted })
    return version
  }

  /** The reading a request's `__ts` gave the clock, if nothing has moved the clock since; else a tick. */
  private mint(received: Hlc | null | undefined): Hlc {
    const version =
      received && received === this.clock.current && received !== this.minted ? received : this.clock.tick()
    this.minted = version
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

function* liveDeadlines(records: Map<string, PackedRecord>): IterableIterator<{ deadline: number; id: string }> {
  for (const [id, r] of records) if (r.expiresAt !== 0) yield { deadline: r.expiresAt, id }
}

function recordCost(keyBytes: number, valueBytes: number, ownAttributes: boolean): number {
  return keyBytes + valueBytes + RECORD_OVERHEAD_BYTES + (ownAttributes ? OWN_ATTRIBUTES_OVERHEAD_BYTES : 0)
}

function quota(limit: QuotaLimit, max: number, needed: number): SetOutcome {
  return { kind: 'error', code: 'QuotaExceeded', quota: { limit, max, needed } }
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
 * A copy that owns exactly its bytes, for values too large to keep as strings. Payloads arrive as
 * views into larger socket reads; keeping the view would keep the whole read alive for as long as
 * the key lives. Nor is a value ever kept as a view into Node's shared pool: such a view keeps its
 * whole slab alive, and values written at different times land in different slabs, so a store of
 * small keys once held some 8 KB per key (measured: 5,000 keys, 40 MB). Small values are strings
 * (`SMALL_VALUE_BYTES`), which own their bytes by construction.
 */
function own(bytes: Buffer): Buffer {
  if (bytes.byteOffset === 0 && bytes.buffer.byteLength === bytes.length) return bytes
  const copy = Buffer.allocUnsafeSlow(bytes.length)
  bytes.copy(copy)
  return copy
}

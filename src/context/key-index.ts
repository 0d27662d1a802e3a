// The package's public API (src/index): the lock lives wherever the client's public API puts it.
import { type Observation, type StateStoreClient } from '../client'
import { TimeoutError } from '../errors'
import { Hlc } from '../hlc'
import { Lock } from '../locks'
import type { ResolvedConfig } from './config'
import type { Limiter } from './limiter'

/** Scope → its top-level keys. */
export type IndexState = Map<string, Set<string>>

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

const RETRY_MS = 1000

/** How long one lock round goes on checking batch after batch before it lets another runtime in. */
const HOLD_MS = 250

/** How long a lock round waits for more checks once it has none left, before it releases the lock. */
const LINGER_MS = 5

/** Scope → key → whether it exists: the changes not folded into the buckets yet, which override them. */
type Delta = Map<string, Map<string, boolean>>
type DeltaChange = [scope: string, top: string, exists: boolean]

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

/** What a runtime with the cache knows of a key from its own write and the key's notifications. */
export interface Known {
  exists: boolean
  /** The service's version of what `exists` describes. */
  version: Hlc
}

interface Pending extends IndexEntry {
  /** Read the key under the lock even when the runtime knows it (asked by a notification of someone else's change). */
  verify: boolean
  waiters: Array<(err?: Error) => void>
}

/**
 * The list of keys per scope, because the service has no key listing (docs/context.md). It is
 * spread over BUCKETS index keys, `<prefix>#keys/<00..ff>`, each `{"<scope>": ["<key>", …]}`, plus
 * the delta `<prefix>#keys/delta`, `{"<scope>": {"<key>": true|false}}`, whose entries override the
 * buckets': a batch of checks rewrites the delta alone, and once it holds DELTA_LIMIT entries they
 * are folded into the buckets. Every change is made under one lock (`<prefix>#lock`, a lease whose
 * fencing token guards every index write): read the delta, read each key in the batch itself and
 * make the delta say whether it exists. So the index is recomputed from the keys, not from what a
 * runtime believes, and two runtimes updating it at once serialise on the lock instead of
 * overwriting each other. Checks wait in a batch, so a burst of new keys costs one lock round, not
 * one each.
 */
export class KeyIndex {
  private readonly lock: Lock
  /** Every bucket merged, the delta applied: what keys() answers from. */
  current: IndexState = new Map()
  private readonly buckets: IndexState[] = Array.from({ length: BUCKETS }, (): IndexState => new Map())
  private delta: Delta = new Map()
  /** Our delta write in flight, recognised by its bytes when its notification comes back. */
  private ownDelta: { bytes: Buffer; changes: DeltaChange[] } | null = null
  /** Per bucket and (at BUCKETS) the delta, bumped by every notification: a read older than one is dropped. */
  private readonly seen: number[] = new Array<number>(BUCKETS + 1).fill(0)
  private readonly pending = new Map<string, Pending>()
  private running: Promise<void> | null = null
  /** Set while a lock round lingers for more checks (lull()): ends the wait early. */
  private wake: (() => void) | null = null
  private timer: NodeJS.Timeout | null = null
  private scheduled = false
  private readonly observations: Array<Observation | undefined> = []
  private closing = false

  constructor(
    private readonly client: StateStoreClient,
    private readonly config: ResolvedConfig,
    private readonly limiter: Limiter,
    /** With the cache: entries others added or removed, from the index notifications. */
    private readonly onChange: (added: IndexEntry[], removed: IndexEntry[]) => void,
    /** With the cache: what the runtime knows of a key it follows (null: not known, read it). */
    private readonly known: (scope: string, top: string) => Known | null = () => null,
  ) {
    this.lock = new Lock(client, `${config.prefix}#lock`)
  }

  bucketKey(bucket: number): string {
    return `${this.config.prefix}#keys/${bucket.toString(16).padStart(2, '0')}`
  }

  get deltaKey(): string {
    return `${this.config.prefix}#keys/delta`
  }

  /** The single index key of earlier versions; moved into the buckets by open(). */
  get legacyKey(): string {
    return `${this.config.prefix}#keys`
  }

  /** Reads the whole index; with the cache, follows every bucket and the delta from then on. */
  async open(): Promise<void> {
    if (this.config.cache) {
      // a retry after a failed load observes only the keys not observed yet
      await Promise.all(
        this.indexKeys().map(async (key, i) => {
          this.observations[i] ??= await this.limiter.run(() =>
            this.client.observe(key, (n) => {
              this.seen[i]! += 1
              this.received(i, n.operation === 'SET' ? n.value : null, true)
            }),
          )
        }),
      )
    }
    await this.migrateLegacy()
    await this.read()
  }

  /** Reads every bucket and the delta (those changed meanwhile by a notification keep what it said). */
  async read(): Promise<IndexState> {
    await Promise.all(
      this.indexKeys().map(async (key, i) => {
        const seen = this.seen[i]
        const { value } = await this.limiter.run(() => this.client.get(key))
        if (this.seen[i] === seen) this.received(i, value, false)
      }),
    )
    return this.current
  }

  /** The buckets' keys, then the delta's: position i is what `seen[i]` counts. */
  private indexKeys(): string[] {
    return [...this.buckets.map((_, i) => this.bucketKey(i)), this.deltaKey]
  }

  /** What index key `i` (a bucket, or at BUCKETS the delta) now holds, read or notified. */
  private received(i: number, value: Buffer | null, notify: boolean): void {
    if (i < BUCKETS) return this.replace(i, this.parse(value, i), notify)
    const own = this.ownDelta
    this.ownDelta = null
    // our own write comes back: apply the batch's changes instead of parsing the whole delta again
    if (own && value?.equals(own.bytes)) this.applyDelta(own.changes, notify)
    else this.replaceDelta(this.parseDelta(value), notify)
  }

  get busy(): boolean {
    return this.running !== null || this.pending.size > 0
  }

  /**
   * Asks for the key's entry to be made right, unless (with the cache) the index already agrees
   * with `exists`. Resolves once the index says what the key holds, for every runtime that reads it.
   * `verify`: read the key under the lock even if the runtime knows what it holds.
   */
  check(scope: string, top: string, exists: boolean, verify = true): Promise<void> {
    if (this.config.cache && (this.current.get(scope)?.has(top) ?? false) === exists) return Promise.resolve()
    return new Promise<void>((resolve, reject) => {
      const id = `${scope}/${top}`
      const waiter = (err?: Error) => (err ? reject(err) : resolve())
      const entry = this.pending.get(id)
      if (entry) {
        entry.waiters.push(waiter)
        entry.verify ||= verify
      } else {
        this.pending.set(id, { scope, top, verify, waiters: [waiter] })
      }
      this.schedule()
    })
  }

  private schedule(): void {
    if (this.wake) {
      // the lock round waiting in lull() takes it: one tick of grace gathers a burst
      const wake = this.wake
      setImmediate(wake)
      return
    }
    if (this.running || this.timer || this.scheduled) return
    // one tick of grace gathers a burst into one batch
    this.scheduled = true
    setImmediate(() => {
      this.scheduled = false
      void this.flush()
    })
  }

  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer)
      this.timer = null
    }
    this.running ??= this.run().finally(() => {
      this.running = null
    })
    return this.running
  }

  stopping(): void {
    this.closing = true
  }

  async close(): Promise<void> {
    this.closing = true
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    await Promise.all(this.observations.splice(0).flatMap((o) => (o ? [o.close()] : [])))
  }

  private takeBatch(): Pending[] {
    const batch = [...this.pending.values()]
    this.pending.clear()
    return batch
  }

  /**
   * One lock round: takes the lease, reads the delta, and checks batch after batch while checks
   * keep arriving (up to HOLD_MS): under a lease held all along nobody else writes the delta, so a
   * burst pays one acquisition, one release and one read of the delta, then one write per batch.
   */
  private async run(): Promise<void> {
    while (this.pending.size > 0) {
      let batch = this.takeBatch()
      try {
        const acquired = await this.lock.acquire({ timeoutMs: this.config.requestTimeoutMs * 3 })
        try {
          const since = performance.now()
          let delta: Delta | null = null
          for (;;) {
            delta = await this.update(batch, delta, this.lock.lease.fencingToken ?? acquired)
            batch = []
            if (performance.now() - since > HOLD_MS) break
            if (this.pending.size === 0) await this.lull()
            if (this.pending.size === 0) break
            batch = this.takeBatch()
          }
        } finally {
          await this.lock.release().catch(() => {})
        }
      } catch (err) {
        const keys = batch.map((b) => `${b.scope}/${b.top}`)
        const message = err instanceof Error ? err.message : String(err)
        const error = new Error(`state store context ${this.config.prefix}: the key index could not be updated: ${message}`, { cause: err })
        // those waiting hear now; the entries are retried without them
        for (const entry of batch) for (const waiter of entry.waiters.splice(0)) waiter(error)
        if (this.closing || this.client.status.state === 'closed') {
          this.config.logger('error', `state store context ${this.config.prefix}: the key index could not be updated for ${keys.join(', ')}: ${message}`)
          continue
        }
        this.config.logger('warn', `state store context ${this.config.prefix}: updating the key index failed (${message}); retrying`)
        for (const b of batch) if (!this.pending.has(`${b.scope}/${b.top}`)) this.pending.set(`${b.scope}/${b.top}`, { ...b, verify: true })
        this.timer = setTimeout(() => {
          this.timer = null
          void this.flush()
        }, RETRY_MS)
        return
      }
    }
  }

  /**
   * Waits up to LINGER_MS for the next check while the lock is ours: a stream of new keys (each one
   * registered and written before it is checked) then goes on under one lease instead of paying an
   * acquisition, a read of the delta and a release per batch.
   */
  private lull(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wake = null
        resolve()
      }, LINGER_MS)
      const wake = () => {
        if (this.wake !== wake) return // an earlier lull's wake-up, come late
        clearTimeout(timer)
        this.wake = null
        resolve()
      }
      this.wake = wake
    })
  }

  /**
   * Checks a batch under the lock: makes the delta say whether each key exists, then tells those
   * waiting (not after the lease's release too). `held`: the delta as this lock round last left it,
   * or null to read it. Returns the delta as stored now.
   */
  private async update(batch: Pending[], held: Delta | null, fencingToken: Hlc): Promise<Delta> {
    // A key this runtime wrote and follows is not read again: what it knows, sampled under the
    // lock, is what a read would say, unless someone else changes the key before the delta is
    // written; that change's notification (sent before the lock was ours, or during the round)
    // shows as a new version below, and the key is checked again, read this time.
    const knowledge = batch.map((b) => (b.verify ? null : this.known(b.scope, b.top)))
    // `delta` is the round's own copy, changed in place batch after batch (never the followed `this.delta`)
    const [delta, found] = await Promise.all([
      held ?? this.limiter.run(() => this.client.get(this.deltaKey, { timeoutMs: this.leaseLeft() })).then((r) => this.parseDelta(r.value)),
      Promise.all(
        batch.map(
          async ({ scope, top }, i) =>
            knowledge[i]?.exists ?? this.limiter.run(() => this.client.get(`${this.config.prefix}${scope}/${top}`)).then((r) => r.value !== null),
        ),
      ),
    ])
    const changes: DeltaChange[] = []
    batch.forEach(({ scope, top }, i) => {
      const tops = delta.get(scope) ?? new Map<string, boolean>()
      if (tops.get(top) !== found[i]) changes.push([scope, top, found[i]!])
      tops.set(top, found[i]!)
      delta.set(scope, tops)
    })
    if (changes.length > 0) {
      const bytes = Buffer.from(serializeDelta(delta)!)
      // with the cache, the delta's notification brings this (in the service's order)
      if (this.config.cache) this.ownDelta = { bytes, changes }
      await this.writeDelta(bytes, fencingToken)
      if (!this.config.cache) this.applyDelta(changes, false)
    }
    batch.forEach((b, i) => {
      const before = knowledge[i]
      if (!before) return
      const now = this.known(b.scope, b.top)
      if (now && now.exists === before.exists && Hlc.compare(now.version, before.version) === 0) return
      const id = `${b.scope}/${b.top}`
      const entry = this.pending.get(id)
      if (entry) entry.verify = true
      else this.pending.set(id, { scope: b.scope, top: b.top, verify: true, waiters: [] })
    })
    for (const entry of batch) for (const waiter of entry.waiters.splice(0)) waiter()
    if (countDelta(delta) < DELTA_LIMIT) return delta
    await this.fold(delta, fencingToken)
    return new Map()
  }

  /**
   * What is left of the lease, as a request's timeout: a write answered later may have landed after
   * the lease ran out and another holder took over, so it counts as failed (and is checked again).
   */
  private leaseLeft(): number {
    const ms = Math.floor(this.lock.lease.remainingMs)
    if (ms < 1) throw new TimeoutError(this.lock.lease.leaseMs, 'the key index lock')
    return ms
  }

  private async writeDelta(after: Buffer | null, fencingToken: Hlc): Promise<void> {
    if (after === null) await this.limiter.run(() => this.client.del(this.deltaKey, { fencingToken, timeoutMs: this.leaseLeft() }))
    else await this.limiter.run(() => this.client.set(this.deltaKey, after, { fencingToken, persist: this.config.persist, timeoutMs: this.leaseLeft() }))
  }

  /**
   * Moves the delta's entries into their buckets, then empties it (under the lock). Readers see the
   * same list all along: until the delta is emptied its entries override what the buckets say, and
   * a holder that loses its lease midway leaves a delta the next holder folds again.
   */
  private async fold(delta: Delta, fencingToken: Hlc): Promise<void> {
    const byBucket = new Map<number, Array<[string, string, boolean]>>()
    for (const [scope, tops] of delta) {
      for (const [top, exists] of tops) {
        const bucket = bucketOf(scope, top)
        const entries = byBucket.get(bucket) ?? []
        entries.push([scope, top, exists])
        byBucket.set(bucket, entries)
      }
    }
    await Promise.all(
      [...byBucket].map(async ([bucket, entries]) => {
        const key = this.bucketKey(bucket)
        const { value } = await this.limiter.run(() => this.client.get(key, { timeoutMs: this.leaseLeft() }))
        const state = this.parse(value, bucket)
        for (const [scope, top, exists] of entries) mark(state, scope, top, exists)
        const after = serialize(state)
        if (after !== (value?.toString('utf8') ?? null)) {
          if (after === null) await this.limiter.run(() => this.client.del(key, { fencingToken, timeoutMs: this.leaseLeft() }))
          else await this.limiter.run(() => this.client.set(key, after, { fencingToken, persist: this.config.persist, timeoutMs: this.leaseLeft() }))
        }
        if (!this.config.cache) this.replace(bucket, state, false)
      }),
    )
    await this.writeDelta(null, fencingToken)
    if (!this.config.cache) this.replaceDelta(new Map(), false)
  }

  /**
   * Moves the single index of earlier versions into the buckets, under the lock, then deletes it:
   * an upgraded runtime keeps listing (and loading) every key stored before.
   */
  private async migrateLegacy(): Promise<void> {
    if ((await this.client.get(this.legacyKey)).value === null) return
    const acquired = await this.lock.acquire({ timeoutMs: this.config.requestTimeoutMs * 3 })
    try {
      const { value } = await this.client.get(this.legacyKey)
      if (value === null) return // another runtime moved it meanwhile
      const byBucket = new Map<number, IndexEntry[]>()
      for (const [scope, tops] of this.parse(value, -1)) {
        for (const top of tops) {
          const bucket = bucketOf(scope, top)
          byBucket.set(bucket, [...(byBucket.get(bucket) ?? []), { scope, top }])
        }
      }
      const fencingToken = this.lock.lease.fencingToken ?? acquired
      await Promise.all(
        [...byBucket].map(async ([bucket, entries]) => {
          const key = this.bucketKey(bucket)
          const state = this.parse((await this.limiter.run(() => this.client.get(key))).value, bucket)
          for (const { scope, top } of entries) mark(state, scope, top, true)
          await this.limiter.run(() => this.client.set(key, serialize(state)!, { fencingToken, persist: this.config.persist }))
        }),
      )
      await this.client.del(this.legacyKey, { fencingToken })
      this.config.logger('info', `state store context ${this.config.prefix}: moved the key index ${this.legacyKey} into ${this.bucketKey(0)}…${this.bucketKey(BUCKETS - 1)}`)
    } finally {
      await this.lock.release().catch(() => {})
    }
  }

  /** Makes bucket `i` hold `next`, keeping `current` in step; tells onChange what others changed. */
  private replace(i: number, next: IndexState, notify: boolean): void {
    const before = this.buckets[i]!
    this.buckets[i] = next
    const changed: IndexEntry[] = []
    for (const [scope, tops] of next) for (const top of tops) if (!before.get(scope)?.has(top)) changed.push({ scope, top })
    for (const [scope, tops] of before) for (const top of tops) if (!next.get(scope)?.has(top)) changed.push({ scope, top })
    this.refresh(changed, notify)
  }

  /** Makes the delta hold `next`, keeping `current` in step; tells onChange what others changed. */
  private replaceDelta(next: Delta, notify: boolean): void {
    const before = this.delta
    this.delta = next
    const changed: IndexEntry[] = []
    for (const [scope, tops] of next) for (const [top, exists] of tops) if (before.get(scope)?.get(top) !== exists) changed.push({ scope, top })
    for (const [scope, tops] of before) for (const top of tops.keys()) if (!next.get(scope)?.has(top)) changed.push({ scope, top })
    this.refresh(changed, notify)
  }

  /** Applies changes to the followed delta, keeping `current` in step. */
  private applyDelta(changes: DeltaChange[], notify: boolean): void {
    for (const [scope, top, exists] of changes) {
      const tops = this.delta.get(scope) ?? new Map<string, boolean>()
      tops.set(top, exists)
      this.delta.set(scope, tops)
    }
    this.refresh(
      changes.map(([scope, top]) => ({ scope, top })),
      notify,
    )
  }

  /** Brings `current` in step for entries whose bucket or delta entry changed. */
  private refresh(changed: IndexEntry[], notify: boolean): void {
    const added: IndexEntry[] = []
    const removed: IndexEntry[] = []
    for (const entry of changed) {
      const { scope, top } = entry
      const listed = this.delta.get(scope)?.get(top) ?? this.buckets[bucketOf(scope, top)]!.get(scope)?.has(top) ?? false
      if (listed === (this.current.get(scope)?.has(top) ?? false)) continue
      mark(this.current, scope, top, listed)
      ;(listed ? added : removed).push(entry)
    }
    if (notify && !this.closing && (added.length > 0 || removed.length > 0)) this.onChange(added, removed)
  }

  private parse(value: Buffer | null, bucket: number): IndexState {
    const state: IndexState = new Map()
    if (value === null) return state
    const key = bucket < 0 ? this.legacyKey : this.bucketKey(bucket)
    try {
      const json = JSON.parse(value.toString('utf8')) as unknown
      if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new Error('not an object')
      for (const [scope, tops] of Object.entries(json)) {
        if (Array.isArray(tops)) state.set(scope, new Set(tops.filter((t): t is string => typeof t === 'string')))
      }
    } catch (err) {
      this.config.logger('warn', `state store context ${this.config.prefix}: the key index ${key} is not valid JSON (${(err as Error).message}); treating it as empty`)
    }
    return state
  }

  private parseDelta(value: Buffer | null): Delta {
    const delta: Delta = new Map()
    if (value === null) return delta
    try {
      const json = JSON.parse(value.toString('utf8')) as unknown
      if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new Error('not an object')
      for (const [scope, tops] of Object.entries(json as Record<string, unknown>)) {
        if (typeof tops !== 'object' || tops === null || Array.isArray(tops)) continue
        const entries = Object.entries(tops).filter((e): e is [string, boolean] => typeof e[1] === 'boolean')
        if (entries.length > 0) delta.set(scope, new Map(entries))
      }
    } catch (err) {
      this.config.logger('warn', `state store context ${this.config.prefix}: the key index ${this.deltaKey} is not valid JSON (${(err as Error).message}); treating it as empty`)
    }
    return delta
  }
}

function mark(state: IndexState, scope: string, top: string, exists: boolean): void {
  const tops = state.get(scope) ?? new Set<string>()
  if (exists) tops.add(top)
  else tops.delete(top)
  if (tops.size > 0) state.set(scope, tops)
  else state.delete(scope)
}

function serialize(state: IndexState): string | null {
  if (state.size === 0) return null
  const out: Record<string, string[]> = {}
  for (const scope of [...state.keys()].sort()) out[scope] = [...state.get(scope)!].sort()
  return JSON.stringify(out)
}

function countDelta(delta: Delta): number {
  let n = 0
  for (const tops of delta.values()) n += tops.size
  return n
}

function serializeDelta(delta: Delta): string | null {
  if (delta.size === 0) return null
  const out: Record<string, Record<string, boolean>> = {}
  for (const [scope, tops] of delta) out[scope] = Object.fromEntries(tops)
  return JSON.stringify(out)
}

// The package's public API (src/index): the lock lives wherever the client's public API puts it.
import type { StateStoreClient } from '../client'
import { TimeoutError } from '../diagnostics/errors'
import { Hlc } from '../hlc'
import { Lock } from '../locks'
import type { ResolvedConfig } from './config'
import {
  bucketKey,
  bucketOf,
  countDelta,
  deltaKey,
  DELTA_LIMIT,
  lockKey,
  mark,
  markDelta,
  parseBucket,
  parseDelta,
  serializeBucket,
  serializeDelta,
  type Delta,
  type DeltaChange,
  type IndexEntry,
  type IndexState,
} from './index-format'
import type { Limiter } from './limiter'

const RETRY_MS = 1000

/** How long one lock round goes on checking batch after batch before it lets another runtime in. */
const HOLD_MS = 250

/** How long a lock round waits for more checks once it has none left, before it releases the lock. */
const LINGER_MS = 5

/** What a runtime with the cache knows of a key from its own write and the key's notifications. */
export interface Known {
  exists: boolean
  /** The service's version of what `exists` describes. */
  version: Hlc
}

interface Pending extends IndexEntry {
  /** Read the key under the lock even when the runtime knows it (asked by a notification of someone else's change). */
  verify: boolean
  /** Asked because the index and the cache disagreed after a fault: a change it makes is logged as a repair. */
  repair: boolean
  waiters: Array<(err?: Error) => void>
}

/** The delta as a lock round holds it, with the bytes it was read or written as. */
interface Held {
  delta: Delta
  bytes: Buffer | null
}

/** What the rounds tell the index they wrote, so that it keeps its view in step. */
export interface RoundsSink {
  /** The delta is about to be written with `bytes`, making `changes` to the delta stored as `base`. */
  writingDelta(bytes: Buffer, changes: DeltaChange[], base: Buffer | null): void
  /** The delta was written (without the cache: nothing else brings it). */
  wroteDelta(changes: DeltaChange[]): void
  /** A lock round succeeded after one failed: what the failure may have left behind is worth a look. */
  recovered(): void
  /** A fold wrote bucket `i` and emptied the delta (without the cache). */
  wroteBucket(i: number, state: IndexState): void
  foldedDelta(): void
}

/**
 * The index's writer (docs/context.md, "keys()"): checks wait a tick and go as one batch, and one
 * lock round (the lease `<prefix>#lock`, whose fencing token guards every index write) serves batch
 * after batch: read the delta once, then per batch read the keys it must (or take what the runtime
 * knows), and write the delta once; at DELTA_LIMIT entries the delta is folded into the buckets.
 */
export class IndexRounds {
  private readonly lock: Lock
  private readonly pending = new Map<string, Pending>()
  private running: Promise<void> | null = null
  /** Set while a lock round lingers for more checks (lull()): ends the wait early. */
  private wake: (() => void) | null = null
  private timer: NodeJS.Timeout | null = null
  private scheduled = false
  /**
   * While the rounds' loop runs, it takes every check queued. Cleared in the same step as the
   * loop's last look at `pending`, so that a check queued after it starts the next run (one that
   * waited for `running` to clear, a few microtasks later, was left unserved for good).
   */
  private looping = false
  private closing = false
  /** A lock round failed since the last one that succeeded. */
  private failed = false

  constructor(
    private readonly client: StateStoreClient,
    private readonly config: ResolvedConfig,
    private readonly limiter: Limiter,
    private readonly sink: RoundsSink,
    /** With the cache: what the runtime knows of a key it follows (null: not known, read it). */
    private readonly known: (scope: string, top: string) => Known | null,
  ) {
    this.lock = new Lock(client, lockKey(config.prefix))
  }

  get busy(): boolean {
    return this.running !== null || this.pending.size > 0
  }

  /**
   * Queues a check of the key; resolves once a delta saying what it holds is written. `repair`: the
   * index and the cache were found to disagree, so a change the check makes is logged.
   */
  check({
    scope,
    top,
    verify,
    repair,
  }: {
    scope: string
    top: string
    verify: boolean
    repair: boolean
  }): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const id = `${scope}/${top}`
      const waiter = (err?: Error) => (err ? reject(err) : resolve())
      const entry = this.pending.get(id)
      if (entry) {
        entry.waiters.push(waiter)
        entry.verify ||= verify
        entry.repair ||= repair
      } else {
        this.pending.set(id, { scope, top, verify, repair, waiters: [waiter] })
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
    if (this.looping || this.timer || this.scheduled) return
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

  close(): void {
    this.closing = true
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
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
    this.looping = true
    try {
      while (this.pending.size > 0) {
        let batch = this.takeBatch()
        try {
          const acquired = await this.lock.acquire({ timeoutMs: this.config.requestTimeoutMs * 3 })
          try {
            const since = performance.now()
            let held: Held | null = null
            for (;;) {
              held = await this.update(batch, held, this.lock.lease.fencingToken ?? acquired)
              batch = []
              if (performance.now() - since > HOLD_MS) break
              if (this.pending.size === 0) await this.lull()
              if (this.pending.size === 0) break
              batch = this.takeBatch()
            }
          } finally {
            await this.release()
          }
          if (this.failed) {
            this.failed = false
            this.sink.recovered()
          }
        } catch (err) {
          const keys = batch.map((b) => `${b.scope}/${b.top}`)
          const message = err instanceof Error ? err.message : String(err)
          const error = new Error(
            `state store context ${this.config.prefix}: the key index could not be updated: ${message}`,
            { cause: err },
          )
          // those waiting hear now; the entries are retried without them
          for (const entry of batch) for (const waiter of entry.waiters.splice(0)) waiter(error)
          if (this.closing || this.client.status.state === 'closed') {
            this.config.logger(
              'error',
              `state store context ${this.config.prefix}: the key index could not be updated for ` +
                `${keys.join(', ')}: ${message}`,
            )
            continue
          }
          this.failed = true
          this.config.logger(
            'warn',
            `state store context ${this.config.prefix}: updating the key index failed (${message}); retrying`,
          )
          for (const b of batch)
            if (!this.pending.has(`${b.scope}/${b.top}`))
              this.pending.set(`${b.scope}/${b.top}`, { ...b, verify: true, waiters: [] })
          this.timer = setTimeout(() => {
            this.timer = null
            void this.flush()
          }, RETRY_MS)
          return
        }
      }
    } finally {
      this.looping = false
    }
  }

  /**
   * Releases the lock; a release that failed while connected is tried once more (VDEL removes only
   * our own value): a lost answer would otherwise keep every other runtime out until the lease ran
   * out, failing their writes meanwhile.
   */
  private async release(): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.lock.release()
        return
      } catch {
        if (attempt > 0 || this.client.status.state !== 'connected') return
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
  private async update(batch: Pending[], held: Held | null, fencingToken: Hlc): Promise<Held> {
    // A key this runtime wrote and follows is not read again: what it knows, sampled under the
    // lock, is what a read would say, unless someone else changes the key before the delta is
    // written; that change's notification (sent before the lock was ours, or during the round)
    // shows as a new version below, and the key is checked again, read this time.
    const knowledge = batch.map((b) => (b.verify ? null : this.known(b.scope, b.top)))
    // `delta` is the round's own copy, changed in place batch after batch (never the followed one)
    const [{ delta, bytes: base }, found] = await Promise.all([
      held ??
        this.limiter
          .run(() => this.client.get(deltaKey(this.config.prefix), { timeoutMs: this.leaseLeft() }))
          .then((r): Held => ({ delta: this.parsedDelta(r.value), bytes: r.value })),
      Promise.all(
        batch.map(
          async ({ scope, top }, i) =>
            knowledge[i]?.exists ??
            this.limiter
              .run(() => this.client.get(`${this.config.prefix}${scope}/${top}`))
              .then((r) => r.value !== null),
        ),
      ),
    ])
    const changes: DeltaChange[] = []
    batch.forEach(({ scope, top, repair }, i) => {
      if (delta.get(scope)?.get(top) !== found[i]) {
        changes.push([scope, top, found[i]!])
        if (repair) this.config.logger('warn', repaired(this.config.prefix, scope, top, found[i]!))
      }
      markDelta(delta, scope, top, found[i]!)
    })
    let stored = base
    if (changes.length > 0) {
      const bytes = Buffer.from(serializeDelta(delta)!)
      this.sink.writingDelta(bytes, changes, base)
      await this.writeDelta(bytes, fencingToken)
      stored = bytes
      this.sink.wroteDelta(changes)
    }
    batch.forEach((b, i) => {
      const before = knowledge[i]
      if (!before) return
      const now = this.known(b.scope, b.top)
      if (now && now.exists === before.exists && Hlc.compare(now.version, before.version) === 0) return
      const id = `${b.scope}/${b.top}`
      const entry = this.pending.get(id)
      if (entry) entry.verify = true
      else this.pending.set(id, { scope: b.scope, top: b.top, verify: true, repair: false, waiters: [] })
    })
    for (const entry of batch) for (const waiter of entry.waiters.splice(0)) waiter()
    if (countDelta(delta) < DELTA_LIMIT) return { delta, bytes: stored }
    await this.fold(delta, fencingToken)
    return { delta: new Map(), bytes: null }
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
    const key = deltaKey(this.config.prefix)
    if (after === null)
      await this.limiter.run(() => this.client.del(key, { fencingToken, timeoutMs: this.leaseLeft() }))
    else
      await this.limiter.run(() =>
        this.client.set(key, after, { fencingToken, persist: this.config.persist, timeoutMs: this.leaseLeft() }),
      )
  }

  /**
   * Moves the delta's entries into their buckets, then empties it (under the lock). Readers see the
   * same list all along: until the delta is emptied its entries override what the buckets say, and
   * a holder that loses its lease midway leaves a delta the next holder folds again.
   */
  private async fold(delta: Delta, fencingToken: Hlc): Promise<void> {
    const byBucket = new Map<number, DeltaChange[]>()
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
        const key = bucketKey(this.config.prefix, bucket)
        const { value } = await this.limiter.run(() => this.client.get(key, { timeoutMs: this.leaseLeft() }))
        const state = this.parsedBucket(value, key)
        for (const [scope, top, exists] of entries) mark(state, scope, top, exists)
        const after = serializeBucket(state)
        if (after !== (value?.toString('utf8') ?? null)) {
          if (after === null)
            await this.limiter.run(() => this.client.del(key, { fencingToken, timeoutMs: this.leaseLeft() }))
          else
            await this.limiter.run(() =>
              this.client.set(key, after, { fencingToken, persist: this.config.persist, timeoutMs: this.leaseLeft() }),
            )
        }
        this.sink.wroteBucket(bucket, state)
      }),
    )
    await this.writeDelta(null, fencingToken)
    this.sink.foldedDelta()
  }

  private parsedBucket(value: Buffer | null, key: string): IndexState {
    try {
      return parseBucket(value)
    } catch (err) {
      this.config.logger('warn', invalid(this.config.prefix, key, err))
      return new Map()
    }
  }

  private parsedDelta(value: Buffer | null): Delta {
    try {
      return parseDelta(value)
    } catch (err) {
      this.config.logger('warn', invalid(this.config.prefix, deltaKey(this.config.prefix), err))
      return new Map()
    }
  }
}

/**
 * The log line for a check that found the index wrong about a key (written by another writer, an older version, or left
 * by a fault).
 */
function repaired(prefix: string, scope: string, top: string, exists: boolean): string {
  return exists
    ? `state store context ${prefix}: the key index did not list ${scope}/${top}, which exists; listed it`
    : `state store context ${prefix}: the key index listed ${scope}/${top}, which does not exist; removed it`
}

/** The log line for an index key that is not what the format says: it is taken as empty. */
export function invalid(prefix: string, key: string, err: unknown): string {
  return (
    `state store context ${prefix}: the key index ${key} is not valid JSON (${(err as Error).message}); ` +
    `treating it as empty`
  )
}

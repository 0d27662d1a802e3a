import type { KeyNotification, Observation, StateStoreClient } from '../client'
import type { ResolvedConfig } from './config'
import {
  BUCKETS,
  bucketKey,
  deltaKey,
  parseBucket,
  parseDelta,
  type DeltaChange,
  type IndexEntry,
  type IndexState,
} from './index-format'
import { IndexRounds, invalid, type Known } from './index-rounds'
import { IndexView, type ViewChange } from './index-view'
import type { Limiter } from './limiter'

export type { IndexEntry, IndexState } from './index-format'
export type { Known } from './index-rounds'

/**
 * The list of keys per scope, because the service has no key listing (docs/context.md): its stored
 * format is `index-format.ts`, the merged list `index-view.ts`, and its writer, the lock rounds that
 * recompute entries from the keys themselves, `index-rounds.ts`. This reads it and, with the cache,
 * follows it with one registration, the delta's (a fold, the only writer of buckets, ends by
 * deleting the delta, and the buckets are read again), telling the store what others added or
 * removed.
 */
export class KeyIndex {
  private readonly view = new IndexView()
  private readonly rounds: IndexRounds
  /**
   * Our delta write in flight, recognised by its bytes when its notification comes back; `base`: the delta it changed.
   */
  private ownDelta: { bytes: Buffer; changes: DeltaChange[]; base: Buffer | null } | null = null
  /** The bytes of the delta the view holds (null: none). */
  private deltaBytes: Buffer | null = null
  /** The look after a fault (audit()) while it runs; `auditAgain`: asked for once more meanwhile. */
  private auditing: Promise<void> | null = null
  private auditAgain = false
  /** Whether the client was connected when last heard; null until open() follows its status. */
  private wasConnected: boolean | null = null
  /** Per bucket and (at BUCKETS) the delta, bumped by every notification: a read older than one is dropped. */
  private readonly seen: number[] = new Array<number>(BUCKETS + 1).fill(0)
  /** The index's one registration: the delta's. */
  private observation: Observation | null = null
  /** Fold reads under way: a delta notification waits behind them, in order. */
  private refolds = 0
  private deltaChain: Promise<void> = Promise.resolve()
  private closing = false

  constructor(
    private readonly client: StateStoreClient,
    private readonly config: ResolvedConfig,
    private readonly limiter: Limiter,
    /** With the cache: entries others added or removed, from the index notifications. */
    private readonly onChange: (added: IndexEntry[], removed: IndexEntry[]) => void,
    /** With the cache: what the runtime knows of a key it follows (null: not known, read it). */
    known: (scope: string, top: string) => Known | null = () => null,
    /** With the cache: the keys it holds, and those with a write in flight (`<scope>/<key>`, left alone). */
    private readonly cached: () => { held: IndexState; busy: ReadonlySet<string> } = () => ({
      held: new Map(),
      busy: new Set(),
    }),
  ) {
    const cache = config.cache
    this.rounds = new IndexRounds(
      client,
      config,
      limiter,
      {
        // with the cache, the delta's notification brings the change (in the service's order)
        writingDelta: (bytes, changes, base) => {
          if (cache) this.ownDelta = { bytes, changes, base }
        },
        recovered: () => this.audit(),
        wroteDelta: (changes) => {
          if (!cache) this.view.applyDelta(changes)
        },
        wroteBucket: (i, state) => {
          if (!cache) this.view.replaceBucket(i, state)
        },
        foldedDelta: () => {
          if (!cache) this.view.replaceDelta(new Map())
        },
      },
      known,
    )
  }

  /** Every bucket merged, the delta applied: what keys() answers from. */
  get current(): IndexState {
    return this.view.current
  }

  get busy(): boolean {
    return this.rounds.busy
  }

  /** Reads the whole index; with the cache, follows it from then on. */
  async open(): Promise<void> {
    const read = new Set<number>()
    if (this.config.cache) {
      if (this.wasConnected === null) {
        this.wasConnected = this.client.status.state === 'connected'
        // notifications missed while away are reconciled by the client; the index rounds cut short are looked at here
        // reachable: connected, and a service answers (an emulator restarted behind a broker that stayed up comes back
        // so)
        this.client.on('status', (status) => {
          if (status.state !== 'connected' || status.problem === 'noService') this.wasConnected = false
          else if (!this.wasConnected) {
            this.wasConnected = true
            this.audit()
          }
        })
      }
      // One registration follows the whole index: the buckets change only in a fold, which ends by
      // deleting the delta, and that notification has them read again. (A retry after a failed load
      // keeps the registration it made.)
      if (!this.observation) {
        const seen = this.seen[BUCKETS]
        const observation = await this.limiter.run(() =>
          this.client.observe(deltaKey(this.config.prefix), (n) => this.onDelta(n)),
        )
        this.observation = observation
        // the registration's own read, unless a notification came since (it is newer)
        if (observation.initial && this.seen[BUCKETS] === seen) {
          this.received(BUCKETS, observation.initial.value, false)
          read.add(BUCKETS)
        }
      }
    }
    await this.readKeys((i) => !read.has(i), false)
  }

  /**
   * A change of the delta, in the service's order; its deletion (a fold's end) waits for the buckets to be read again.
   */
  private onDelta(n: KeyNotification): void {
    this.seen[BUCKETS]! += 1
    const value = n.operation === 'SET' ? n.value : null
    if (value !== null && this.refolds === 0) return this.received(BUCKETS, value, true)
    if (value === null) this.refolds += 1
    this.deltaChain = this.deltaChain.then(async () => {
      if (value === null) {
        await this.refold()
        this.refolds -= 1
      }
      this.received(BUCKETS, value, true)
    })
  }

  /**
   * Reads every bucket again, before the emptied delta stops overriding them: what a fold moved
   * into them shows without a moment unlisted. Retried while the service cannot be reached.
   */
  private async refold(): Promise<void> {
    while (!this.closing) {
      try {
        await this.readKeys((i) => i < BUCKETS, true)
        return
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 1000))
      }
    }
  }

  /** Reads every bucket and the delta (those changed meanwhile by a notification keep what it said). */
  async read(): Promise<IndexState> {
    await this.readKeys(() => true, false)
    return this.view.current
  }

  /** `notify`: tell the cache what the reads changed. */
  private async readKeys(which: (i: number) => boolean, notify: boolean): Promise<void> {
    await Promise.all(
      this.indexKeys().map(async (key, i) => {
        if (!which(i)) return
        const seen = this.seen[i]
        const { value } = await this.limiter.run(() => this.client.get(key))
        if (this.seen[i] === seen) this.received(i, value, notify)
      }),
    )
  }

  /**
   * Asks for the key's entry to be made right, unless (with the cache) the index already agrees
   * with `exists`. Resolves once the index says what the key holds, for every runtime that reads it.
   * `verify`: read the key under the lock even if the runtime knows what it holds.
   */
  check({
    scope,
    top,
    exists,
    verify,
  }: {
    scope: string
    top: string
    exists: boolean
    verify: boolean
  }): Promise<void> {
    if (this.config.cache && this.view.has(scope, top) === exists) return Promise.resolve()
    return this.rounds.check({ scope, top, verify, repair: false })
  }

  flush(): Promise<void> {
    return this.rounds.flush()
  }

  /**
   * After a fault (a lock round that failed, a reconnect), with the cache: reads the index again and
   * has every key checked on which the index and the cache disagree (a key held, its writes landed,
   * but not listed; a key listed but not held), each correction logged. Whatever a round cut short
   * left, or another writer did, is mended once the service answers again.
   */
  audit(): void {
    if (!this.config.cache || this.closing) return
    if (this.auditing) {
      this.auditAgain = true
      return
    }
    this.auditing = this.look()
      .catch(() => {}) // the next fault asks again; a failed round's retry is logged by the rounds
      .finally(() => {
        this.auditing = null
        if (this.auditAgain) {
          this.auditAgain = false
          this.audit()
        }
      })
  }

  private async look(): Promise<void> {
    // every index key: a fold missed while away (its delta deleted, then written anew) shows in the buckets only
    await this.readKeys((i) => i < BUCKETS || this.refolds === 0, true)
    if (this.closing) return
    const { held, busy } = this.cached()
    const checks: Array<Promise<void>> = []
    const loads: IndexEntry[] = []
    for (const [scope, tops] of held) {
      for (const top of tops)
        if (!busy.has(`${scope}/${top}`) && !this.view.has(scope, top))
          checks.push(this.rounds.check({ scope, top, verify: true, repair: true }))
    }
    for (const [scope, tops] of this.view.current) {
      for (const top of tops) {
        if (held.get(scope)?.has(top) || busy.has(`${scope}/${top}`)) continue
        loads.push({ scope, top })
        checks.push(this.rounds.check({ scope, top, verify: true, repair: true }))
      }
    }
    if (loads.length > 0) this.onChange(loads, [])
    await Promise.all(checks)
  }

  stopping(): void {
    this.closing = true
    this.rounds.stopping()
  }

  async close(): Promise<void> {
    this.closing = true
    this.rounds.close()
    const observation = this.observation
    this.observation = null
    await observation?.close()
  }

  /** The buckets' keys, then the delta's: position i is what `seen[i]` counts. */
  private indexKeys(): string[] {
    return [
      ...Array.from({ length: BUCKETS }, (_, i) => bucketKey(this.config.prefix, i)),
      deltaKey(this.config.prefix),
    ]
  }

  /** What index key `i` (a bucket, or at BUCKETS the delta) now holds, read or notified. */
  private received(i: number, value: Buffer | null, notify: boolean): void {
    if (i < BUCKETS)
      return this.tell(
        this.view.replaceBucket(i, this.parsed(i, value, parseBucket) ?? new Map<string, Set<string>>()),
        notify,
      )
    const own = this.ownDelta
    const before = this.deltaBytes
    this.ownDelta = null
    this.deltaBytes = value
    // Our own write comes back onto the delta it changed: apply the batch's changes instead of parsing
    // the whole delta again. Onto any other (a notification missed, a reconcile after a reconnect
    // bringing our write over someone else's), only the whole delta says what is listed.
    if (own && value?.equals(own.bytes) && sameBytes(before, own.base))
      this.tell(this.view.applyDelta(own.changes), notify)
    else
      this.tell(
        this.view.replaceDelta(this.parsed(i, value, parseDelta) ?? new Map<string, Map<string, boolean>>()),
        notify,
      )
  }

  private parsed<T>(i: number, value: Buffer | null, parse: (value: Buffer | null) => T): T | null {
    try {
      return parse(value)
    } catch (err) {
      this.config.logger('warn', invalid(this.config.prefix, this.indexKeys()[i]!, err))
      return null
    }
  }

  private tell({ added, removed }: ViewChange, notify: boolean): void {
    if (notify && !this.closing && (added.length > 0 || removed.length > 0)) this.onChange(added, removed)
  }
}

function sameBytes(a: Buffer | null, b: Buffer | null): boolean {
  return a === null || b === null ? a === b : a.equals(b)
}

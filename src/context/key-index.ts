// The package's public API (src/index): the lock lives wherever the client's public API puts it.
import { type Observation, type StateStoreClient } from '../client'
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

const RETRY_MS = 1000

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
 * spread over BUCKETS index keys, `<prefix>#keys/<00..ff>`, each `{"<scope>": ["<key>", …]}`, so a
 * change rewrites one small bucket, never the whole list. Every change is made under one lock
 * (`<prefix>#lock`, a lease whose fencing token guards every bucket write): read the buckets
 * touched, then read each key in the batch itself and make its bucket say whether it exists. So
 * the index is recomputed from the keys, not from what a runtime believes, and two runtimes
 * updating it at once serialise on the lock instead of overwriting each other. Checks wait in a
 * batch, so a burst of new keys costs one lock round, not one each.
 */
export class KeyIndex {
  private readonly lock: Lock
  /** Every bucket merged: what keys() answers from without the cache. */
  current: IndexState = new Map()
  private readonly buckets: IndexState[] = Array.from({ length: BUCKETS }, () => new Map())
  /** Per bucket, bumped by every notification: a read older than one is dropped. */
  private readonly seen: number[] = new Array<number>(BUCKETS).fill(0)
  private readonly pending = new Map<string, Pending>()
  private running: Promise<void> | null = null
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

  /** The single index key of earlier versions; moved into the buckets by open(). */
  get legacyKey(): string {
    return `${this.config.prefix}#keys`
  }

  /** Reads the whole index; with the cache, follows every bucket from then on. */
  async open(): Promise<void> {
    if (this.config.cache) {
      // a retry after a failed load observes only the buckets not observed yet
      await Promise.all(
        this.buckets.map(async (_, i) => {
          this.observations[i] ??= await this.limiter.run(() =>
            this.client.observe(this.bucketKey(i), (n) => {
              this.seen[i]! += 1
              this.replace(i, this.parse(n.operation === 'SET' ? n.value : null, i), true)
            }),
          )
        }),
      )
    }
    await this.migrateLegacy()
    await this.read()
  }

  /** Reads every bucket (those changed meanwhile by a notification keep what it said). */
  async read(): Promise<IndexState> {
    await Promise.all(
      this.buckets.map(async (_, i) => {
        const seen = this.seen[i]
        const { value } = await this.limiter.run(() => this.client.get(this.bucketKey(i)))
        if (this.seen[i] === seen) this.replace(i, this.parse(value, i), false)
      }),
    )
    return this.current
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
    await Promise.all(this.observations.splice(0).map((o) => o?.close()))
  }

  private async run(): Promise<void> {
    while (this.pending.size > 0) {
      const batch = [...this.pending.values()]
      this.pending.clear()
      try {
        // those waiting hear once the buckets are written, not after the lease's release too
        await this.update(batch, () => {
          for (const entry of batch) for (const waiter of entry.waiters.splice(0)) waiter()
        })
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

  private async update(batch: Pending[], written: () => void): Promise<void> {
    const acquired = await this.lock.acquire({ timeoutMs: this.config.requestTimeoutMs * 3 })
    try {
      const byBucket = new Map<number, IndexEntry[]>()
      for (const entry of batch) {
        const bucket = bucketOf(entry.scope, entry.top)
        byBucket.set(bucket, [...(byBucket.get(bucket) ?? []), entry])
      }
      // A key this runtime wrote and follows is not read again: what it knows, sampled under the
      // lock, is what a read would say, unless someone else changes the key before the buckets are
      // written; that change's notification (sent before the lock was ours, or during the round)
      // shows as a new version below, and the key is checked again, read this time.
      const knowledge = batch.map((b) => (b.verify ? null : this.known(b.scope, b.top)))
      const [values, found] = await Promise.all([
        Promise.all([...byBucket.keys()].map((i) => this.limiter.run(() => this.client.get(this.bucketKey(i))))),
        Promise.all(
          batch.map(
            ({ scope, top }, i) =>
              knowledge[i]?.exists ?? this.limiter.run(() => this.client.get(`${this.config.prefix}${scope}/${top}`)).then((r) => r.value !== null),
          ),
        ),
      ])
      const exists = new Map(batch.map((b, i) => [`${b.scope}/${b.top}`, found[i]!]))
      const fencingToken = this.lock.lease.fencingToken ?? acquired
      await Promise.all(
        [...byBucket].map(async ([bucket, entries], n) => {
          const before = values[n]!.value
          const state = this.parse(before, bucket)
          for (const { scope, top } of entries) mark(state, scope, top, exists.get(`${scope}/${top}`)!)
          const after = serialize(state)
          if (after !== (before?.toString('utf8') ?? null)) {
            const key = this.bucketKey(bucket)
            if (after === null) await this.limiter.run(() => this.client.del(key, { fencingToken }))
            else await this.limiter.run(() => this.client.set(key, after, { fencingToken, persist: this.config.persist }))
          }
          // with the cache, the bucket's notification brings this (in the service's order)
          if (!this.config.cache) this.replace(bucket, state, false)
        }),
      )
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
      written()
    } finally {
      await this.lock.release().catch(() => {})
    }
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
    const added: IndexEntry[] = []
    const removed: IndexEntry[] = []
    for (const [scope, tops] of next) for (const top of tops) if (!before.get(scope)?.has(top)) added.push({ scope, top })
    for (const [scope, tops] of before) for (const top of tops) if (!next.get(scope)?.has(top)) removed.push({ scope, top })
    for (const { scope, top } of added) mark(this.current, scope, top, true)
    for (const { scope, top } of removed) mark(this.current, scope, top, false)
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

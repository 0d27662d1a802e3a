import type { KeyNotification, Observation } from '../client'
import type { Hlc } from '../hlc'
import { decodeAuto } from '../formats/value'
import type { IndexEntry, Known } from './key-index'
import { afterService, afterWrite, DOUBT, newEntry, newer, writing, type KeyEntry, type Knowledge } from './key-state'
import { LoadProgress } from './load-progress'
import { clientOf, expiry, named, serviceKey, type Session } from './session'
import { WriteQueue } from './write-queue'

type Scope = Record<string, unknown>

/** How often a key is read again after a failed write while the broker is away. */
const REREAD_MS = 1000

/**
 * The cache (docs/context.md, "The cache"): every stored value of the prefix in memory, each key
 * a KeyEntry (key-state.ts) kept current through its notifications, with the writes of this
 * runtime going out per key in order.
 */
export class KeyCache {
  /** Scope → top-level key → value: what get and keys answer from. */
  readonly data = new Map<string, Scope>()
  private readonly entries = new Map<string, KeyEntry>()
  private loading: LoadProgress | null = null

  constructor(private readonly session: Session) {}

  scopeData(scope: string): Scope {
    let data = this.data.get(scope)
    if (!data) {
      data = Object.create(null) as Scope
      this.data.set(scope, data)
    }
    return data
  }

  /** How far the load of every key is, while it runs. */
  get progress(): { loaded: number; total: number } | null {
    return this.loading?.figures ?? null
  }

  /** Loads every key the index lists, logging progress while it takes long. */
  async loadAll(entries: ReadonlyArray<readonly [string, string]>): Promise<void> {
    const { prefix, logger } = this.session.config
    const progress = new LoadProgress(entries.length, (loaded, total) =>
      logger(
        'info',
        `state store context ${prefix}: loading: ${loaded.toLocaleString('en')} of ${total.toLocaleString('en')} keys`,
      ),
    )
    this.loading = progress
    try {
      await Promise.all(entries.map(([scope, top]) => this.load(scope, top).then(() => progress.one())))
    } finally {
      progress.stop()
      this.loading = null
    }
  }

  /**
   * Reads a key someone else wrote into the cache, registered first so that no later change is
   * missed: the KEYNOTIFY is answered before the read is sent (the registration's own read, when
   * this call made it), and a notification arriving before the read's answer wins over the read.
   */
  async load(scope: string, top: string): Promise<void> {
    const entry = this.entry(scope, top)
    const fresh = entry.registration.kind === 'none'
    const seen = entry.seen
    const observation = await this.observe(entry)
    if (writing(entry)) return // our own write is newer than anything a read could bring
    let read = fresh ? (observation?.initial ?? null) : null
    if (read) {
      // any notification since the registration describes a later change than the read saw
      if (entry.seen !== seen) return
    } else {
      const before = entry.seen
      const client = clientOf(this.session)
      read = await this.session.limiter.run(() => client.get(entry.serviceKey))
      if (entry.seen !== before || writing(entry)) return
    }
    this.apply(entry, read.value, read.version)
    // a failed check is logged by the index
    if (read.value === null) void this.session.index?.check({ scope, top, exists: false, verify: true }).catch(() => {})
  }

  /**
   * What this runtime knows of a key from its own last write and the notifications since, for the
   * index to use instead of reading the key (docs/context.md, keys()); null when it cannot know.
   */
  known(scope: string, top: string): Known | null {
    const entry = this.entries.get(serviceKey(this.session, scope, top))
    if (entry?.registration.kind !== 'watching') return null
    const k = entry.knowledge
    if (k.kind !== 'known' || k.exists === null) return null
    const held = entry.held
    if (held && newer(held.version, k.version))
      return held.version ? { exists: held.bytes !== null, version: held.version } : null
    return { exists: k.exists, version: k.version }
  }

  /**
   * The keys the cache holds, and those with a write in flight (`<scope>/<key>`): for the index's look after a fault.
   */
  held(): { held: Map<string, Set<string>>; busy: Set<string> } {
    const held = new Map<string, Set<string>>()
    for (const [scope, data] of this.data) if (Object.keys(data).length > 0) held.set(scope, new Set(Object.keys(data)))
    const busy = new Set<string>()
    for (const entry of this.entries.values())
      if (writing(entry) || entry.knowledge.kind === 'doubt') busy.add(`${entry.scope}/${entry.top}`)
    return { held, busy }
  }

  /** Others changed the index: load the keys they added; have a key we hold that they removed checked again. */
  onIndex(added: IndexEntry[], removed: IndexEntry[]): void {
    if (this.session.closing) return
    for (const { scope, top } of added) {
      const data = this.data.get(scope)
      if (data && Object.hasOwn(data, top)) continue
      const entry = this.entries.get(serviceKey(this.session, scope, top))
      if (entry && writing(entry)) continue
      this.load(scope, top).catch((err: unknown) =>
        this.session.config.logger('warn', `${named(this.session, err, `loading ${scope}/${top}`).message}`),
      )
    }
    for (const { scope, top } of removed) {
      // the one race: they deleted it and checked it out while we wrote it again (a failed check is logged by index)
      if (Object.hasOwn(this.data.get(scope) ?? {}, top))
        void this.session.index?.check({ scope, top, exists: true, verify: true }).catch(() => {})
    }
  }

  /**
   * Queues a write (null deletes) of what the cache now holds for the key. `log`: nobody waits for
   * the result, so a failure is logged, once, with the key.
   */
  write(scope: string, top: string, bytes: Buffer | null, log: boolean): Promise<void> {
    const entry = this.entry(scope, top)
    entry.writes ??= new WriteQueue(
      (b) => this.send(entry, b),
      () => this.idle(entry),
    )
    const done = entry.writes.push(bytes)
    if (log)
      done.catch((err: unknown) =>
        this.session.config.logger('error', err instanceof Error ? err.message : String(err)),
      )
    return done
  }

  /** Settles once no write is in flight. */
  async drain(): Promise<void> {
    for (;;) {
      const pending = [...this.entries.values()].flatMap((e) => (e.writes?.drained ? [e.writes.drained] : []))
      if (pending.length === 0 && !this.session.index?.busy) break
      await Promise.all([...pending, this.session.index?.flush()])
    }
  }

  private entry(scope: string, top: string): KeyEntry {
    const key = serviceKey(this.session, scope, top)
    let entry = this.entries.get(key)
    if (!entry) {
      entry = newEntry(scope, top, key)
      this.entries.set(key, entry)
    }
    return entry
  }

  /** Registers for the key's notifications (once). */
  private observe(entry: KeyEntry): Promise<Observation | null> {
    if (entry.registration.kind !== 'none') return entry.registration.observed
    const client = this.session.client
    if (!client) return Promise.resolve(null)
    const observed = this.session.limiter
      .run(() => client.observe(entry.serviceKey, (n) => this.onNotification(entry, n)))
      .then(
        (observation) => {
          entry.registration = { kind: 'watching', observed }
          return observation
        },
        (err: unknown) => {
          entry.registration = { kind: 'none' }
          throw err
        },
      )
    entry.registration = { kind: 'registering', observed }
    return observed
  }

  private onNotification(entry: KeyEntry, n: KeyNotification): void {
    entry.seen += 1
    const bytes = n.operation === 'SET' ? n.value : null
    if (writing(entry)) {
      if (!entry.held || newer(n.version, entry.held.version)) entry.held = { bytes, version: n.version }
      return
    }
    this.apply(entry, bytes, n.version)
  }

  /** Puts what the service holds into the cache, unless the cache already holds something newer. */
  private apply(entry: KeyEntry, bytes: Buffer | null, version: Hlc | null): void {
    const next = afterService(entry.knowledge, bytes, version)
    if (!next) return
    entry.knowledge = next
    if (bytes === null) {
      const data = this.data.get(entry.scope)
      if (data) delete data[entry.top]
    } else {
      this.scopeData(entry.scope)[entry.top] = decodeAuto(bytes)
    }
  }

  /** One write of the key: registered first, then sent; its caller hears once the index agrees. */
  private async send(entry: KeyEntry, bytes: Buffer | null): Promise<void> {
    try {
      const client = clientOf(this.session)
      await this.observe(entry)
      const { limiter, config } = this.session
      const expired = expiry(this.session, client)
      const { version } =
        bytes === null
          ? await limiter.run(() => client.del(entry.serviceKey), expired)
          : await limiter.run(() => client.set(entry.serviceKey, bytes, { persist: config.persist }), expired)
      entry.knowledge = afterWrite(entry.knowledge, bytes !== null, version)
      // the caller hears once the index agrees: keys, delete and clean anywhere then see the key
      await this.session.index?.check({ scope: entry.scope, top: entry.top, exists: bytes !== null, verify: false })
    } catch (err) {
      // the cache holds what failed to be written, and the service may hold it or not
      entry.knowledge = DOUBT
      throw named(this.session, err, `writing ${entry.serviceKey}`)
    }
  }

  /** The key's writes ran dry: a change by someone else held meanwhile is applied; a key in doubt is read again. */
  private idle(entry: KeyEntry): void {
    const held = entry.held
    entry.held = null
    const doubted = entry.knowledge.kind === 'doubt'
    if (held) this.apply(entry, held.bytes, held.version)
    if (entry.knowledge.kind === 'doubt') entry.rereading ??= this.reread(entry).finally(() => (entry.rereading = null))
    // a notification settled it: the failed write may have been executed, so the index checks the key as the write
    // would have
    else if (doubted) this.settled(entry)
  }

  /**
   * A key whose write failed now holds in the cache what the service holds: the index checks it
   * (read under the lock), whichever way it went. A write of unknown outcome that was executed (a
   * delete whose answer was lost, its notification heard) left the index saying otherwise.
   */
  private settled(entry: KeyEntry): void {
    const held = Object.hasOwn(this.data.get(entry.scope) ?? {}, entry.top)
    // a failed check is logged by the index
    void this.session.index?.check({ scope: entry.scope, top: entry.top, exists: held, verify: true }).catch(() => {})
  }

  /**
   * After a failed write: reads the key until the cache holds what the service holds (a
   * notification or a later write of ours settles it too), then has the index check the key, as
   * the write would have (it may have been executed), whether it exists or not.
   */
  private async reread(entry: KeyEntry): Promise<void> {
    const { session } = this
    while (entry.knowledge.kind === 'doubt' && !session.closing && session.client && !writing(entry)) {
      try {
        await session.client.ready({ timeoutMs: session.config.requestTimeoutMs })
        await this.load(entry.scope, entry.top)
      } catch (err) {
        if (session.closing) return
        // while the broker is away the failed write itself was reported; a read that fails while connected is news
        if (session.client?.status.state === 'connected')
          session.config.logger(
            'warn',
            `${named(session, err, `reading ${entry.scope}/${entry.top} again after a failed write`).message}; ` +
              `retrying`,
          )
        await new Promise((resolve) => setTimeout(resolve, REREAD_MS))
        continue
      }
      const k = entry.knowledge as Knowledge // changed by load(): the loop condition narrowed it
      // still in doubt: load() found a write of ours queued meanwhile, which settles the key
      if (k.kind === 'doubt') return
      this.settled(entry)
      return
    }
  }
}

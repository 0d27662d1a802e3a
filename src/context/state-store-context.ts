import { StateStoreClient, type KeyNotification, type Observation } from '../client'
import { acquireEmbedded, releaseEmbedded } from '../emulator/embedded'
import { Hlc } from '../hlc'
import { decodeAuto, encodeJson } from '../value'
import { resolveConfig, type ContextStoreConfig, type ResolvedConfig } from './config'
import { KeyIndex, type IndexEntry, type Known } from './key-index'
import { Limiter } from './limiter'
import { ContextNotLoadedError } from './not-loaded'
import { getPath, parsePath, setPath, type Segment } from './path'

type Callback = (err?: Error | null, ...values: unknown[]) => void
type Scope = Record<string, unknown>

/** How often loading is tried again after it failed (the broker went away mid-load). */
const RELOAD_MS = 1000

/** A call made before the store loaded: run once it has, in order; one with a callback gives up after the request timeout. */
interface Deferred {
  run: () => void
  settled: boolean
  timer?: NodeJS.Timeout
  giveUp?: (err: Error) => void
}

/** A key name with nothing that needs parsing: the common case, read without the parser. */
const PLAIN = /^[A-Za-z_$][\w$-]*$/

/** One stored key: writes to it go out one at a time, newest value last; later ones replace queued ones. */
interface KeyState {
  readonly scope: string
  readonly top: string
  readonly serviceKey: string
  /** The service's version of the value the cache holds (null: not known yet). */
  version: Hlc | null
  /** Whether the key exists at `version` (null: not known). */
  exists: boolean | null
  /** Bumped by every notification: a GET answer older than one is dropped. */
  seen: number
  inflight: Promise<void> | null
  next: { bytes: Buffer | null; waiters: Array<(err?: Error) => void> } | null
  /** A change by someone else that arrived while our write was in flight: the newest, applied after it if newer. */
  remote: { bytes: Buffer | null; version: Hlc | null } | null
  observed: Promise<Observation | null> | null
  /** The key's notifications are registered: every later change by anyone reaches onNotification. */
  watching: boolean
  /**
   * A write of ours failed, so the service may or may not hold it while the cache does: the cache
   * no longer knows the key until the service tells it (a read, a notification, a later write).
   */
  doubt: boolean
  /** reread() runs for the key: one at a time. */
  rereading: boolean
}

/**
 * A Node-RED context store on the state store (docs: README "Context store"). Each top-level
 * context key is one service key, `<prefix><scope>/<key>`, holding the value as JSON; nested paths
 * read and write inside it. An index key lists the keys of every scope, because the service cannot
 * list keys (src/context/key-index.ts). With the cache, every value is held in memory and kept
 * current through key notifications, so `get` can answer synchronously.
 */
export class StateStoreContext {
  private readonly config: ResolvedConfig
  private client: StateStoreClient | null = null
  private usesEmbedded = false
  private index: KeyIndex | null = null
  private readonly data = new Map<string, Scope>()
  private readonly states = new Map<string, KeyState>()
  private readonly warnedCircular = new Set<string>()
  private closing = false
  private opening: Promise<void> | null = null
  private closed: Promise<void> | null = null
  private brokerUrl = ''
  /** True once the index (and with the cache every value) has been read: until then calls wait in `deferred`. */
  private loaded = false
  private readonly deferred: Deferred[] = []
  private readonly loadWaiters = new Set<() => void>()
  /** Requests of this store at once: half the client's limit, the rest of a burst waits here. */
  private readonly limiter: Limiter

  constructor(config?: ContextStoreConfig) {
    this.config = resolveConfig(config)
    this.limiter = new Limiter(Math.max(1, Math.floor((this.config.client.maxInFlight ?? 1000) / 2)))
  }

  get prefix(): string {
    return this.config.prefix
  }

  /**
   * Connects and loads. When the broker cannot be reached, resolves anyway (Node-RED starts) and
   * keeps trying in the background: until the store has loaded, calls behave as README "Broker
   * down at start" says. Calling it again returns the same promise.
   */
  open(): Promise<void> {
    this.opening ??= this.start()
    return this.opening
  }

  private async start(): Promise<void> {
    const { client: options, logger, requestTimeoutMs } = this.config
    let brokerUrl = options.brokerUrl
    if (this.config.embedded) {
      const emulator = await acquireEmbedded(logger)
      this.usesEmbedded = true
      brokerUrl = emulator.brokerUrl
    }
    this.brokerUrl = brokerUrl!
    const client = new StateStoreClient({ ...options, brokerUrl: brokerUrl! })
    client.on('error', (err) => logger('warn', err.message))
    this.client = client
    this.index = new KeyIndex(
      client,
      this.config,
      this.limiter,
      (added, removed) => this.onIndex(added, removed),
      (scope, top) => this.known(scope, top),
    )
    // Node-RED waits for open() before it starts the flows: wait for the broker as long as a request would
    const connected = await client.ready({ timeoutMs: requestTimeoutMs }).then(
      () => true,
      () => false,
    )
    if (connected) {
      try {
        await this.loadAll()
        this.markLoaded()
        return
      } catch (err) {
        logger('warn', this.named(err, 'loading the stored context').message)
      }
    } else {
      const reason = client.status.reason ? ` (${client.status.reason})` : ''
      logger('warn', `state store context ${this.config.prefix}: waiting for its broker ${this.brokerUrl}${reason}; until it connects and the context is loaded, reads wait or fail and writes are held`)
    }
    void this.loadInBackground()
  }

  /** Reads the index and, with the cache, every value; safe to call again after a failure. */
  private async loadAll(): Promise<void> {
    await this.index!.open()
    if (!this.config.cache) return
    await Promise.all([...this.index!.current].flatMap(([scope, tops]) => [...tops].map((top) => this.load(scope, top))))
  }

  private async loadInBackground(): Promise<void> {
    while (!this.closing && this.client) {
      try {
        await this.client.ready({ timeoutMs: this.config.requestTimeoutMs })
      } catch {
        continue // still down: wait again
      }
      try {
        await this.loadAll()
        if (this.closing) return
        this.config.logger('info', `state store context ${this.config.prefix}: connected to ${this.brokerUrl}; the context is loaded`)
        this.markLoaded()
        return
      } catch (err) {
        if (this.closing) return
        this.config.logger('warn', `${this.named(err, 'loading the stored context').message}; retrying`)
        await new Promise((resolve) => setTimeout(resolve, RELOAD_MS))
      }
    }
  }

  private markLoaded(): void {
    this.loaded = true
    for (const op of this.deferred.splice(0)) {
      if (op.settled) continue
      op.settled = true
      clearTimeout(op.timer)
      op.run()
    }
    for (const wake of this.loadWaiters) wake()
    this.loadWaiters.clear()
  }

  /** Resolves once loaded; rejects with ContextNotLoadedError after the request timeout. */
  private whenLoaded(): Promise<void> {
    if (this.loaded) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const wake = () => {
        clearTimeout(timer)
        resolve()
      }
      const timer = setTimeout(() => {
        this.loadWaiters.delete(wake)
        reject(this.notLoaded())
      }, this.config.requestTimeoutMs)
      this.loadWaiters.add(wake)
    })
  }

  /** Holds a call until the store has loaded; with `giveUp`, tells it after the request timeout and drops it. */
  private defer(run: () => void, giveUp?: (err: Error) => void): void {
    const op: Deferred = { run, settled: false }
    if (giveUp) {
      op.giveUp = giveUp
      op.timer = setTimeout(() => {
        op.settled = true
        giveUp(this.notLoaded())
      }, this.config.requestTimeoutMs)
    }
    this.deferred.push(op)
  }

  private notLoaded(): ContextNotLoadedError {
    const status = this.client?.status
    const why = status?.state === 'connected' ? 'loading' : `waiting for its broker ${this.brokerUrl}${status?.reason ? ` (${status.reason})` : ''}`
    return new ContextNotLoadedError(`state store context ${this.config.prefix}: not loaded yet: ${why}`)
  }

  /** Waits for every write and index update, then disconnects. Calling it again returns the same promise. */
  close(): Promise<void> {
    this.closed ??= this.shutdown()
    return this.closed
  }

  private async shutdown(): Promise<void> {
    this.closing = true
    const held = this.deferred.splice(0).filter((op) => !op.settled)
    for (const op of held) {
      op.settled = true
      clearTimeout(op.timer)
      op.giveUp?.(new ContextNotLoadedError(`state store context ${this.config.prefix}: closed before its context was loaded`))
    }
    const dropped = held.filter((op) => !op.giveUp).length
    if (dropped > 0) this.config.logger('error', `state store context ${this.config.prefix}: closed before its context was loaded; ${dropped} change(s) made meanwhile were not applied`)
    this.index?.stopping()
    await this.opening?.catch(() => {})
    await this.drain()
    await this.index?.close()
    await this.client?.close()
    this.client = null
    if (this.usesEmbedded) {
      this.usesEmbedded = false
      releaseEmbedded()
    }
  }

  get(scope: string, key: string | string[], callback?: Callback): unknown {
    const cb = checkCallback(callback)
    if (!this.config.cache) {
      if (!cb) throw new Error('State store context cache disabled - only asynchronous access supported')
      this.whenLoaded()
        .then(() => this.getUncached(scope, key))
        .then(
          (values) => (Array.isArray(key) ? cb(undefined, ...values) : cb(undefined, values[0])),
          (err: Error) => cb(err),
        )
      return undefined
    }
    if (!this.loaded) {
      if (!cb) throw this.notLoaded()
      this.whenLoaded().then(
        () => this.get(scope, key, cb),
        (err: Error) => cb(err),
      )
      return undefined
    }
    const data = this.data.get(scope)
    if (!Array.isArray(key)) {
      let value: unknown
      try {
        value = read(data, key)
      } catch (err) {
        if (!cb) throw err
        cb(err as Error)
        return undefined
      }
      if (!cb) return value
      cb(undefined, value)
      return undefined
    }
    const values: unknown[] = []
    for (const k of key) {
      try {
        values.push(read(data, k))
      } catch (err) {
        if (!cb) throw err
        cb(err as Error)
        return undefined
      }
    }
    if (!cb) return values
    cb(undefined, ...values)
    return undefined
  }

  /**
   * With a callback, it is called once the value is stored and, for a new or deleted key, once the
   * index says so: `keys`, `delete` and `clean` in any runtime sharing the prefix see it.
   */
  set(scope: string, key: string | string[], value: unknown, callback?: Callback): void {
    const cb = checkCallback(callback)
    const keys = Array.isArray(key) ? key : [key]
    const values = Array.isArray(key) ? (Array.isArray(value) ? (value as unknown[]) : [value]) : [value]
    let paths: Array<readonly Segment[]>
    try {
      paths = keys.map((k) => parsePath(k))
    } catch (err) {
      if (cb) return cb(err as Error)
      // as localfilesystem: only the cached store throws from set; without it the refusal is logged
      if (this.config.cache) throw err
      this.config.logger('warn', this.named(err, `setting ${scope}/${String(key)}`).message)
      return
    }
    if (!this.loaded) return this.defer(() => this.set(scope, key, value, cb), cb)
    let writes: Array<Promise<void>>
    try {
      if (!this.config.cache) {
        const done = this.setUncached(scope, paths, keys.map((_, i) => (i < values.length ? values[i] : null)))
        if (cb) done.then(() => cb(), (err: Error) => cb(err))
        else done.catch((err: unknown) => this.config.logger('error', this.named(err, `setting ${scope}/${String(key)}`).message))
        return
      }
      const data = this.scopeData(scope)
      const touched = new Set<string>()
      paths.forEach((parts, i) => {
        if (setPath(data, parts, i < values.length ? values[i] : null)) touched.add(String(parts[0]))
      })
      writes = [...touched].map((top) => this.write(scope, top, this.encode(scope, data[top]), !cb))
    } catch (err) {
      if (!cb) throw err
      cb(err as Error)
      return
    }
    if (cb) {
      Promise.all(writes).then(
        () => cb(),
        (err: Error) => cb(err),
      )
    }
  }

  keys(scope: string, callback?: Callback): unknown {
    const cb = checkCallback(callback)
    if (!this.config.cache) {
      if (!cb) throw new Error('Callback must be a function')
      this.whenLoaded()
        .then(() => this.index!.read())
        .then(
          (state) => cb(null, withoutMethods(scope, [...(state.get(scope) ?? [])])),
          (err: Error) => cb(err instanceof ContextNotLoadedError ? err : this.named(err, 'reading the key index')),
        )
      return undefined
    }
    if (!this.loaded) {
      if (!cb) throw this.notLoaded()
      this.whenLoaded().then(
        () => this.keys(scope, cb),
        (err: Error) => cb(err),
      )
      return undefined
    }
    const keys = withoutMethods(scope, Object.keys(this.data.get(scope) ?? {}))
    if (!cb) return keys
    cb(null, keys)
    return undefined
  }

  /** Deletes every key of the scope. Before the store has loaded, it is held and applied after, in order with the writes. */
  async delete(scope: string): Promise<void> {
    if (!this.loaded) return this.defer(() => void this.delete(scope).catch((err: Error) => this.config.logger('error', err.message)))
    const tops = new Set(Object.keys(this.data.get(scope) ?? {}))
    const indexed = this.config.cache ? this.index?.current.get(scope) : (await this.requireOpen(), await this.index!.read()).get(scope)
    for (const top of indexed ?? []) tops.add(top)
    this.data.delete(scope)
    try {
      await Promise.all([...tops].map((top) => this.write(scope, top, null, false)))
    } catch (err) {
      throw this.named(err, `deleting the context ${scope}`)
    }
  }

  /** Deletes the context of every node (and flow) not in `activeNodes`; global stays. Held until loaded, as delete is. */
  async clean(activeNodes: string[]): Promise<void> {
    if (!this.loaded) return this.defer(() => void this.clean(activeNodes).catch((err: Error) => this.config.logger('error', err.message)))
    const active = new Set(activeNodes)
    const scopes = new Set(this.data.keys())
    const indexed = this.config.cache ? this.index?.current : this.index ? await this.index.read() : undefined
    for (const scope of indexed?.keys() ?? []) scopes.add(scope)
    const gone = [...scopes].filter((scope) => scope !== 'global' && !active.has(scope.split(':')[0]!))
    await Promise.all(gone.map((scope) => this.delete(scope)))
  }

  // ---- cache ----

  private scopeData(scope: string): Scope {
    let data = this.data.get(scope)
    if (!data) {
      data = Object.create(null) as Scope
      this.data.set(scope, data)
    }
    return data
  }

  private state(scope: string, top: string): KeyState {
    const serviceKey = `${this.config.prefix}${scope}/${top}`
    let state = this.states.get(serviceKey)
    if (!state) {
      state = { scope, top, serviceKey, version: null, exists: null, seen: 0, inflight: null, next: null, remote: null, observed: null, watching: false, doubt: false, rereading: false }
      this.states.set(serviceKey, state)
    }
    return state
  }

  /** Registers for the key's notifications (once); with the cache only. */
  private observe(state: KeyState): Promise<Observation | null> {
    if (!this.config.cache || !this.client) return Promise.resolve(null)
    const client = this.client
    state.observed ??= this.limiter.run(() => client.observe(state.serviceKey, (n) => this.onNotification(state, n))).then(
      (observation) => {
        state.watching = true
        return observation
      },
      (err: unknown) => {
        state.observed = null
        throw err
      },
    )
    return state.observed
  }

  /** Reads a key someone else wrote into the cache (observing it first, so no later change is missed). */
  private async load(scope: string, top: string): Promise<void> {
    const state = this.state(scope, top)
    await this.observe(state)
    if (state.inflight || state.next) return // our own write is newer than anything a read could bring
    const seen = state.seen
    const { value, version } = await this.limiter.run(() => this.client!.get(state.serviceKey))
    if (state.seen !== seen || state.inflight || state.next) return
    this.apply(state, value, version)
    if (value === null) void this.index?.check(scope, top, false).catch(() => {}) // logged by the index
  }

  private onNotification(state: KeyState, n: KeyNotification): void {
    state.seen += 1
    const bytes = n.operation === 'SET' ? n.value : null
    if (state.inflight || state.next) {
      if (!state.remote || newer(n.version, state.remote.version)) state.remote = { bytes, version: n.version }
      return
    }
    this.apply(state, bytes, n.version)
  }

  /** Puts what the service holds into the cache, unless the cache already holds something newer. */
  private apply(state: KeyState, bytes: Buffer | null, version: Hlc | null): void {
    if (version && state.version && Hlc.compare(version, state.version) < 0) return
    if (bytes !== null && version && state.version && Hlc.compare(version, state.version) === 0) return
    state.doubt = false
    state.version = version
    state.exists = version ? bytes !== null : null
    if (bytes === null) {
      const data = this.data.get(state.scope)
      if (data) delete data[state.top]
    } else {
      this.scopeData(state.scope)[state.top] = decodeAuto(bytes)
    }
  }

  /**
   * What this runtime knows of a key from its own last write and the notifications since, for the
   * index to use instead of reading the key (docs/context.md, keys()); null when it cannot know.
   */
  private known(scope: string, top: string): Known | null {
    const state = this.states.get(`${this.config.prefix}${scope}/${top}`)
    if (!this.config.cache || !state?.watching || !state.version || state.exists === null) return null
    const remote = state.remote
    if (remote && newer(remote.version, state.version)) return remote.version ? { exists: remote.bytes !== null, version: remote.version } : null
    return { exists: state.exists, version: state.version }
  }

  /** Others changed the index: load the keys they added; have a key we hold that they removed checked again. */
  private onIndex(added: IndexEntry[], removed: IndexEntry[]): void {
    if (!this.config.cache || this.closing) return
    for (const { scope, top } of added) {
      const data = this.data.get(scope)
      if (data && Object.hasOwn(data, top)) continue
      const state = this.states.get(`${this.config.prefix}${scope}/${top}`)
      if (state?.inflight || state?.next) continue
      this.load(scope, top).catch((err: unknown) => this.config.logger('warn', `${this.named(err, `loading ${scope}/${top}`).message}`))
    }
    for (const { scope, top } of removed) {
      // the one race: they deleted it and checked it out while we wrote it again
      if (Object.hasOwn(this.data.get(scope) ?? {}, top)) void this.index?.check(scope, top, true).catch(() => {}) // logged by the index
    }
  }

  // ---- writes ----

  private encode(scope: string, value: unknown): Buffer | null {
    if (value === undefined) return null
    return encodeJson(value, () => {
      if (this.warnedCircular.has(scope)) return
      this.warnedCircular.add(scope)
      this.config.logger('warn', `context ${scope} contains a circular reference that cannot be persisted; the property that refers back is left out, as localfilesystem does`)
    })
  }

  /**
   * Queues a write (null deletes). Writes of one key go out one at a time, in order; a write queued
   * behind another replaces a queued one (its value is newer) and both callers hear when it lands.
   * `log`: nobody waits for the result, so a failure is logged, once, with the key.
   */
  private write(scope: string, top: string, bytes: Buffer | null, log: boolean): Promise<void> {
    const state = this.state(scope, top)
    const done = new Promise<void>((resolve, reject) => {
      const waiter = (err?: Error) => (err ? reject(err) : resolve())
      if (state.next) {
        state.next.bytes = bytes
        state.next.waiters.push(waiter)
      } else {
        state.next = { bytes, waiters: [waiter] }
      }
    })
    if (!state.inflight) state.inflight = this.pump(state)
    if (log) {
      done.catch((err: unknown) => this.config.logger('error', this.named(err, `writing ${state.serviceKey}`).message))
    }
    return done
  }

  private async pump(state: KeyState): Promise<void> {
    while (state.next) {
      const job = state.next
      state.next = null
      try {
        const client = await this.requireOpen()
        await this.observe(state)
        let version: Hlc | null
        const bytes = job.bytes
        const expired = this.expiry(client)
        if (bytes === null) version = (await this.limiter.run(() => client.del(state.serviceKey), expired)).version
        else version = (await this.limiter.run(() => client.set(state.serviceKey, bytes, { persist: this.config.persist }), expired)).version
        state.doubt = false
        if (version && (!state.version || Hlc.compare(version, state.version) > 0)) {
          state.version = version
          state.exists = bytes !== null
        } else {
          state.exists = null // a delete of nothing has no version: the index reads the key
        }
        // the caller hears once the index agrees: keys, delete and clean anywhere then see the key
        await this.index?.check(state.scope, state.top, job.bytes !== null, false)
        for (const waiter of job.waiters) waiter()
      } catch (err) {
        // The cache already holds what failed to be written, and the service may hold it or not
        // (a timed-out write may have been executed): forget the version, so that the next word of
        // the service, whatever its version, is taken (chaos run, seed 20261125: a SET that timed
        // out while the emulator was killed stayed in the writer's cache, never in the store).
        state.version = null
        state.exists = null
        state.doubt = true
        const error = this.named(err, `writing ${state.serviceKey}`)
        for (const waiter of job.waiters) waiter(error)
      }
    }
    state.inflight = null
    const remote = state.remote
    state.remote = null
    if (remote && this.config.cache) this.apply(state, remote.bytes, remote.version)
    if (state.doubt && this.config.cache) void this.reread(state)
  }

  /**
   * After a failed write: reads the key until the cache holds what the service holds (a
   * notification or a later write of ours settles it too), then has the index check the key, as
   * the write would have (it may have been executed).
   */
  private async reread(state: KeyState): Promise<void> {
    if (state.rereading) return
    state.rereading = true
    try {
      await this.rereadUntilSettled(state)
    } finally {
      state.rereading = false
    }
  }

  private async rereadUntilSettled(state: KeyState): Promise<void> {
    while (state.doubt && !this.closing && this.client && !state.inflight && !state.next) {
      try {
        await this.client.ready({ timeoutMs: this.config.requestTimeoutMs })
        await this.load(state.scope, state.top)
      } catch (err) {
        if (this.closing) return
        // while the broker is away the failed write itself was reported; a read that fails while connected is news
        if (this.client?.status.state === 'connected') this.config.logger('warn', `${this.named(err, `reading ${state.scope}/${state.top} again after a failed write`).message}; retrying`)
        await new Promise((resolve) => setTimeout(resolve, RELOAD_MS))
        continue
      }
      // still in doubt: load() found a write of ours queued meanwhile, which settles the key
      if (state.doubt) return
      if (state.exists) void this.index?.check(state.scope, state.top, true).catch(() => {}) // logged by the index
      return
    }
  }

  /**
   * A write that waited in the store's queue longer than the request timeout while the connection
   * is down fails at once, as it would have had it been sent: a burst during an outage is reported
   * within about one request timeout, not one timeout per queue-full.
   */
  private expiry(client: StateStoreClient): () => Error | null {
    const deadline = Date.now() + this.config.requestTimeoutMs
    return () =>
      Date.now() > deadline && client.status.state !== 'connected'
        ? new Error(`not connected (${client.status.reason ?? client.status.state}) for ${this.config.requestTimeoutMs} ms`)
        : null
  }

  private async drain(): Promise<void> {
    for (;;) {
      const pending = [...this.states.values()].flatMap((s) => (s.inflight ? [s.inflight] : []))
      if (pending.length === 0 && !this.index?.busy) break
      await Promise.all([...pending, this.index?.flush()])
    }
  }

  // ---- without cache ----

  private async getUncached(scope: string, key: string | string[]): Promise<unknown[]> {
    const keys = Array.isArray(key) ? key : [key]
    const paths = keys.map((k) => parsePath(k))
    const client = await this.requireOpen()
    return Promise.all(
      paths.map(async (parts) => {
        const { value } = await this.limiter.run(() => client.get(this.state(scope, String(parts[0])).serviceKey)).catch((err: unknown) => {
          throw this.named(err, `reading ${scope}/${String(parts[0])}`)
        })
        return value === null ? undefined : getPath(decodeAuto(value), parts, 1)
      }),
    )
  }

  /** Read-modify-write per top-level key (reads only for nested paths). */
  private async setUncached(scope: string, paths: Array<readonly Segment[]>, values: unknown[]): Promise<void> {
    const client = await this.requireOpen()
    const byTop = new Map<string, number[]>()
    paths.forEach((parts, i) => {
      const top = String(parts[0])
      byTop.set(top, [...(byTop.get(top) ?? []), i])
    })
    await Promise.all(
      [...byTop].map(async ([top, indices]) => {
        const holder = Object.create(null) as Scope
        if (indices.some((i) => paths[i]!.length > 1)) {
          const { value } = await this.limiter.run(() => client.get(this.state(scope, top).serviceKey))
          if (value !== null) holder[top] = decodeAuto(value)
        }
        for (const i of indices) setPath(holder, paths[i]!, values[i])
        await this.write(scope, top, this.encode(scope, holder[top]), false)
      }),
    )
  }

  private async requireOpen(): Promise<StateStoreClient> {
    if (!this.client) throw new Error(`state store context ${this.config.prefix}: not open`)
    return this.client
  }

  /** Errors name the store (its prefix), so a log line tells which context store failed. */
  private named(err: unknown, what: string): Error {
    const message = err instanceof Error ? err.message : String(err)
    const error = new Error(`state store context ${this.config.prefix}: ${what}: ${message}`)
    if (err instanceof Error) {
      error.cause = err
      const code = (err as { code?: unknown }).code
      if (code !== undefined) (error as Error & { code?: unknown }).code = code
    }
    return error
  }
}

/** As Node-RED's stores: a callback that is given must be a function (a falsy one means none). */
function checkCallback(callback: unknown): Callback | undefined {
  if (!callback) return undefined
  if (typeof callback !== 'function') throw new TypeError('Callback must be a function')
  return callback as Callback
}

/** As the memory store: the global context object's own methods are never listed as keys. */
function withoutMethods(scope: string, keys: string[]): string[] {
  return scope === 'global' ? keys.filter((k) => k !== 'set' && k !== 'get' && k !== 'keys') : keys
}

function newer(a: Hlc | null, b: Hlc | null): boolean {
  return !a || !b || Hlc.compare(a, b) > 0
}

/** Node-RED's getObjectProperty for a context: only a malformed key throws. */
function read(data: Scope | undefined, key: string): unknown {
  if (PLAIN.test(key)) return data?.[key]
  const parts = parsePath(key)
  return data ? getPath(data, parts) : undefined
}


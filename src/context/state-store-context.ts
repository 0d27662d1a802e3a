import { StateStoreClient, type ClientOptions } from '../client'
import { shownUrl } from '../diagnostics/log'
import { CachedStore } from './cached-store'
import { resolveConfig, type ContextStoreConfig, type ResolvedConfig } from './config'
import { BUCKETS } from './index-format'
import { KeyIndex } from './key-index'
import { Limiter } from './limiter'
import { LoadGate } from './load-gate'
import { ContextNotLoadedError, notLoadedMessage } from './not-loaded'
import { parsePath, type Segment } from './path'
import { named, type Session } from './session'
import { UncachedStore } from './uncached-store'

type Callback = (err?: Error | null, ...values: unknown[]) => void

/** How often loading is tried again after it failed (the broker went away mid-load). */
const RELOAD_MS = 1000

/**
 * A Node-RED context store on the state store (docs/context.md): the Store API over a load gate
 * (load-gate.ts), answered by the cache (cached-store.ts) or, with `cache: false`, by the service
 * (uncached-store.ts). Each top-level context key is one service key, `<prefix><scope>/<key>`,
 * holding the value as JSON; an index lists the keys of every scope (key-index.ts).
 */
export class StateStoreContext {
  private readonly config: ResolvedConfig
  private readonly session: Session
  private readonly cached: CachedStore | null
  private readonly uncached: UncachedStore | null
  private readonly gate: LoadGate
  /** Hands the embedded emulator back; set while this store uses one. */
  private releaseEmbedded: (() => void) | null = null
  private opening: Promise<void> | null = null
  private closed: Promise<void> | null = null
  private brokerUrl = ''

  constructor(config?: ContextStoreConfig) {
    this.config = resolveConfig(config)
    // requests of this store at once: half the client's limit, the rest of a burst waits in the limiter
    const limiter = new Limiter(Math.max(1, Math.floor((this.config.client.maxInFlight ?? 1000) / 2)))
    this.session = {
      config: this.config,
      limiter,
      client: null,
      index: null,
      closing: false,
      warnedCircular: new Set(),
    }
    this.cached = this.config.cache ? new CachedStore(this.session) : null
    this.uncached = this.config.cache ? null : new UncachedStore(this.session)
    this.gate = new LoadGate(this.config.requestTimeoutMs, () => this.notLoaded())
  }

  get prefix(): string {
    return this.config.prefix
  }

  /**
   * Connects and loads. When the broker cannot be reached, resolves anyway (Node-RED starts) and
   * keeps trying in the background: until the store has loaded, calls behave as docs/context.md,
   * "Opening with the broker down", says. Calling it again returns the same promise.
   */
  open(): Promise<void> {
    this.opening ??= this.start()
    return this.opening
  }

  private async start(): Promise<void> {
    const { client: options, logger, requestTimeoutMs } = this.config
    let brokerUrl = options.brokerUrl
    let connectStream: ClientOptions['connectStream']
    if (this.config.embedded) {
      // The emulator's module graph (aedes among it) is loaded only by a store that embeds one.
      const { acquireEmbedded, releaseEmbedded, inProcessConnector } =
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        require('../emulator/embedded') as typeof import('../emulator/embedded')
      const emulator = await acquireEmbedded(logger)
      this.releaseEmbedded = releaseEmbedded
      brokerUrl = emulator.brokerUrl
      connectStream = inProcessConnector(brokerUrl) ?? undefined
    }
    this.brokerUrl = shownUrl(brokerUrl!)
    const client = new StateStoreClient({
      ...options,
      brokerUrl: brokerUrl!,
      ...(connectStream ? { connectStream } : {}),
    })
    client.on('error', (err) => logger('warn', err.message))
    this.session.client = client
    const cache = this.cached?.cache
    this.session.index = new KeyIndex(
      client,
      this.config,
      this.session.limiter,
      (added, removed) => cache?.onIndex(added, removed),
      (scope, top) => cache?.known(scope, top) ?? null,
      () => cache?.held() ?? { held: new Map(), busy: new Set() },
    )
    // Node-RED waits for open() before it starts the flows: wait for the broker as long as a request would
    const connected = await client.ready({ timeoutMs: requestTimeoutMs }).then(
      () => true,
      () => false,
    )
    if (connected) {
      try {
        await this.loadAll()
        logger('info', this.loadedLine())
        this.gate.open()
        return
      } catch (err) {
        logger('warn', named(this.session, err, 'loading the stored context').message)
      }
    } else {
      const reason = client.status.reason ? ` (${client.status.reason})` : ''
      logger(
        'warn',
        `state store context ${this.config.prefix}: waiting for its broker ${this.brokerUrl}${reason}; until it ` +
          `connects and the context is loaded, reads wait or fail and writes are held`,
      )
    }
    void this.loadInBackground()
  }

  /** Reads the index and, with the cache, every value; safe to call again after a failure. */
  private async loadAll(): Promise<void> {
    const index = this.session.index!
    await index.open()
    if (!this.cached) return
    await this.cached.cache.loadAll(
      [...index.current].flatMap(([scope, tops]) => [...tops].map((top) => [scope, top] as const)),
    )
  }

  private async loadInBackground(): Promise<void> {
    const client = this.session.client!
    while (!this.session.closing) {
      try {
        await client.ready({ timeoutMs: this.config.requestTimeoutMs })
      } catch {
        continue // still down: wait again
      }
      try {
        await this.loadAll()
        if (this.session.closing) return
        this.config.logger(
          'info',
          `state store context ${this.config.prefix}: connected to ${this.brokerUrl}; ${this.loadedLine(false)}`,
        )
        this.gate.open()
        return
      } catch (err) {
        if (this.session.closing) return
        this.config.logger('warn', `${named(this.session, err, 'loading the stored context').message}; retrying`)
        await new Promise((resolve) => setTimeout(resolve, RELOAD_MS))
      }
    }
  }

  /** The load in one line: what was registered and read, so a start says what it cost instead of a line per request. */
  private loadedLine(named = true): string {
    const keys = [...this.session.index!.current.values()].reduce((n, tops) => n + tops.size, 0)
    const what = this.cached
      ? `the context is loaded: ${keys} key(s), ${keys + 1} registration(s) (the index's and one per key), ` +
        `${BUCKETS + 1 + keys} read(s)`
      : `the context is loaded: ${keys} key(s) listed (without the cache, values are read when asked)`
    return named ? `state store context ${this.config.prefix}: ${what}` : what
  }

  private notLoaded(): ContextNotLoadedError {
    const status = this.session.client?.status
    const why =
      status?.state === 'connected'
        ? { loading: this.cached?.cache.progress ?? null }
        : { waiting: { brokerUrl: this.brokerUrl, reason: status?.reason } }
    return new ContextNotLoadedError(notLoadedMessage(this.config.prefix, why, this.config.requestTimeoutMs))
  }

  /** Waits for every write and index update, then disconnects. Calling it again returns the same promise. */
  close(): Promise<void> {
    this.closed ??= this.shutdown()
    return this.closed
  }

  private async shutdown(): Promise<void> {
    this.session.closing = true
    const dropped = this.gate.drop(
      new ContextNotLoadedError(`state store context ${this.config.prefix}: closed before its context was loaded`),
    )
    if (dropped > 0)
      this.config.logger(
        'error',
        `state store context ${this.config.prefix}: closed before its context was loaded; ${dropped} change(s) made ` +
          `meanwhile were not applied`,
      )
    this.session.index?.stopping()
    await this.opening?.catch(() => {})
    await (this.cached?.cache ?? this.uncached!).drain()
    await this.session.index?.close()
    await this.session.client?.close()
    this.session.client = null
    const release = this.releaseEmbedded
    this.releaseEmbedded = null
    release?.()
  }

  get(scope: string, key: string | string[], callback?: Callback): unknown {
    // The hot path, a Function node's global.get('key'): one key, no callback, from the cache.
    if (callback === undefined && typeof key === 'string' && this.cached && this.gate.loaded)
      return this.cached.get(scope, key)
    const cb = checkCallback(callback)
    if (!this.cached) {
      if (!cb) throw new Error('State store context cache disabled - only asynchronous access supported')
      const keys = Array.isArray(key) ? key : [key]
      this.gate
        .whenLoaded()
        .then(() =>
          this.uncached!.get(
            scope,
            keys.map((k) => parsePath(k)),
          ),
        )
        .then(
          (values) => (Array.isArray(key) ? cb(undefined, ...values) : cb(undefined, values[0])),
          (err: Error) => cb(err),
        )
      return undefined
    }
    if (!this.gate.loaded) {
      if (!cb) throw this.notLoaded()
      this.gate.whenLoaded().then(
        () => this.get(scope, key, cb),
        (err: Error) => cb(err),
      )
      return undefined
    }
    // the synchronous read of one key is the hot path: no array, no closure
    let value: unknown
    try {
      value = Array.isArray(key) ? this.cached.getAll(scope, key) : this.cached.get(scope, key)
    } catch (err) {
      if (!cb) throw err
      cb(err as Error)
      return undefined
    }
    if (!cb) return value
    if (Array.isArray(key)) cb(undefined, ...(value as unknown[]))
    else cb(undefined, value)
    return undefined
  }

  /**
   * With a callback, it is called once the value is stored and, for a new or deleted key, once the
   * index says so: `keys`, `delete` and `clean` in any runtime sharing the prefix see it.
   */
  set(scope: string, key: string | string[], value: unknown, callback?: Callback): void {
    const cb = checkCallback(callback)
    const keys = Array.isArray(key) ? key : [key]
    const given: unknown[] = Array.isArray(key) ? (Array.isArray(value) ? value : [value]) : [value]
    const values = keys.map((_, i) => (i < given.length ? given[i] : null))
    let paths: Array<readonly Segment[]>
    try {
      paths = keys.map((k) => parsePath(k))
    } catch (err) {
      if (cb) return cb(err as Error)
      // as localfilesystem: only the cached store throws from set; without it the refusal is logged
      if (this.cached) throw err
      this.config.logger('warn', named(this.session, err, `setting ${scope}/${String(key)}`).message)
      return
    }
    if (!this.gate.loaded) return this.gate.hold(() => this.set(scope, key, value, cb), cb)
    if (!this.cached) {
      const done = this.uncached!.set(scope, paths, values)
      if (cb)
        done.then(
          () => cb(),
          (err: Error) => cb(err),
        )
      else
        done.catch((err: unknown) =>
          this.config.logger('error', named(this.session, err, `setting ${scope}/${String(key)}`).message),
        )
      return
    }
    let writes: Array<Promise<void>>
    try {
      writes = this.cached.set(scope, paths, values, !cb)
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
    if (!this.cached) {
      if (!cb) throw new Error('Callback must be a function')
      this.gate
        .whenLoaded()
        .then(() => this.uncached!.keys(scope))
        .then(
          (keys) => cb(null, keys),
          (err: Error) =>
            cb(err instanceof ContextNotLoadedError ? err : named(this.session, err, 'reading the key index')),
        )
      return undefined
    }
    if (!this.gate.loaded) {
      if (!cb) throw this.notLoaded()
      this.gate.whenLoaded().then(
        () => this.keys(scope, cb),
        (err: Error) => cb(err),
      )
      return undefined
    }
    const keys = this.cached.keys(scope)
    if (!cb) return keys
    cb(null, keys)
    return undefined
  }

  /**
   * Deletes every key of the scope. Before the store has loaded, it is held and applied after, in order with the
   * writes.
   */
  async delete(scope: string): Promise<void> {
    if (!this.gate.loaded)
      return this.gate.hold(
        () => void this.delete(scope).catch((err: Error) => this.config.logger('error', err.message)),
      )
    return (this.cached ?? this.uncached!).delete(scope)
  }

  /**
   * Deletes the context of every node (and flow) not in `activeNodes`; global stays. Held until loaded, as delete is.
   */
  async clean(activeNodes: string[]): Promise<void> {
    if (!this.gate.loaded)
      return this.gate.hold(
        () => void this.clean(activeNodes).catch((err: Error) => this.config.logger('error', err.message)),
      )
    return (this.cached ?? this.uncached!).clean(activeNodes)
  }
}

/** As Node-RED's stores: a callback that is given must be a function (a falsy one means none). */
function checkCallback(callback: unknown): Callback | undefined {
  if (!callback) return undefined
  if (typeof callback !== 'function') throw new TypeError('Callback must be a function')
  return callback as Callback
}

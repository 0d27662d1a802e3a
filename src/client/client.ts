import { ArgumentError, ConnectionError, TimeoutError } from '../diagnostics/errors'
import type { HybridLogicalClock } from '../hlc'
import { notificationFilter, Prop, userProperty, type Bytes, type ProtocolName } from '../protocol'
import { cancelledBy, requirePositive } from '../checks/arguments'
import { backoffDelay } from './backoff'
import { Connection } from './connection'
import { del } from './del'
import { get } from './get'
import { NotificationTrust } from './notification-trust'
import { Notifications } from './notifications'
import { resolveOptions, type ResolvedOptions } from './options'
import { PendingRequests, type Invoker } from './pending-requests'
import { KeyScan } from './scan'
import { checkService, type ServiceCheck } from './service-check'
import { set } from './set'
import { TypedEmitter } from '../lang/typed-emitter'
import type {
  ClientOptions,
  ConnectionStatus,
  DeleteOptions,
  DeleteResult,
  GetResult,
  KeyNotification,
  NotificationListener,
  Observation,
  RequestOptions,
  SetOptions,
  SetResult,
} from './types'
import { vdel } from './vdel'

export type ClientEvents = {
  status: [ConnectionStatus]
  /** Every notification this client receives, including reconciled ones. */
  notification: [KeyNotification]
  /** Problems with no caller to report to: a listener that threw, a failed re-registration. Never emitted without a listener. */
  error: [Error]
}

/**
 * A client of the Azure IoT Operations state store over one MQTT 5 connection. It starts
 * connecting at once; requests made before it is connected wait for the connection (up to their
 * timeout).
 */
export class StateStoreClient extends TypedEmitter<ClientEvents> {
  readonly clientId: string
  readonly clock: HybridLogicalClock
  private readonly options: ResolvedOptions
  private readonly connection: Connection
  private readonly requests: PendingRequests
  private readonly notifications: Notifications
  private readonly trust: NotificationTrust
  /** The requests' invoker (timed by the request layer when the options ask for metrics). */
  private readonly invoke: Invoker
  private closing: Promise<void> | null = null
  /** The next service check while none answers (ClientOptions.checkService). */
  private recheck: NodeJS.Timeout | undefined
  private rechecks = 0

  constructor(options: ClientOptions) {
    super()
    this.options = resolveOptions(options)
    this.clientId = this.options.clientId
    this.clock = this.options.clock
    const { dialect } = this.options
    const responseTopic = dialect.responseTopic(this.clientId)
    this.connection = new Connection(this.options, dialect.notifications ? [responseTopic, notificationFilter(this.clientId)] : [responseTopic])
    this.requests = new PendingRequests(this.connection, this.options, responseTopic, undefined, options.metrics)
    this.invoke = this.requests.invoke
    this.trust = new NotificationTrust(this.clock)
    this.notifications = new Notifications(
      this.invoke,
      this.options,
      () => this.connection.online,
      (n) => this.emit('notification', n),
      (err) => this.emitError(err),
      this.trust,
    )
    this.connection.on('message', (topic, payload, packet) => {
      if (topic === responseTopic) {
        // An answer's node id is the service's: notifications from it are taken at once.
        this.trust.answered(userProperty(packet.properties, Prop.timestamp))
        this.requests.handleResponse(payload, packet)
      } else this.notifications.handle(topic, payload, packet)
    })
    this.connection.on('online', ({ resumed, first }) => {
      this.requests.onOnline(resumed, first)
      this.notifications.onOnline(first)
      if (this.options.checkService) this.watchService(0)
    })
    this.connection.on('offline', () => {
      clearTimeout(this.recheck)
      this.notifications.onOffline()
    })
    this.connection.on('status', () => this.emit('status', this.status))
    this.requests.onServiceChange = () => {
      if (this.connection.online) this.emit('status', this.status)
    }
  }

  /** Checks for a service now, and again with backoff (1 s to 60 s) for as long as the broker says there is none. */
  private watchService(rechecks: number): void {
    clearTimeout(this.recheck)
    this.rechecks = rechecks
    void this.checkService().then(
      (found) => {
        if (found !== 'none' || this.closing || !this.connection.online) return
        this.recheck = setTimeout(() => this.watchService(this.rechecks + 1), backoffDelay(this.rechecks, 1000, 60_000))
        this.recheck.unref()
      },
      () => {},
    )
  }

  /**
   * Whether a state store answers on this connection (service-check.ts): `answered`, `none` (the
   * broker says nobody is subscribed to the request topic) or `silent` (no answer within the
   * timeout, default the request timeout).
   */
  checkService(options: { timeoutMs?: number } = {}): Promise<ServiceCheck> {
    return checkService(this.requests.invoke, requirePositive(options.timeoutMs, 'timeoutMs') ?? this.options.requestTimeoutMs)
  }

  /** The dialect this client speaks (ClientOptions.protocol). */
  get protocol(): ProtocolName {
    return this.options.dialect.name
  }

  /** Whether observe() can work: the preview dialect has no KEYNOTIFY. */
  get canObserve(): boolean {
    return this.options.dialect.notifications
  }

  get status(): ConnectionStatus {
    const status = this.connection.status
    if (status.state !== 'connected' || !this.requests.serviceAbsent) return status
    return {
      ...status,
      problem: 'noService',
      reason: 'connected, but no state store service is subscribed to the request topic: is this the broker with the state store?',
    }
  }

  /**
   * Notifications dropped as not the service's: no valid version, or a version further ahead than
   * the service accepts for a request.
   */
  get droppedNotifications(): number {
    return this.trust.dropped
  }

  /** Changes of observed keys whose notification never came while connected, found by the periodic reads (reconcileIntervalMs). */
  get lostNotifications(): number {
    return this.notifications.lost
  }

  /** Requests admitted (sent or waiting for the connection) and requests waiting for a free slot. */
  get load(): { inFlight: number; queued: number } {
    return this.requests.size
  }

  /** What the requests waiting for a free slot are counted at: each its payload and 512 bytes, against maxQueuedBytes. */
  get queuedBytes(): number {
    return this.requests.queuedBytes
  }

  /** Resolves once connected with every subscription acknowledged. */
  ready(options: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<void> {
    const timeoutMs = requirePositive(options.timeoutMs, 'timeoutMs')
    return new Promise<void>((resolve, reject) => {
      if (this.connection.online) return resolve()
      if (this.connection.closed) return reject(new ConnectionError('ConnectionClosed', 'the client was closed'))
      if (options.signal?.aborted) return reject(cancelledBy(options.signal, 'waiting for the connection'))
      const finish = (err?: Error) => {
        this.connection.off('online', onOnline)
        this.connection.off('status', onStatus)
        options.signal?.removeEventListener('abort', onAbort)
        clearTimeout(timer)
        if (err) reject(err)
        else resolve()
      }
      const onOnline = () => finish()
      const onStatus = (s: ConnectionStatus) => {
        if (s.state === 'closed') finish(new ConnectionError('ConnectionClosed', 'the client was closed'))
      }
      const onAbort = () => finish(cancelledBy(options.signal!, 'waiting for the connection'))
      const timer =
        timeoutMs === undefined
          ? undefined
          : setTimeout(() => {
              const err = new TimeoutError(timeoutMs, 'connecting')
              const s = this.connection.status
              if (s.reason) err.message += ` (${s.problem === 'authFailed' ? 'authentication failed: ' : ''}${s.reason})`
              finish(err)
            }, timeoutMs)
      this.connection.on('online', onOnline)
      this.connection.on('status', onStatus)
      options.signal?.addEventListener('abort', onAbort, { once: true })
    })
  }

  get(key: Bytes, options?: RequestOptions): Promise<GetResult> {
    return get(this.invoke, key, options)
  }

  set(key: Bytes, value: Bytes, options?: SetOptions): Promise<SetResult> {
    return set(this.invoke, key, value, options)
  }

  del(key: Bytes, options?: DeleteOptions): Promise<DeleteResult> {
    return del(this.invoke, key, options)
  }

  vdel(key: Bytes, value: Bytes, options?: DeleteOptions): Promise<DeleteResult> {
    return vdel(this.invoke, key, value, options)
  }

  /**
   * The keys matching a glob over the whole key (`*`, `?`, `[a-z]`, `[!…]`), page by page:
   * `for await (const keys of client.scan('sensor/*'))`. Each page is one request, made when asked
   * for. Every key that exists for the whole scan comes at least once; keys that are not UTF-8
   * never. A state store without SCAN (the released AIO broker) fails the first page with
   * NotSupportedError.
   */
  scan(pattern: Bytes, options?: RequestOptions): KeyScan {
    return new KeyScan(this.invoke, pattern, options)
  }

  /**
   * Calls `listener` for every change of `key` until the returned observation is closed. Any
   * number of listeners per key share one KEYNOTIFY registration. After a reconnect, changes
   * missed meanwhile arrive as one notification with `reconciled: true`.
   */
  observe(key: Bytes, listener: NotificationListener, options?: RequestOptions): Promise<Observation> {
    if (!this.canObserve)
      return Promise.reject(new ArgumentError(`key notifications do not exist in the ${this.protocol} protocol (it has no KEYNOTIFY); use protocol v1`))
    return this.notifications.observe(key, listener, options)
  }

  /** Bounded (2 s), idempotent; pending requests fail with ConnectionError. */
  close(): Promise<void> {
    if (!this.closing) {
      clearTimeout(this.recheck)
      this.notifications.close()
      this.requests.close()
      this.closing = this.connection.close()
    }
    return this.closing
  }
}

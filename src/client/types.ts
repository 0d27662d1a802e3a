import type { Duplex } from 'node:stream'
import type { Hlc, HybridLogicalClock } from '../hlc'
import type { Logger } from '../diagnostics/log'
import type { ProtocolName, SetCondition } from '../protocol'

export type { LogLevel, Logger } from '../diagnostics/log'

/**
 * The client's extension point for figures: told of every request it settles (see
 * ClientOptions.metrics; src/observe's ConnectionMetrics is one).
 */
export interface RequestRecorder {
  /** `error` is set when the request failed (timeout, refusal, connection loss). */
  record(verb: string, latencyMs: number, error?: Error): void
}

export type ConnectionState = 'connecting' | 'connected' | 'reconnecting' | 'disconnected' | 'closed'

export interface ConnectionStatus {
  state: ConnectionState
  /** Why the connection is not (or no longer) up: the broker's reason, a socket error, 'closed by the application'. */
  reason?: string
  error?: Error
  /** What is wrong, when the client can tell; a program tells these apart by this, never by `reason`. */
  problem?: ConnectionProblem
}

/**
 * - `authFailed`: the broker refused our credentials (CONNACK 0x86, 0x87 or 0x8C, or DISCONNECT
 *   with one of them); the client keeps retrying with backoff.
 * - `takenOver`: the broker ended the session because another connection came with the same
 *   client id (DISCONNECT 0x8E); reconnects back off further with every takeover.
 * - `notMqtt`: the peer answered our CONNECT with bytes that are not MQTT, or closed the connection
 *   without a byte (a wrong port, or a TLS listener given plain MQTT).
 * - `tlsExpected`: the peer answered with TLS: the URL says mqtt:// or ws:// for a TLS port.
 * - `tlsUnexpected`: the peer closed our TLS handshake: the URL says mqtts:// or wss:// for a plain port.
 * - `noService`: connected, but the broker said nobody is subscribed to the request topic (a plain
 *   MQTT broker, not the one with the state store) to a service check or a request, and nothing
 *   answered since; requests fail at once with NoServiceError.
 */
export type ConnectionProblem = 'authFailed' | 'takenOver' | 'notMqtt' | 'tlsExpected' | 'tlsUnexpected' | 'noService'

export interface TlsOptions {
  ca?: string | Buffer | Array<string | Buffer>
  cert?: string | Buffer
  key?: string | Buffer
  passphrase?: string
  servername?: string
  rejectUnauthorized?: boolean
}

export interface ClientOptions {
  /** mqtt://, mqtts://, ws://, wss:// */
  brokerUrl: string
  /**
   * Opens the connection's byte stream instead of a socket to `brokerUrl` (which then only names
   * the broker in messages); called again for every reconnect. For a broker in the same process,
   * such as the embedded emulator's (`Emulator.connectInProcess`): no loopback TCP in between.
   */
  connectStream?: () => Duplex
  /** Stable and unique: the service addresses notifications to it, and it is the request `__srcId`. */
  clientId: string
  username?: string
  password?: string | Buffer
  tls?: TlsOptions
  /** K8S-SAT enhanced authentication: the token is read from this file at every connect, and re-sent when the file changes. */
  satTokenFile?: string
  /** Default 60. */
  keepaliveSec?: number
  /** Default true. */
  cleanStart?: boolean
  sessionExpirySec?: number
  /** Reconnect backoff start, default 500 ms; doubles (with jitter) up to reconnectMaxMs, default 2000 ms: a broker back after an outage is found within 2 s. */
  reconnectMinMs?: number
  reconnectMaxMs?: number
  /** How long the broker has to answer a CONNECT, default 10000 ms. */
  connectTimeoutMs?: number
  /** Default per-request timeout, 10000 ms. */
  requestTimeoutMs?: number
  /**
   * How long a request made while the client is not connected waits for the connection before it
   * fails with a ConnectionError naming the reason; 0 fails it at once, and a wait as long as the
   * request's timeout or longer ends at the timeout, with that ConnectionError. Default: unset (the
   * request waits for the connection, then times out with a TimeoutError).
   */
  connectionWaitMs?: number
  /**
   * After every connect, check that a state store answers (one GET of a key nobody uses; a healthy
   * service answers at once). While the broker says nobody is subscribed to the request topic the
   * status carries problem `noService` and the check is repeated, less and less often. Requests
   * never wait for it. Default false.
   */
  checkService?: boolean
  /** Requests admitted at once (sent, or waiting for the connection), default 1000. Beyond it requests wait in a queue. */
  maxInFlight?: number
  /**
   * The memory the requests waiting for a free slot may take, in bytes: each counts its payload
   * and 512 bytes of bookkeeping. Default 80 MiB (50,000 SETs of 1 KB values); a request that would
   * go past it fails at once with OverloadedError (`bound: 'maxQueuedBytes'`).
   */
  maxQueuedBytes?: number
  /** Also bounds the waiting requests by their count (OverloadedError `bound: 'maxQueued'`). Default: none. */
  maxQueued?: number
  /** How far ahead of the wall clock a received `__ts` may be, default 60000 ms. Ignored when `clock` is given. */
  maxClockDriftMs?: number
  /** Share one hybrid logical clock between clients of one application; created if absent. */
  clock?: HybridLogicalClock
  /**
   * The dialect to speak: 'v1' (default; the official clients' protocol) or 'preview' (the 2023
   * public preview's: another request topic, `Timestamp`/`FencingToken` properties, no key
   * notifications). See docs/client.md.
   */
  protocol?: ProtocolName
  /**
   * The user property a SET with `persist: true` carries, as the cluster's Broker resource names it
   * (`spec.persistence.dynamicSettings.userPropertyKey` / `userPropertyValue`); default
   * `{ key: 'aio-persistence', value: 'true' }`.
   */
  persistenceProperty?: PersistenceProperty
  /**
   * The traffic category the broker's metrics count this client's traffic under: the CONNECT user
   * property `metriccategory`. Default `node-red-contrib-aio-statestore`; '' sends none (uncategorized).
   */
  metricCategory?: string
  /**
   * How often every observed key is read again (one at a time) to find a change whose notification
   * was lost while connected (an AIO broker whose subscriber queue limit drops the oldest: DropOldest);
   * a change found is delivered as a notification with `reconciled: true`. Default 300000 (5 min); 0: never.
   */
  reconcileIntervalMs?: number
  /** Told of every request it settles, with its latency: for connection figures (see src/observe). */
  metrics?: RequestRecorder
  /** Diagnostics the client cannot report anywhere else: dropped late responses, re-registration failures. */
  logger?: Logger
}

export interface RequestOptions {
  /** Overrides the client's requestTimeoutMs; also sent as the Message Expiry (rounded up to seconds). */
  timeoutMs?: number
  signal?: AbortSignal
}

/** A user property: its name and value. */
export interface PersistenceProperty {
  key: string
  value: string
}

export interface GetResult {
  /** null when the key does not exist. */
  value: Buffer | null
  /** The key's version; null when the key does not exist. */
  version: Hlc | null
}

export interface SetOptions extends RequestOptions {
  /** `NX`: only if the key does not exist. `NEX`: only if it does not exist or already holds this value. */
  condition?: SetCondition
  /** Whole milliseconds; 0 or undefined for none. */
  expiryMs?: number
  /** Sent as `__ft`: the key is then protected by this token (section 4 of the protocol reference). */
  fencingToken?: Hlc | string
  /** Ask the service to persist the key (`aio-persistence: true`). */
  persist?: boolean
}

export interface SetResult {
  /** false when an NX/NEX condition was not met. */
  applied: boolean
  /** The new version when applied, otherwise the stored one. */
  version: Hlc
}

export interface DeleteOptions extends RequestOptions {
  fencingToken?: Hlc | string
}

export interface DeleteResult {
  /** 1 deleted, 0 no such key, -1 (VDEL) the value did not match. */
  deleted: number
  version: Hlc | null
}

export interface KeyNotification {
  key: Buffer
  operation: 'SET' | 'DELETE'
  value: Buffer | null
  version: Hlc | null
  /** Synthesised after a reconnect from a GET: the change happened while this client was away. */
  reconciled: boolean
}

export type NotificationListener = (notification: KeyNotification) => void

/** The key as read right after its KEYNOTIFY was acknowledged. */
export interface ObservedRead {
  value: Buffer | null
  version: Hlc | null
}

export interface Observation {
  readonly key: Buffer
  /**
   * What this call's registration read (KEYNOTIFY answered, then a GET): null when the key was
   * registered already, the read failed, or a notification came before its answer (the listener
   * has had it, and it is newer than anything read before it).
   */
  readonly initial: ObservedRead | null
  /** Stops this listener; the last listener of a key sends KEYNOTIFY STOP. Idempotent, never rejects. */
  close(): Promise<void>
}

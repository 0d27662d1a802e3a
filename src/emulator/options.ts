import { shownUrl, type Logger } from '../diagnostics/log'
import type { BrokerAuth } from './broker/broker'
import type { TlsListenerOptions } from './broker/tls-listener'
import type { LogThreshold } from './logger'

/** What the emulator holds at most by default: keys and values with their bookkeeping, keys, one value, one key. */
export const DEFAULT_MAX_BYTES = 256 * 1024 * 1024
export const DEFAULT_MAX_KEYS = 1_000_000
/**
 * MQTT's largest packet, and the room a SET's key and properties get beside its value in the embedded broker's Maximum
 * Packet Size.
 */
const MQTT_MAX_PACKET = 268_435_455
const PACKET_ROOM = 1024 * 1024
const MiB = 1024 * 1024

/**
 * The AIO broker's memory profiles and the largest message each lets through (AIO docs, "Configure
 * broker availability and scale": Tiny 4 MB, Low 16 MB, Medium 64 MB, the default, High 256 MB,
 * which MQTT caps at 268,435,455 bytes). The embedded broker announces it as its Maximum Packet Size.
 */
export const MEMORY_PROFILES = {
  tiny: 4 * MiB,
  low: 16 * MiB,
  medium: 64 * MiB,
  high: MQTT_MAX_PACKET,
} as const
export type MemoryProfile = keyof typeof MEMORY_PROFILES
export const DEFAULT_MEMORY_PROFILE: MemoryProfile = 'medium'

/** The largest value a SET may store under a profile: its largest message, less room for the key and properties. */
export function profileValueBytes(profile: MemoryProfile): number {
  return MEMORY_PROFILES[profile] - PACKET_ROOM
}
export const DEFAULT_MAX_VALUE_BYTES = profileValueBytes(DEFAULT_MEMORY_PROFILE)
/**
 * Past any real key (the .NET SDK's integration test stores the longest seen, 6,500 bytes): the nodes' own bound on a
 * key.
 */
export const DEFAULT_MAX_KEY_BYTES = 65_535
/** KEYNOTIFY registrations one client id may hold by default (`--max-registrations`). */
export const DEFAULT_MAX_REGISTRATIONS = 10_000

export interface EmulatorOptions {
  /** Serve through an existing MQTT 5 broker. */
  brokerUrl?: string
  /** Credentials for `brokerUrl`. */
  brokerUsername?: string
  brokerPassword?: string
  /**
   * Start the embedded aedes broker (port 0 = any free port) and serve through it. The default when `brokerUrl` is
   * absent.
   */
  listen?: { host?: string; port: number }
  /** With the embedded broker: no TCP port, only this process reaches it (`listen` is then ignored). */
  inProcessOnly?: boolean
  /**
   * Append-only file for the keys the persistence policy persists (see `brokerConfigFile`) and for KEYNOTIFY
   * registrations.
   */
  persistFile?: string
  /** Key quota (default 1,000,000; Infinity for none). */
  maxKeys?: number
  /**
   * Byte quota over every key and value held and each key's bookkeeping (160 bytes a key, 400 with
   * an expiry or a fencing token; default 256 MiB; Infinity for none): a SET past it is answered as
   * the quota error.
   */
  maxBytes?: number
  /**
   * The AIO broker's memory profile (default `medium`): the largest message the embedded broker
   * takes (tiny 4 MiB, low 16 MiB, medium 64 MiB, high 256 MiB) and the default of maxValueBytes.
   */
  memoryProfile?: MemoryProfile
  /**
   * The largest value a SET may store (default: the memory profile's largest message less 1 MiB,
   * 63 MiB for medium; Infinity for none); a larger one is answered as the quota error.
   */
  maxValueBytes?: number
  /**
   * The longest key a SET may store (default 65,535; Infinity for none); a longer one is answered as the quota error.
   */
  maxKeyBytes?: number
  /**
   * Embedded broker only: connections each listener holds at once (default 1024; Infinity for none); past it a new one
   * is closed at once.
   */
  maxConnections?: number
  /**
   * KEYNOTIFY registrations one client id may hold (default 10,000; Infinity for none); one more is answered as the
   * quota error.
   */
  maxRegistrations?: number
  /** Embedded broker only: how long a TLS listener waits for a client's handshake (default 10,000 ms). */
  tlsHandshakeTimeoutMs?: number
  /**
   * Embedded broker only: the AIO broker's subscriber queue limit for key notifications (Broker
   * `spec.advanced.clients.subscriberQueueLimit`): a subscriber has at most `length` sent and not
   * acknowledged, and at most `length` waiting; with `DropOldest` the oldest waiting one is dropped
   * when another comes, and nothing tells the subscriber. Absent: none (every notification waits).
   */
  subscriberQueue?: { length: number; strategy: 'None' | 'DropOldest' }
  /** HLC node id of the service; a fresh UUID by default. */
  nodeId?: string
  /**
   * Milliseconds the service's clock runs ahead of (negative: behind) this machine's: to rehearse
   * the skew errors of a cluster whose clock is off (beyond 60 s a request is refused as
   * TimestampSkew, or its answer's version is too far ahead for the client). Default 0.
   */
  clockOffsetMs?: number
  /**
   * A BrokerAuthorization resource as applied to a cluster (YAML or JSON, several documents
   * allowed), or its bare `authorizationPolicies` object: who may connect, publish and subscribe
   * (embedded broker only) and read or write which keys. See docs/emulator.md.
   */
  authorizationFile?: string
  /**
   * A Broker resource: its `spec.persistence` says which keys `persistFile` keeps (mode None, All
   * or Custom with key patterns and the dynamic user property). Without it, keys SET with
   * `aio-persistence: true` are kept.
   */
  brokerConfigFile?: string
  /** Embedded broker only: username/password and K8S-SAT tokens accepted. */
  brokerAuth?: BrokerAuth
  /** Embedded broker only: TLS listeners beside the plain one, each with its own authentication (X.509 or K8S-SAT). */
  tlsListeners?: TlsListenerOptions[]
  /** Default `warn`. */
  logLevel?: LogThreshold
  /** Where log lines go; stderr by default. */
  logger?: Logger
  /** Lines of one kind written per 10 s before the rest are only counted (default 20; Infinity writes every line). */
  logBurst?: number
  /** Rewrite the persistence file only once it reaches this size (default 8 MiB). */
  persistCompactMinBytes?: number
  /**
   * Requests waiting for the disk at once (default 10000); beyond it the emulator stops reading from the broker until
   * they drain.
   */
  maxInFlight?: number
  /** Open the admin channel (a key browser for tools in this process, see admin/key-browser.ts). Off by default. */
  admin?: boolean
  /**
   * Also serve the admin channel over MQTT on its own topics (admin/wire.ts), for tools in other
   * processes (the CLI's `--admin`). Implies `admin`. Off by default: for development only, as
   * anyone who can publish to its request topic reads every key.
   */
  adminOverMqtt?: boolean
  /** Keys in one SCAN page at most (default 1000); smaller pages show paging with few keys. */
  scanPageKeys?: number
  /**
   * false: answer SCAN `-ERR unknown command`, as the released AIO broker does (SCAN is ahead of it),
   * to try what a client or tool does without it. Default true.
   */
  scan?: boolean
  /**
   * Keys to put into the store at start (a WASM graph development environment's statestore.json or
   * an `aio-statestore export` file); keys restored from `persistFile` are kept as they are.
   */
  seedFile?: string
}

/** Refuses options that do not go together or are out of range, before anything starts. */
export function checkOptions(options: EmulatorOptions): void {
  if (options.brokerUrl && options.listen) throw new Error('give either brokerUrl or listen, not both')
  if (
    options.maxKeys !== undefined &&
    options.maxKeys !== Infinity &&
    (!Number.isSafeInteger(options.maxKeys) || options.maxKeys < 0)
  ) {
    throw new Error(`maxKeys must be a whole number >= 0, got ${options.maxKeys}`)
  }
  if (
    options.maxKeyBytes !== undefined &&
    options.maxKeyBytes !== Infinity &&
    (!Number.isSafeInteger(options.maxKeyBytes) || options.maxKeyBytes < 1)
  ) {
    throw new Error(`maxKeyBytes must be a whole number >= 1, got ${options.maxKeyBytes}`)
  }
  if (options.memoryProfile !== undefined && !Object.hasOwn(MEMORY_PROFILES, options.memoryProfile)) {
    throw new Error(
      `memoryProfile must be one of ${Object.keys(MEMORY_PROFILES).join(', ')}, got ` +
        `${JSON.stringify(options.memoryProfile)}`,
    )
  }
  const queue = options.subscriberQueue
  if (
    queue !== undefined &&
    (!Number.isSafeInteger(queue.length) ||
      queue.length < 1 ||
      (queue.strategy !== 'None' && queue.strategy !== 'DropOldest'))
  ) {
    throw new Error(
      `subscriberQueue must be { length: a whole number >= 1, strategy: None or DropOldest }, got ` +
        `${JSON.stringify(queue)}`,
    )
  }
  if (queue && options.brokerUrl)
    throw new Error('subscriberQueue applies to the embedded broker only; with brokerUrl your broker queues')
  if (options.clockOffsetMs !== undefined && !Number.isSafeInteger(options.clockOffsetMs)) {
    throw new Error(`clockOffsetMs must be a whole number of milliseconds, got ${options.clockOffsetMs}`)
  }
  if (options.scanPageKeys !== undefined && (!Number.isSafeInteger(options.scanPageKeys) || options.scanPageKeys < 1)) {
    throw new Error(`scanPageKeys must be a whole number >= 1, got ${options.scanPageKeys}`)
  }
  for (const name of ['maxConnections', 'tlsHandshakeTimeoutMs', 'maxRegistrations'] as const) {
    const n = options[name]
    if (n !== undefined && n !== Infinity && (!Number.isSafeInteger(n) || n < 1))
      throw new Error(`${name} must be a whole number >= 1, got ${n}`)
  }
  for (const name of ['maxBytes', 'maxValueBytes'] as const) {
    const n = options[name]
    if (n !== undefined && n !== Infinity && (!Number.isSafeInteger(n) || n < 0))
      throw new Error(`${name} must be a whole number >= 0, got ${n}`)
  }
  // Only these reach a broker; a URL is shown without its user info (`user:pass@host` has no scheme and is no URL).
  if (options.brokerUrl !== undefined && !/^(?:mqtts?|wss?):\/\//i.test(options.brokerUrl)) {
    throw new Error(
      `brokerUrl must start with mqtt://, mqtts://, ws:// or wss://, got ` +
        `${JSON.stringify(shownUrl(options.brokerUrl))}`,
    )
  }
  for (const [name, password] of Object.entries(options.brokerAuth?.users ?? {})) {
    if (password.trim() === '')
      throw new Error(`brokerAuth: the password of user ${JSON.stringify(name)} is empty; a user needs one`)
  }
  if (options.brokerUrl) {
    if (options.brokerAuth)
      throw new Error('brokerAuth applies to the embedded broker only; it cannot be used with brokerUrl')
    if (options.tlsListeners)
      throw new Error('tlsListeners apply to the embedded broker only; they cannot be used with brokerUrl')
  }
}

/**
 * The embedded broker's Maximum Packet Size: the profile's largest message, or with a value limit
 * of its own, what a SET of the largest value, its key and properties need (none without a limit).
 */
export function embeddedMaxPacketSize(
  options: Pick<EmulatorOptions, 'memoryProfile' | 'maxValueBytes'>,
): number | undefined {
  const { maxValueBytes } = options
  if (maxValueBytes === undefined) return MEMORY_PROFILES[options.memoryProfile ?? DEFAULT_MEMORY_PROFILE]
  return maxValueBytes !== Infinity ? Math.min(MQTT_MAX_PACKET, maxValueBytes + PACKET_ROOM) : undefined
}

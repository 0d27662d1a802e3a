import type { Duplex } from 'node:stream'
import { shownUrl } from '../log'
import { Hlc, HlcError, HybridLogicalClock } from '../hlc'
import { EmulatorAdmin, registerAdmin } from './admin/key-browser'
import { AdminServer } from './admin/server'
import type { AuthorizationPolicy } from './core/authorization-policy'
import { PersistencePolicy } from './core/persistence-policy'
import { readAuthorizationFile, readBrokerConfigFile } from './resource-file'
import { LivePolicy } from './policy-update'
import { startBroker, type BrokerAuth, type EmbeddedBroker } from './broker/broker'
import type { TlsListenerOptions } from './broker/tls-listener'
import { DedupCache } from './core/dedup'
import { RequestPrint } from './core/request-print'
import { DurableNotifications } from './journal/durable-notifications'
import { Executor } from './core/execute'
import type { Logger } from '../log'
import { makeLogger, stderrSink, type FilteredLogger, type LogThreshold } from './logger'
import { Registrations } from './core/registrations'
import type { Replayed } from './journal/format'
import { Journal } from './journal/journal'
import { stateStoreAccessPolicy, stateStorePublishPolicy } from './service/broker-policy'
import { StateStoreService } from './service/service'
import { applySeed, readSeedFile } from './seed-file'
import { Keyspace, type KeyChange } from './core/keyspace'
import { DEFAULT_SCAN_LIMITS } from './core/scan'

export type { ListenerAuthentication, SatTokenFile, X509AttributeRule } from './broker/authentication'
export type { TlsListenerOptions } from './broker/tls-listener'
export { inProcessConnector, startBroker, SAT_AUTH_METHOD, type BrokerAuth, type BrokerOptions, type EmbeddedBroker } from './broker/broker'
export type { LogThreshold as EmulatorLogLevel } from './logger'
export { adminFor, EmulatorAdmin, type KeyDetails, type KeyEntry, type KeyPage, type KeyQuery } from './admin/key-browser'
export { ADMIN_REQUEST_TOPIC, adminResponseTopic, type AdminHello, type AdminReply, type AdminRequest, type WireKeyDetails } from './admin/wire'

/** What the emulator holds at most by default: keys and values together, and one value. */
export const DEFAULT_MAX_BYTES = 256 * 1024 * 1024
export const DEFAULT_MAX_VALUE_BYTES = 16 * 1024 * 1024

/** MQTT's largest packet, and the room a SET's key and properties get beside its value in the embedded broker's Maximum Packet Size. */
const MQTT_MAX_PACKET = 268_435_455
const PACKET_ROOM = 1024 * 1024

export interface EmulatorOptions {
  /** Serve through an existing MQTT 5 broker. */
  brokerUrl?: string
  /** Credentials for `brokerUrl`. */
  brokerUsername?: string
  brokerPassword?: string
  /** Start the embedded aedes broker (port 0 = any free port) and serve through it. The default when `brokerUrl` is absent. */
  listen?: { host?: string; port: number }
  /** With the embedded broker: no TCP port, only this process reaches it (`listen` is then ignored). */
  inProcessOnly?: boolean
  /** Append-only file for the keys the persistence policy persists (see `brokerConfigFile`) and for KEYNOTIFY registrations. */
  persistFile?: string
  /** Key quota. */
  maxKeys?: number
  /** Byte quota over every key and value held (default 256 MiB; Infinity for none): a SET past it is answered as the quota error. */
  maxBytes?: number
  /** The largest value a SET may store (default 16 MiB; Infinity for none); a larger one is answered as the quota error. */
  maxValueBytes?: number
  /** HLC node id of the service; a fresh UUID by default. */
  nodeId?: string
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
  /** Requests waiting for the disk at once (default 10000); beyond it the emulator stops reading from the broker until they drain. */
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

export interface Emulator {
  /** The URL clients should connect to (the embedded broker's, or `brokerUrl`). */
  readonly brokerUrl: string
  /** The embedded broker's TLS listeners (`mqtts://host:port`), in the order of `tlsListeners`. */
  readonly tlsUrls: string[]
  readonly keyCount: number
  /** The HLC node id in every version this emulator mints. */
  readonly nodeId: string
  /**
   * With the embedded broker: a connection to it from this same process (see
   * EmbeddedBroker.connectInProcess), for a client's `connectStream`; null with an external broker.
   */
  readonly connectInProcess: (() => Duplex) | null
  /** The admin channel when `admin` was asked for, else null. */
  readonly admin: EmulatorAdmin | null
  /**
   * A policy update, as a cluster's: reads `authorizationFile` again (a mistake leaves the policy in
   * force and rejects with the file, line and reason), puts it in force, and disconnects every client
   * of the embedded broker, as AIO does. Resolves with the number of clients disconnected.
   */
  updateAuthorization(): Promise<number>
  /** Bounded in time; flushes persistence; leaves no socket or timer. */
  stop(): Promise<void>
}

/** Starts the state store emulator; resolves when it serves requests. */
export async function startEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const log = makeLogger(options.logLevel ?? 'warn', options.logger ?? stderrSink, options.logBurst)
  if (options.brokerUrl && options.listen) throw new Error('give either brokerUrl or listen, not both')
  if (options.maxKeys !== undefined && (!Number.isSafeInteger(options.maxKeys) || options.maxKeys < 0)) {
    throw new Error(`maxKeys must be a whole number >= 0, got ${options.maxKeys}`)
  }
  if (options.scanPageKeys !== undefined && (!Number.isSafeInteger(options.scanPageKeys) || options.scanPageKeys < 1)) {
    throw new Error(`scanPageKeys must be a whole number >= 1, got ${options.scanPageKeys}`)
  }
  const seed = options.seedFile ? readSeedFile(options.seedFile) : null
  const clock = new HybridLogicalClock(options.nodeId !== undefined ? { nodeId: options.nodeId } : {})
  for (const name of ['maxBytes', 'maxValueBytes'] as const) {
    const n = options[name]
    if (n !== undefined && n !== Infinity && (!Number.isSafeInteger(n) || n < 0)) throw new Error(`${name} must be a whole number >= 0, got ${n}`)
  }
  const maxValueBytes = options.maxValueBytes ?? DEFAULT_MAX_VALUE_BYTES
  const store = new Keyspace({
    clock,
    ...(options.maxKeys !== undefined ? { maxKeys: options.maxKeys } : {}),
    maxBytes: options.maxBytes ?? DEFAULT_MAX_BYTES,
    maxValueBytes,
  })
  const live = options.authorizationFile ? new LivePolicy(readAuthorizationFile(options.authorizationFile)) : null
  const authorization: AuthorizationPolicy | null = live?.view ?? null
  const persistencePolicy = options.brokerConfigFile ? readBrokerConfigFile(options.brokerConfigFile) : PersistencePolicy.dynamicOnly
  if (authorization) {
    log('info', `authorization: ${authorization.ruleCount} rule(s) from ${options.authorizationFile}`)
    if (options.brokerUrl) {
      log(
        'warn',
        `authorization: behind an external broker only the state store rules (stateStoreResources) apply; Connect, Publish and Subscribe are that broker's to enforce`,
      )
    } else if (!authorization.grantsBrokerResources) {
      log(
        'warn',
        `authorization: no rule has brokerResources, so the embedded broker lets every client connect, publish and subscribe and only state store requests are checked; an AIO broker would let no client connect with this policy`,
      )
    }
  }
  if (options.brokerConfigFile) {
    log(
      'info',
      `persistence: ${persistencePolicy.describe()} (from ${options.brokerConfigFile})${options.persistFile ? '' : '; without a persistence file nothing is kept across restarts'}`,
    )
  }
  const registrations = new Registrations()

  let journal: Journal | null = null
  const dedup = new DedupCache()
  let broker: EmbeddedBroker | null = null
  let service: StateStoreService | null = null
  let adminServer: AdminServer | null = null
  const cleanup = async () => {
    await adminServer?.stop()
    await service?.stop()
    store.close()
    await journal?.close()
    await broker?.stop()
  }

  try {
    if (options.persistFile) {
      const opened = await Journal.open(options.persistFile, {
        snapshot: () => store.entries(),
        registrations: () => registrations.entries(),
        log,
        ...(options.persistCompactMinBytes !== undefined ? { compactMinBytes: options.persistCompactMinBytes } : {}),
      })
      journal = opened.journal
      replay(store, registrations, clock, dedup, opened.replay.records, log)
      if (opened.replay.discardedBytes > 0) {
        log(
          'warn',
          `persistence: ignored ${opened.replay.discardedBytes} byte(s) at offset ${opened.replay.discardedAt} of ${options.persistFile} (a record cut short by a crash, or corrupt)`,
        )
      }
      log('info', `persistence: ${store.size} key(s) and ${registrations.size} KEYNOTIFY registration(s) restored from ${options.persistFile}`)
    }
    // The journal is written from here alone: from the changes the core reports.
    const persisted = journal
    const notifications = new DurableNotifications(persisted, (n) => service?.notify(n), log)
    store.setListener((change) => {
      persisted?.record(change)
      if (service) notifications.publish(registrations.notificationsFor(change), persisted?.appendedSeq ?? 0)
    })
    if (persisted) registrations.setListener((change) => persisted.record(change))
    if (seed) {
      const seeded = applySeed(store, seed)
      log(
        'info',
        `seed: ${seeded.written} key(s) from ${options.seedFile}${seeded.existing ? `, ${seeded.existing} kept as restored` : ''}${seeded.expired ? `, ${seeded.expired} expired` : ''}`,
      )
      if (seeded.refused > 0) log('warn', `seed: ${seeded.refused} key(s) of ${options.seedFile} refused by the key quota (--max-keys)`)
    }

    let brokerUrl = options.brokerUrl
    let credentials: { username?: string; password?: string } = {}
    if (brokerUrl) {
      if (options.brokerAuth) throw new Error('brokerAuth applies to the embedded broker only; it cannot be used with brokerUrl')
      if (options.tlsListeners) throw new Error('tlsListeners apply to the embedded broker only; they cannot be used with brokerUrl')
      if (options.brokerUsername !== undefined) credentials.username = options.brokerUsername
      if (options.brokerPassword !== undefined) credentials.password = options.brokerPassword
    } else {
      const listen = options.listen ?? { port: 0 }
      broker = await startBroker({
        port: listen.port,
        log,
        publishPolicy: stateStorePublishPolicy,
        ...(options.inProcessOnly ? { inProcessOnly: true } : {}),
        // A SET of the largest value, its key and properties fit: a larger packet is refused before it is read whole.
        ...(maxValueBytes !== Infinity ? { maximumPacketSize: Math.min(MQTT_MAX_PACKET, maxValueBytes + PACKET_ROOM) } : {}),
        ...(listen.host !== undefined ? { host: listen.host } : {}),
        ...(options.brokerAuth ? { auth: options.brokerAuth } : {}),
        ...(options.tlsListeners ? { tlsListeners: options.tlsListeners } : {}),
        // A policy without broker resources checks state store requests only (the warning above says so).
        ...(authorization?.grantsBrokerResources ? { accessPolicy: stateStoreAccessPolicy(authorization) } : {}),
      })
      brokerUrl = broker.url
      if (broker.serviceCredentials) credentials = broker.serviceCredentials
      // The service forgets a client's registrations when its connection ends; only a broker in this process can tell.
      broker.onClientDisconnect((clientId) => {
        const n = registrations.dropClient(clientId)
        if (n > 0) log('debug', `client ${JSON.stringify(clientId)} disconnected; ${n} KEYNOTIFY registration(s) dropped`)
      })
      // A broker that just started has no clients: whoever registered before was disconnected when
      // the previous one stopped (e.g. the file was last used behind an external broker).
      const stale = registrations.clients()
      for (const clientId of stale) registrations.dropClient(clientId)
      if (stale.length > 0) log('info', `persistence: KEYNOTIFY registrations of ${stale.length} client(s) dropped; the embedded broker starts without clients`)
    }

    service = await StateStoreService.start({
      brokerUrl,
      ...credentials,
      executor: new Executor({
        store,
        clock,
        registrations,
        authorization,
        persistence: journal !== null,
        persistencePolicy,
        ...(broker ? { principalOf: broker.principalOf.bind(broker) } : {}),
        ...(options.scan === false ? { scan: false } : {}),
        ...(options.scanPageKeys !== undefined ? { scanLimits: { ...DEFAULT_SCAN_LIMITS, maxKeys: options.scanPageKeys } } : {}),
      }),
      dedup,
      journal,
      log,
      ...(broker ? { deliverDirect: broker.deliverUnsubscribed.bind(broker), connectStream: broker.connectInProcess.bind(broker) } : {}),
      ...(options.maxInFlight !== undefined ? { maxInFlight: options.maxInFlight } : {}),
    })
    log('info', `state store emulator serving on ${shownUrl(brokerUrl)} (node id ${clock.nodeId})`)
    if (journal) tellRestoredWatchers(store, registrations, clock, service, log)

    let stopping: Promise<void> | null = null
    const url = brokerUrl
    const admin =
      options.admin || options.adminOverMqtt
        ? new EmulatorAdmin(store, {
            persistencePolicy,
            persistence: options.persistFile !== undefined,
            authorization,
            ...(broker ? { principalOf: broker.principalOf.bind(broker) } : {}),
          })
        : null
    if (admin && options.adminOverMqtt) {
      adminServer = await AdminServer.start({
        brokerUrl: url,
        ...credentials,
        admin,
        nodeId: clock.nodeId,
        log,
        ...(broker ? { connectStream: broker.connectInProcess.bind(broker) } : {}),
      })
    }
    const unregisterAdmin = admin ? registerAdmin(url, admin) : () => {}
    return {
      brokerUrl: url,
      tlsUrls: broker?.tlsUrls ?? [],
      async updateAuthorization() {
        if (!live || !options.authorizationFile) throw new Error('no authorization file to read again: start with authorizationFile')
        live.replace(readAuthorizationFile(options.authorizationFile))
        const n = broker?.disconnectClients() ?? 0
        log(
          'info',
          `authorization: ${authorization!.ruleCount} rule(s) from ${options.authorizationFile} in force; ${n} client(s) disconnected, as a cluster's policy update does`,
        )
        return n
      },
      nodeId: clock.nodeId,
      connectInProcess: broker ? broker.connectInProcess.bind(broker) : null,
      admin,
      get keyCount() {
        return store.size
      },
      stop() {
        unregisterAdmin()
        stopping ??= cleanup()
        return stopping
      },
    }
  } catch (err) {
    await cleanup()
    throw err
  }
}

/**
 * After a restart with `--persist`, tells each restored KEYNOTIFY registration its key's current
 * state: a SET with the key's value and version, or a DELETE for a key that is gone. A client that
 * stayed connected to an external broker cannot tell that the emulator restarted, and a change the
 * previous process had written to the file may have lost its notifications with the process (killed
 * between writing and syncing the record, before publishing): without this, such a watcher would
 * hold the old value until the key changed again (chaos run, kill-emulator, seed 20261125: a
 * context cache kept a value the store had replaced). The same goes for in-memory keys, gone with
 * the process. A watcher that missed nothing hears its last notification once more (same version).
 * The embedded broker has no such clients: its registrations are dropped at start.
 */
function tellRestoredWatchers(store: Keyspace, registrations: Registrations, clock: HybridLogicalClock, service: StateStoreService, log: FilteredLogger): void {
  if (registrations.size === 0) return
  const goneAt = clock.tick()
  let sent = 0
  for (const key of registrations.keys()) {
    const record = store.get(key)
    const change: KeyChange = record
      ? { kind: 'set', key, value: record.value, record, wasPersisted: record.persisted }
      : { kind: 'delete', key, version: goneAt, cause: 'del', wasPersisted: false }
    for (const n of registrations.notificationsFor(change)) {
      service.notify(n)
      sent++
    }
  }
  log('info', `persistence: ${sent} restored KEYNOTIFY registration(s) told their key's current state`)
}

function parsedOrNull(text: string): Hlc | null {
  try {
    return Hlc.parse(text)
  } catch {
    return null
  }
}

function replay(store: Keyspace, registrations: Registrations, clock: HybridLogicalClock, dedup: DedupCache, records: Replayed[], log: FilteredLogger): void {
  const now = Date.now()
  let newest: Hlc | null = null
  for (const r of records) {
    switch (r.type) {
      case 'set':
        store.load(r.key, r.record)
        if (!newest || Hlc.compare(r.record.version, newest) > 0) newest = r.record.version
        break
      case 'delete':
        store.unload(r.key)
        break
      case 'keynotify':
        registrations.register(r.clientId, r.key)
        break
      case 'keynotify-stop':
        registrations.unregister(r.clientId, r.key)
        break
      case 'drop-client':
        registrations.dropClient(r.clientId)
        break
      case 'answer': {
        dedup.restore(r.id, RequestPrint.parse(r.request), r.expiresAt, { payload: r.payload, timestamp: r.timestamp }, now)
        // A deletion's record has no version, its answer does: the clock must not restart below it
        // either, or a watcher that saw the DELETE would take later writes for older ones.
        const answered = r.timestamp === undefined ? null : parsedOrNull(r.timestamp)
        if (answered && (!newest || Hlc.compare(answered, newest) > 0)) newest = answered
        break
      }
    }
  }
  if (!newest) return
  // Versions must keep increasing across restarts. update() ignores readings from its own node id,
  // so the newest stored version is presented as another node's.
  try {
    clock.update(new Hlc(newest.timestamp, newest.counter, `${clock.nodeId}-restored`))
  } catch (err) {
    if (!(err instanceof HlcError)) throw err
    log('warn', `persistence: the newest stored version ${newest} is ahead of this machine's clock (${err.message}); new versions may not exceed it`)
  }
}

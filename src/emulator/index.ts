import { SERVICE_CLIENTS_PREFIX } from '../protocol'
import type { Duplex } from 'node:stream'
import { shownUrl } from '../diagnostics/log'
import { HybridLogicalClock } from '../hlc'
import { EmulatorAdmin, registerAdmin } from './admin/key-browser'
import { AdminServer } from './admin/server'
import type { AuthorizationPolicy } from './core/authorization-policy'
import { PersistencePolicy } from './core/persistence-policy'
import { readAuthorizationFile, readBrokerConfigFile } from './resource-file'
import { LivePolicy } from './policy-update'
import { startBroker, type EmbeddedBroker } from './broker/broker'
import { DedupCache } from './core/dedup'
import { DurableNotifications } from './journal/durable-notifications'
import { Executor } from './core/execute'
import { makeLogger, stderrSink } from './logger'
import { Registrations } from './core/registrations'
import { Journal } from './journal/journal'
import { replayJournal, tellRestoredWatchers } from './journal/restore'
import {
  checkOptions,
  DEFAULT_MAX_BYTES,
  DEFAULT_MAX_KEY_BYTES,
  DEFAULT_MAX_KEYS,
  DEFAULT_MAX_REGISTRATIONS,
  DEFAULT_MEMORY_PROFILE,
  MEMORY_PROFILES,
  profileValueBytes,
  embeddedMaxPacketSize,
  type EmulatorOptions,
} from './options'
import { stateStoreAccessPolicy, stateStorePublishPolicy } from './service/broker-policy'
import { StateStoreService } from './service/service'
import { applySeed, readSeedFile, seedRefusals } from './seed-file'
import { describeBounds } from './core/refusals'
import { Keyspace } from './core/keyspace'
import { DEFAULT_SCAN_LIMITS } from './core/scan'

export type { ListenerAuthentication, SatTokenFile, X509AttributeRule } from './broker/authentication'
export type { TlsListenerOptions } from './broker/tls-listener'
export {
  inProcessConnector,
  startBroker,
  type BrokerAuth,
  type BrokerOptions,
  type EmbeddedBroker,
} from './broker/broker'
export type { LogThreshold as EmulatorLogLevel } from './logger'
export {
  DEFAULT_MAX_BYTES,
  DEFAULT_MAX_KEY_BYTES,
  DEFAULT_MAX_KEYS,
  DEFAULT_MAX_VALUE_BYTES,
  MEMORY_PROFILES,
  type EmulatorOptions,
  type MemoryProfile,
} from './options'
export {
  adminFor,
  EmulatorAdmin,
  type KeyDetails,
  type KeyEntry,
  type KeyPage,
  type KeyQuery,
} from './admin/key-browser'

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
  checkOptions(options)
  const seed = options.seedFile ? readSeedFile(options.seedFile) : null
  const offset = options.clockOffsetMs ?? 0
  const clock = new HybridLogicalClock({
    ...(options.nodeId !== undefined ? { nodeId: options.nodeId } : {}),
    ...(offset !== 0 ? { now: () => Date.now() + offset } : {}),
  })
  if (offset !== 0)
    log(
      'warn',
      `clock: the service's clock runs ${Math.abs(offset)} ms ${offset > 0 ? 'ahead of' : 'behind'} this machine's ` +
        `(--clock-offset)`,
    )
  const memoryProfile = options.memoryProfile ?? DEFAULT_MEMORY_PROFILE
  const maxValueBytes = options.maxValueBytes ?? profileValueBytes(memoryProfile)
  const bounds = {
    maxKeys: options.maxKeys ?? DEFAULT_MAX_KEYS,
    maxBytes: options.maxBytes ?? DEFAULT_MAX_BYTES,
    maxValueBytes,
    maxKeyBytes: options.maxKeyBytes ?? DEFAULT_MAX_KEY_BYTES,
  }
  const store = new Keyspace({ clock, ...bounds })
  log(
    'info',
    `bounds: ${describeBounds(bounds)}; memory profile ${memoryProfile}, largest message ` +
      `${MEMORY_PROFILES[memoryProfile]} bytes`,
  )
  const live = options.authorizationFile ? new LivePolicy(readAuthorizationFile(options.authorizationFile)) : null
  const authorization: AuthorizationPolicy | null = live?.view ?? null
  const persistencePolicy = options.brokerConfigFile
    ? readBrokerConfigFile(options.brokerConfigFile)
    : PersistencePolicy.dynamicOnly
  if (authorization) {
    log('info', `authorization: ${authorization.ruleCount} rule(s) from ${options.authorizationFile}`)
    if (options.brokerUrl) {
      log(
        'warn',
        `authorization: behind an external broker only the state store rules (stateStoreResources) apply; Connect, ` +
          `Publish and Subscribe are that broker's to enforce`,
      )
    } else if (!authorization.grantsBrokerResources) {
      log(
        'warn',
        `authorization: no rule has brokerResources, so the embedded broker lets every client connect, publish and ` +
          `subscribe and only state store requests are checked; an AIO broker would let no client connect with this ` +
          `policy`,
      )
    }
  }
  if (options.brokerConfigFile) {
    log(
      'info',
      `persistence: ${persistencePolicy.describe()} (from ${options.brokerConfigFile})` +
        (options.persistFile ? '' : '; without a persistence file nothing is kept across restarts'),
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
      replayJournal(store, registrations, clock, dedup, opened.replay.records, log)
      if (opened.replay.discardedBytes > 0) {
        log(
          'warn',
          `persistence: ignored ${opened.replay.discardedBytes} byte(s) at offset ${opened.replay.discardedAt} of ` +
            `${options.persistFile} (a record cut short by a crash, or corrupt)`,
        )
      }
      log(
        'info',
        `persistence: ${store.size} key(s) and ${registrations.size} KEYNOTIFY registration(s) restored from ` +
          `${options.persistFile}`,
      )
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
        `seed: ${seeded.written} key(s) from ${options.seedFile}` +
          (seeded.existing ? `, ${seeded.existing} kept as restored` : '') +
          (seeded.expired ? `, ${seeded.expired} expired` : ''),
      )
      if (seeded.refused.length > 0) log('warn', `seed: ${seedRefusals(seeded.refused)} of ${options.seedFile}`)
    }

    let brokerUrl = options.brokerUrl
    let credentials: { username?: string; password?: string } = {}
    if (brokerUrl) {
      if (options.brokerUsername !== undefined) credentials.username = options.brokerUsername
      if (options.brokerPassword !== undefined) credentials.password = options.brokerPassword
    } else {
      const listen = options.listen ?? { port: 0 }
      const maximumPacketSize = embeddedMaxPacketSize(options)
      broker = await startBroker({
        port: listen.port,
        log,
        publishPolicy: stateStorePublishPolicy,
        ...(options.inProcessOnly ? { inProcessOnly: true } : {}),
        // A SET of the largest value, its key and properties fit: a larger packet is refused before it is read whole.
        ...(maximumPacketSize !== undefined ? { maximumPacketSize } : {}),
        ...(listen.host !== undefined ? { host: listen.host } : {}),
        ...(options.brokerAuth ? { auth: options.brokerAuth } : {}),
        ...(options.tlsListeners ? { tlsListeners: options.tlsListeners } : {}),
        limits: {
          ...(options.maxConnections !== undefined ? { maxConnections: options.maxConnections } : {}),
          ...(options.tlsHandshakeTimeoutMs !== undefined
            ? { tlsHandshakeTimeoutMs: options.tlsHandshakeTimeoutMs }
            : {}),
        },
        ...(options.subscriberQueue
          ? {
              subscriberQueue: {
                ...options.subscriberQueue,
                applies: (topic: string) => topic.startsWith(`${SERVICE_CLIENTS_PREFIX}/`),
              },
            }
          : {}),
        // A policy without broker resources checks state store requests only (the warning above says so).
        ...(authorization?.grantsBrokerResources ? { accessPolicy: stateStoreAccessPolicy(authorization) } : {}),
      })
      brokerUrl = broker.url
      if (broker.serviceCredentials) credentials = broker.serviceCredentials
      // The service forgets a client's registrations when its connection ends; only a broker in this process can tell.
      broker.onClientDisconnect((clientId) => {
        const n = registrations.dropClient(clientId)
        if (n > 0)
          log('debug', `client ${JSON.stringify(clientId)} disconnected; ${n} KEYNOTIFY registration(s) dropped`)
      })
      // A broker that just started has no clients: whoever registered before was disconnected when
      // the previous one stopped (e.g. the file was last used behind an external broker).
      const stale = registrations.clients()
      for (const clientId of stale) registrations.dropClient(clientId)
      if (stale.length > 0)
        log(
          'info',
          `persistence: KEYNOTIFY registrations of ${stale.length} client(s) dropped; the embedded broker starts ` +
            `without clients`,
        )
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
        maxRegistrations: options.maxRegistrations ?? DEFAULT_MAX_REGISTRATIONS,
        ...(options.scanPageKeys !== undefined
          ? { scanLimits: { ...DEFAULT_SCAN_LIMITS, maxKeys: options.scanPageKeys } }
          : {}),
      }),
      dedup,
      journal,
      log,
      ...(broker
        ? {
            deliverDirect: broker.deliverUnsubscribed.bind(broker),
            connectStream: broker.connectInProcess.bind(broker),
          }
        : {}),
      ...(options.maxInFlight !== undefined ? { maxInFlight: options.maxInFlight } : {}),
    })
    log('info', `state store emulator serving on ${shownUrl(brokerUrl)} (node id ${clock.nodeId})`)
    if (journal) tellRestoredWatchers(store, registrations, clock, service.notify.bind(service), log)

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
        if (!live || !options.authorizationFile)
          throw new Error('no authorization file to read again: start with authorizationFile')
        live.replace(readAuthorizationFile(options.authorizationFile))
        const n = broker?.disconnectClients() ?? 0
        log(
          'info',
          `authorization: ${authorization!.ruleCount} rule(s) from ${options.authorizationFile} in force; ${n} ` +
            `client(s) disconnected, as a cluster's policy update does`,
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

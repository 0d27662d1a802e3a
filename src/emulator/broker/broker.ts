import { createServer, type Server, type Socket } from 'node:net'
import { capConnections, DEFAULT_CONNECTION_LIMITS, type ConnectionLimits } from './connection-limits'
import type { Duplex } from 'node:stream'
import type { Aedes, AuthenticateError, Client as AedesClient } from 'aedes' with { 'resolution-mode': 'import' }
import { topicMatches } from '../../protocol'
import { describeIdentity } from './client-id-owner'
import { inProcessPair, inProcessUrl, servedHere } from './in-process'

export { inProcessConnector } from './in-process'
import { Admission, NOT_AUTHORIZED, type BrokerAuth } from './authentication'
import { startTlsListener, type RunningTlsListener, type TlsListenerOptions } from './tls-listener'
import type { TLSSocket } from 'node:tls'
import { makeLogger, type FilteredLogger } from '../logger'
import { within } from '../within'
import type { AccessPolicy, ConnectedClient, PublishPolicy } from './hooks'
import { SubscriberQueues, type SubscriberQueueLimit } from './subscriber-queue'

export type { BrokerAuth } from './authentication'
export type { SubscriberQueueLimit } from './subscriber-queue'
export type {
  AccessPolicy,
  AccessVerdict,
  AnswerVerdict,
  ConnectedClient,
  InspectedPublish,
  PublishPolicy,
} from './hooks'

export interface BrokerOptions {
  /** Default 127.0.0.1. */
  host?: string
  /** 0 picks a free port. */
  port: number
  /**
   * No TCP port at all: only this process reaches the broker (connectInProcess, inProcessConnector).
   * Its URL then names no host (`mqtt://in-process.invalid:<n>`), so no other process can use it.
   */
  inProcessOnly?: boolean
  /**
   * The largest packet a client may send (announced in CONNACK; a larger one closes its connection, 0x95), before it is
   * buffered whole.
   */
  maximumPacketSize?: number
  auth?: BrokerAuth
  /** Without one, the broker routes every publish but those to `$SYS/`, as any broker. */
  publishPolicy?: PublishPolicy
  /**
   * Without one, every authenticated client may connect, publish and subscribe. The broker's own service connections
   * are never asked.
   */
  accessPolicy?: AccessPolicy
  /** The AIO broker's subscriber queue limit, for the messages `applies` names (the emulator's: key notifications). */
  subscriberQueue?: SubscriberQueueLimit & { applies: (topic: string) => boolean }
  /**
   * More listeners, with TLS, each authenticating its clients its own way (X.509 or K8S-SAT), as a cluster's
   * BrokerListener ports.
   */
  tlsListeners?: TlsListenerOptions[]
  /** Each listener's connection cap and the TLS handshake's time (connection-limits.ts has the defaults). */
  limits?: Partial<ConnectionLimits>
  log?: FilteredLogger
}

export interface EmbeddedBroker {
  /** `mqtt://host:port`, for clients. */
  readonly url: string
  readonly host: string
  readonly port: number
  readonly aedes: Aedes
  /** `mqtts://host:port` of each TLS listener, in the order given. */
  readonly tlsUrls: string[]
  /** Credentials the broker always accepts, for the emulator's own connection when auth is on. */
  readonly serviceCredentials: { username: string; password: string } | null
  /** Called with the MQTT client id of every client whose connection ends. */
  onClientDisconnect(listener: (clientId: string) => void): void
  /** Who a connected client is (user name, attributes) to authorization rules; its client id alone when unknown. */
  principalOf(clientId: string): ConnectedClient
  /** Whether a client with this id is connected right now. */
  isConnected(clientId: string): boolean
  /** Disconnects every client but the broker's own services (MQTT 5: DISCONNECT 0x98 first); how many. */
  disconnectClients(): number
  /**
   * Delivers a message straight to a connected client that has no subscription matching its topic,
   * as the AIO broker does for key notifications (spec 1.4: the Go SDK never subscribes, the .NET SDK
   * subscribes to a filter that cannot match). False when the client is not connected here or a
   * subscription of its own will bring the message anyway.
   */
  deliverUnsubscribed(clientId: string, message: DirectMessage): boolean
  /**
   * A new connection from this same process: a byte stream to give an MQTT client (mqtt.js's
   * stream builder) instead of a TCP connection to `url`. The broker treats it as any connection:
   * the same CONNECT, authentication, sessions, QoS and disconnect handling; only the loopback
   * socket is gone.
   */
  connectInProcess(): Duplex
  /** Bounded in time: every connection is closed, the port is free when it resolves. */
  stop(): Promise<void>
}

export interface DirectMessage {
  topic: string
  payload: Buffer
  properties: { contentType?: string; userProperties?: Record<string, string> }
}

/** MQTT 5 reason code 0x90: "The Topic Name is correctly formed, but is not accepted by this Client or Server". */
const TOPIC_NAME_INVALID = 0x90
/** MQTT 5 reason code 0x98: "Administrative action", the DISCONNECT of a policy update. */
const ADMINISTRATIVE_ACTION = 0x98

const STOP_TIMEOUT_MS = 2000
/** How many refused answers' missing rules are remembered as told. */
const TOLD_LIMIT = 10_000

/**
 * The embedded MQTT 5 broker: aedes on a TCP port, TCP_NODELAY on every connection, optional
 * username/password and K8S-SAT authentication, and the publish policy of the service it serves.
 * Usable on its own (tests, `npm start`).
 */
export async function startBroker(options: BrokerOptions): Promise<EmbeddedBroker> {
  const log = options.log ?? makeLogger('warn')
  const host = options.host ?? '127.0.0.1'
  // The emulator's own connections are told apart by the credentials it gets, from clients the rules judge.
  const admission = new Admission(
    options.auth,
    options.accessPolicy !== undefined || options.publishPolicy?.serviceOnly !== undefined,
  )
  const aedes = await createAedes(options, admission, log)
  const sockets = new Set<Socket | Duplex>()
  const handle = (socket: Socket | Duplex) => {
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
    aedes.handle(socket)
  }
  const server = createServer((socket) => {
    socket.setNoDelay(true)
    handle(socket)
  })
  const limits = { ...DEFAULT_CONNECTION_LIMITS, ...options.limits }
  capConnections(server, limits.maxConnections, `port ${options.port}`, log)
  let tlsListeners: RunningTlsListener[] = []
  try {
    if (!options.inProcessOnly) await listen(server, options.port, host)
    server.on('error', (err) => log('error', `broker: ${err.message}`))
    tlsListeners = await startTlsListeners(options.tlsListeners ?? [], host, admission, handle, limits, log)
  } catch (err) {
    server.close()
    await new Promise<void>((resolve) => aedes.close(() => resolve()))
    throw err
  }
  const { port, url } = options.inProcessOnly ? inProcessUrl() : tcpUrl(server, host)
  let stopping: Promise<void> | null = null
  const connectInProcess = (): Duplex => {
    const [clientEnd, brokerEnd] = inProcessPair()
    if (stopping) {
      // As a refused TCP connection: the client sees an error and a close, and retries later.
      process.nextTick(() =>
        clientEnd.destroy(Object.assign(new Error('the broker is stopped'), { code: 'ECONNREFUSED' })),
      )
      return clientEnd
    }
    handle(brokerEnd)
    return clientEnd
  }
  const notServedHere = servedHere(url, connectInProcess)
  const stop = async () => {
    notServedHere()
    const closed = Promise.all([
      new Promise<void>((resolve) => server.close(() => resolve())),
      ...tlsListeners.map((l) => new Promise<void>((resolve) => l.server.close(() => resolve()))),
      new Promise<void>((resolve) => aedes.close(() => resolve())),
    ])
    await within(closed, STOP_TIMEOUT_MS)
    // Whatever did not close politely in time is cut, so the port is free when stop resolves.
    for (const socket of sockets) socket.destroy()
    await within(closed, 200)
  }
  return {
    url,
    host,
    port,
    aedes,
    tlsUrls: tlsListeners.map((l) => `mqtts://${l.host.includes(':') ? `[${l.host}]` : l.host}:${l.port}`),
    serviceCredentials: admission.serviceCredentials,
    onClientDisconnect(listener) {
      aedes.on('clientDisconnect', (client) => listener(client.id))
    },
    principalOf(clientId) {
      const client = connectedClient(aedes, clientId)
      return (client && admission.principalOf(client)) || admission.lastPrincipalOf(clientId) || { clientId }
    },
    isConnected(clientId) {
      return connectedClient(aedes, clientId) !== null
    },
    disconnectClients() {
      const closing = Object.values(clientsOf(aedes)).filter((c) => !admission.isService(c))
      // MQTT 5 clients are told why (0x98, Administrative action), so none takes it for a session takeover.
      for (const c of closing)
        c.disconnect(
          { reasonCode: ADMINISTRATIVE_ACTION, properties: { reasonString: 'the authorization policy was updated' } },
          () => {},
        )
      return closing.length
    },
    deliverUnsubscribed(clientId, message) {
      return deliverUnsubscribed(aedes, clientId, message, log)
    },
    connectInProcess,
    stop() {
      stopping ??= stop()
      return stopping
    },
  }
}

/** aedes with the broker's hooks: authentication and the takeover rule, the access policy, the publish policy. */
async function createAedes(options: BrokerOptions, admission: Admission, log: FilteredLogger): Promise<Aedes> {
  const { publishPolicy } = options
  const policy = options.accessPolicy ?? null
  /** Each (client, Response Topic, missing rule) told once at warn; then at debug (bounded). */
  const told = new Set<string>()
  const queues = options.subscriberQueue
    ? new SubscriberQueues(options.subscriberQueue, options.subscriberQueue.applies, (clientId, topic, dropped) =>
        log(
          'warn',
          `client ${JSON.stringify(clientId)}: its subscriber queue is full, the oldest message dropped ` +
            `(${JSON.stringify(topic.slice(0, 200))}; ${dropped} dropped so far)`,
        ),
      )
    : null
  // aedes 2 is ESM-only; this package is CommonJS.
  const { Aedes: AedesClass } = await loadAedes()
  const aedes: Aedes = await AedesClass.createBroker({
    ...(options.maximumPacketSize !== undefined ? { maximumPacketSize: options.maximumPacketSize } : {}),
    ...(queues
      ? {
          authorizeForward: (client: AedesClient, packet: Parameters<SubscriberQueues['forward']>[1]) =>
            queues.forward(client, packet),
        }
      : {}),
    preConnect: (client, packet, done) => {
      admission.takeSatToken(client, packet.properties)
      done(null, true)
    },
    authenticate: (client, username, password, done) => {
      const holder = connectedClient(aedes, client.id)
      const admitted = admission.admit(client, username, password, holder)
      if (admitted.kind === 'service') return done(null, true)
      if (admitted.kind === 'refused') {
        const { takeover } = admitted
        const by = takeover ? ` (${describeIdentity(takeover.by)}; held by ${describeIdentity(takeover.from)})` : ''
        log(
          'info',
          `client ${JSON.stringify(client.id)} refused at CONNECT ` +
            `(0x${admitted.returnCode === NOT_AUTHORIZED ? '87' : '86'}): ${admitted.reason}${by}`,
        )
        return done(authError(admitted.reason, admitted.returnCode), null)
      }
      if (!policy) return done(null, true)
      const verdict = policy.connect(admitted.principal)
      if (verdict.allowed) {
        log('info', `client ${JSON.stringify(client.id)} connects: ${verdict.reason}`)
        return done(null, true)
      }
      log('info', `client ${JSON.stringify(client.id)} refused at CONNECT (0x87): ${verdict.reason}`)
      return done(
        authError('not authorized: no authorization rule allows this client to connect', NOT_AUTHORIZED),
        null,
      )
    },
    authorizeSubscribe: (client, sub, done) => {
      if (!policy || !client || admission.isService(client)) return done(null, sub)
      const verdict = policy.subscribe(admission.principalOf(client), sub.topic)
      if (verdict.allowed) return done(null, sub)
      log(
        'info',
        `client ${JSON.stringify(client.id)}: SUBSCRIBE ${JSON.stringify(sub.topic)} refused (0x87): ${verdict.reason}`,
      )
      return done(null, null)
    },
    authorizePublish: (client, packet, done) => {
      if (packet.topic.startsWith('$SYS/')) return done(new Error('$SYS/ topics are reserved'))
      if (!client) return done(null)
      const reasonString = publishPolicy ? publishPolicy.inspect(client.id, packet) : null
      if (reasonString !== null) {
        log('warn', `client ${JSON.stringify(client.id)} disconnected: ${reasonString}`)
        // The message goes nowhere: aedes drops a publish refused here once the connection is closed.
        client.disconnect({ reasonCode: TOPIC_NAME_INVALID, properties: { reasonString } }, () =>
          done(new Error(reasonString)),
        )
        return
      }
      if (admission.isService(client)) return done(null)
      const serviceOnly = publishPolicy?.serviceOnly?.(packet.topic) ?? null
      if (serviceOnly !== null) {
        log(
          'warn',
          `client ${JSON.stringify(client.id)}: PUBLISH to ${JSON.stringify(packet.topic.slice(0, 200))} refused ` +
            `(0x87): ${serviceOnly}`,
        )
        return done(new Error('not authorized'))
      }
      if (!policy) return done(null)
      const principal = admission.principalOf(client)
      const verdict = policy.publish(principal, packet.topic)
      if (!verdict.allowed) {
        log(
          'info',
          `client ${JSON.stringify(client.id)}: PUBLISH to ${JSON.stringify(packet.topic.slice(0, 200))} refused ` +
            `(0x87): ${verdict.reason}`,
        )
        return done(new Error('not authorized'))
      }
      const responseTopic = packet.properties?.responseTopic
      const answer = responseTopic && policy.answer ? policy.answer(principal, packet.topic, responseTopic) : null
      if (answer && !answer.allowed) {
        const line =
          `client ${JSON.stringify(client.id)}: PUBLISH with Response Topic ` +
          `${JSON.stringify(responseTopic!.slice(0, 200))} refused (0x87): ${answer.reason}`
        const once = `${client.id}\u0000${responseTopic}\u0000${answer.missing ?? ''}`
        if (answer.missing && !told.has(once)) {
          if (told.size >= TOLD_LIMIT) told.clear()
          told.add(once)
          log('warn', `${line}; to have it answered there, add to the client's rule: ${answer.missing}`)
        } else log('debug', line)
        return done(new Error('not authorized'))
      }
      done(null)
    },
  })
  aedes.on('clientDisconnect', (client) => {
    admission.disconnected(client)
    queues?.disconnected(client.id)
  })
  if (queues) aedes.on('ack', (_packet, client) => queues.acknowledged(client))
  aedes.on('clientError', (client, err) => log('debug', `broker: client ${client?.id ?? '?'}: ${err.message}`))
  aedes.on('connectionError', (client, err) => log('debug', `broker: connection ${client?.id ?? '?'}: ${err.message}`))
  return aedes
}

function tcpUrl(server: Server, host: string): { port: number; url: string } {
  const { port } = server.address() as { port: number }
  return { port, url: `mqtt://${host.includes(':') ? `[${host}]` : host}:${port}` }
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.off('error', reject)
      resolve()
    })
  })
}

/** The TLS listeners, each connection marked with how its listener authenticates; none left open if one fails. */
async function startTlsListeners(
  listeners: TlsListenerOptions[],
  host: string,
  admission: Admission,
  handle: (socket: Duplex) => void,
  limits: ConnectionLimits,
  log: FilteredLogger,
): Promise<RunningTlsListener[]> {
  const running: RunningTlsListener[] = []
  try {
    for (const listener of listeners) {
      const onSocket = (socket: TLSSocket) => {
        admission.arrivedOn(socket, listener.authentication)
        handle(socket)
      }
      const started = await startTlsListener(
        listener,
        host,
        onSocket,
        (err) => log('error', `broker: TLS listener ${listener.port}: ${err.message}`),
        limits.tlsHandshakeTimeoutMs,
      )
      capConnections(started.server, limits.maxConnections, `TLS port ${started.port}`, log)
      running.push(started)
    }
  } catch (err) {
    for (const l of running) l.server.close()
    throw err
  }
  return running
}

/** DirectMessage delivery (EmbeddedBroker.deliverUnsubscribed). */
function deliverUnsubscribed(aedes: Aedes, clientId: string, message: DirectMessage, log: FilteredLogger): boolean {
  const client = connectedClient(aedes, clientId)
  if (!client || client.closed) return false
  const filters = Object.keys((client as unknown as { subscriptions: Record<string, unknown> }).subscriptions ?? {})
  const topic = message.topic.split('/')
  if (filters.some((f) => topicMatches(f.split('/'), topic))) return false
  client.publish(
    {
      cmd: 'publish',
      topic: message.topic,
      payload: message.payload,
      qos: 1,
      retain: false,
      dup: false,
      properties: message.properties,
    },
    (err) => {
      if (err) log('debug', `broker: direct delivery to ${clientId} failed: ${err.message}`)
    },
  )
  return true
}

function clientsOf(aedes: Aedes): Record<string, AedesClient> {
  return (aedes as unknown as { clients: Record<string, AedesClient> }).clients
}

function connectedClient(aedes: Aedes, clientId: string): AedesClient | null {
  const clients = clientsOf(aedes)
  return Object.hasOwn(clients, clientId) ? clients[clientId]! : null
}

function authError(message: string, returnCode: number): AuthenticateError {
  return Object.assign(new Error(message), { returnCode })
}

/**
 * aedes 2, the embedded broker, is an optional dependency (its only MQTT 5 line is a pre-release):
 * npm installs it unless told to omit optional dependencies, and only the emulator loads it. Without
 * it, starting the emulator fails with code EMULATOR_BROKER_MISSING; the nodes, the client and the
 * context store against a real broker do not need it. aedes 2 is ESM-only; this package is CommonJS.
 */
async function loadAedes(): Promise<{ Aedes: typeof Aedes }> {
  try {
    return await import('aedes')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw err
    throw Object.assign(
      new Error(
        "the emulator's embedded broker needs the optional dependency aedes, which is not installed (npm install " +
          'aedes@2.0.0-beta.1, or install this package without --omit=optional)',
        { cause: err },
      ),
      { code: 'EMULATOR_BROKER_MISSING' },
    )
  }
}

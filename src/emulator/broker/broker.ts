import { randomBytes } from 'node:crypto'
import { createConnection, createServer, type Server, type Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import type { Aedes, AuthenticateError, Client as AedesClient } from 'aedes' with { 'resolution-mode': 'import' }
import { SAT_AUTH_METHOD, topicMatches } from '../../protocol'
import { takeoverRefusal } from './client-id-owner'
import { inProcessPair } from './in-process'
import { authenticateSat, authenticateX509, type AuthenticationVerdict, type ListenerAuthentication } from './authentication'
import { startTlsListener, type RunningTlsListener, type TlsListenerOptions } from './tls-listener'
import type { TLSSocket } from 'node:tls'
import { makeLogger, type FilteredLogger } from '../logger'
import { within } from '../within'
import type { AccessPolicy, ConnectedClient, PublishPolicy } from './hooks'

/** Who may connect to the embedded broker; without it anyone may. */
export interface BrokerAuth {
  /** username → password. */
  users?: Record<string, string>
  /** Service account tokens accepted with the MQTT 5 enhanced authentication method `K8S-SAT`. */
  satTokens?: string[]
  /**
   * Authorization attributes of users (user name → attribute → value), what a cluster takes from a
   * client's X.509 certificate or service account: rules with `principals.attributes` match them.
   */
  attributes?: Record<string, Record<string, string>>
}

export type { AccessPolicy, AccessVerdict, ConnectedClient, InspectedPublish, PublishPolicy } from './hooks'

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
  /** The largest packet a client may send (announced in CONNACK; a larger one closes its connection, 0x95), before it is buffered whole. */
  maximumPacketSize?: number
  auth?: BrokerAuth
  /** Without one, the broker routes every publish but those to `$SYS/`, as any broker. */
  publishPolicy?: PublishPolicy
  /** Without one, every authenticated client may connect, publish and subscribe. The broker's own service connections are never asked. */
  accessPolicy?: AccessPolicy
  /** More listeners, with TLS, each authenticating its clients its own way (X.509 or K8S-SAT), as a cluster's BrokerListener ports. */
  tlsListeners?: TlsListenerOptions[]
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

export { SAT_AUTH_METHOD }

// aedes' CONNACK return codes (v3 numbering; aedes maps them to the MQTT 5 reason codes 0x86 and 0x87).
const BAD_USERNAME_OR_PASSWORD = 4
const NOT_AUTHORIZED = 5
/** MQTT 5 reason code 0x90: "The Topic Name is correctly formed, but is not accepted by this Client or Server". */
const TOPIC_NAME_INVALID = 0x90
/** MQTT 5 reason code 0x98: "Administrative action", the DISCONNECT of a policy update. */
const ADMINISTRATIVE_ACTION = 0x98

const STOP_TIMEOUT_MS = 2000
/** How long a client's principal is kept after it disconnected, for its requests still on their way. */
const PRINCIPAL_AFTER_DISCONNECT_MS = 60_000

/** The brokers running in this process, by URL, while they run. */
const runningHere = new Map<string, () => Duplex>()

/**
 * A stream builder (mqtt.js's, the client's `connectStream`) for the embedded broker at `url` when
 * one runs in this process now (as under `npm start` or the config node's embedded emulator); null
 * for any other URL. Each connection is in-process while a broker of this process serves the URL,
 * and a TCP connection to the URL otherwise: the broker may stop, and another one, here or in
 * another process, may serve the URL later, so reconnecting works as it does over TCP.
 */
/** The host of a broker without a TCP port (a reserved name that never resolves), and how many there were. */
const IN_PROCESS_HOST = 'in-process.invalid'
let inProcessBrokers = 0

export function inProcessConnector(url: string): (() => Duplex) | null {
  if (!runningHere.has(url)) return null
  const { hostname, port } = new URL(url)
  const host = hostname.replace(/^\[(.*)\]$/, '$1')
  return () => runningHere.get(url)?.() ?? createConnection({ host, port: Number(port), noDelay: true })
}

/**
 * The embedded MQTT 5 broker: aedes on a TCP port, TCP_NODELAY on every connection, optional
 * username/password and K8S-SAT authentication, and the publish policy of the service it serves.
 * Usable on its own (tests, `npm start`).
 */
export async function startBroker(options: BrokerOptions): Promise<EmbeddedBroker> {
  const log = options.log ?? makeLogger('warn')
  const host = options.host ?? '127.0.0.1'
  const auth = options.auth
  const publishPolicy = options.publishPolicy
  const authOn = auth !== undefined && (Object.keys(auth.users ?? {}).length > 0 || (auth.satTokens ?? []).length > 0)
  const policy = options.accessPolicy ?? null
  // The emulator's own connections are told apart by these credentials, from clients the rules judge.
  const serviceCredentials =
    authOn || policy || publishPolicy?.serviceOnly
      ? { username: `aio-statestore-emulator-${randomBytes(6).toString('hex')}`, password: randomBytes(24).toString('base64url') }
      : null
  const users = new Map(Object.entries(auth?.users ?? {}))
  if (serviceCredentials) users.set(serviceCredentials.username, serviceCredentials.password)
  const satTokens = new Set((auth?.satTokens ?? []).map((t) => t.trim()))
  /** The verdict on a client's K8S-SAT token, taken in preConnect, used in authenticate. */
  const satVerdicts = new WeakMap<AedesClient, boolean>()
  /** The K8S-SAT token a client sent, for a SAT listener to judge. */
  const satTokenOf = new WeakMap<AedesClient, string>()
  /** How the listener a connection came in on authenticates (absent: the main port, with `auth`). */
  const listenerOf = new WeakMap<object, ListenerAuthentication>()
  const attributes = new Map(Object.entries(auth?.attributes ?? {}))
  /** Connected clients' principals, by the client object (a takeover replaces it under the same id). */
  const principals = new WeakMap<AedesClient, ConnectedClient>()
  const serviceClients = new WeakSet<AedesClient>()
  /**
   * Who each client id last connected as, kept a while after it left: a request it published just
   * before a disconnect (a policy update disconnects everyone) is served after it, and is judged as
   * the principal that published it, not as a bare client id.
   */
  const lastPrincipals = new Map<string, { principal: ConnectedClient; goneAt: number | null }>()
  const isService = (username: string | undefined, password: Buffer | undefined) =>
    serviceCredentials !== null &&
    username === serviceCredentials.username &&
    password !== undefined &&
    password.equals(Buffer.from(serviceCredentials.password, 'utf8'))
  /** The broker's verdict for one authenticated client: the access policy's, when there is one. */
  const admit = (
    client: AedesClient,
    username: string | undefined,
    done: (err: AuthenticateError | null, ok: boolean | null) => void,
    listenerAttributes?: Record<string, string>,
  ) => {
    if (authOn) {
      const holder = connectedClient(aedes, client.id)
      const taken = holder && holder !== client ? takeoverRefusal(client.id, principals.get(holder) ?? {}, username) : null
      if (taken !== null) {
        log('info', `a CONNECT refused (0x87): ${taken}`)
        return done(authError(`not authorized: ${taken}`, NOT_AUTHORIZED), null)
      }
    }
    const userAttributes = listenerAttributes ?? (username !== undefined ? attributes.get(username) : undefined)
    const principal: ConnectedClient = {
      clientId: client.id,
      ...(username !== undefined ? { username } : {}),
      ...(userAttributes ? { attributes: userAttributes } : {}),
    }
    principals.set(client, principal)
    lastPrincipals.set(client.id, { principal, goneAt: null })
    if (!policy) return done(null, true)
    const verdict = policy.connect(principal)
    if (verdict.allowed) {
      log('info', `client ${JSON.stringify(client.id)} connects: ${verdict.reason}`)
      return done(null, true)
    }
    log('info', `client ${JSON.stringify(client.id)} refused at CONNECT (0x87): ${verdict.reason}`)
    return done(authError('not authorized: no authorization rule allows this client to connect', NOT_AUTHORIZED), null)
  }

  const { Aedes: AedesClass } = await loadAedes()
  const aedes = await AedesClass.createBroker({
    ...(options.maximumPacketSize !== undefined ? { maximumPacketSize: options.maximumPacketSize } : {}),
    // aedes does not implement the AUTH exchange and refuses any Authentication Method. K8S-SAT
    // needs no exchange (the token is in the CONNECT), so it is judged here and taken off the packet.
    preConnect: (client, packet, done) => {
      const props = packet.properties
      if (props?.authenticationMethod === SAT_AUTH_METHOD) {
        const token = props.authenticationData ? Buffer.from(props.authenticationData).toString('utf8').trim() : ''
        satVerdicts.set(client, token.length > 0 && satTokens.has(token))
        satTokenOf.set(client, token)
        delete props.authenticationMethod
        delete props.authenticationData
      }
      done(null, true)
    },
    authenticate: (client, username, password, done) => {
      const secret = password !== undefined ? Buffer.from(password) : undefined
      if (isService(username, secret)) {
        serviceClients.add(client)
        return done(null, true)
      }
      const listener = listenerOf.get(client.conn)
      if (listener) {
        // A TLS listener authenticates as its cluster port does; a user name is not verified there (AIO docs), so not taken.
        const verdict: AuthenticationVerdict =
          listener.method === 'x509'
            ? authenticateX509(client.conn as unknown as TLSSocket, listener.attributes)
            : authenticateSat(satTokenOf.get(client), listener.tokenFiles)
        if (verdict.ok) return admit(client, undefined, done, verdict.attributes)
        log('info', `client ${JSON.stringify(client.id)} refused at CONNECT (0x87): ${verdict.reason}`)
        return done(authError(`not authorized: ${verdict.reason}`, NOT_AUTHORIZED), null)
      }
      const sat = satVerdicts.get(client)
      // Without any user or token configured, anyone may connect; a user name is then taken as given.
      if (!authOn) return admit(client, username, done)
      // SAT authentication verifies no user name (AIO docs): a token's client is known by its id alone.
      if (sat === true) return admit(client, undefined, done)
      if (sat === false) return done(authError('not authorized: the K8S-SAT token is not accepted', NOT_AUTHORIZED), null)
      if (username !== undefined) {
        const expected = users.get(username)
        if (expected !== undefined && secret !== undefined && secret.equals(Buffer.from(expected, 'utf8'))) return admit(client, username, done)
        return done(authError('bad user name or password', BAD_USERNAME_OR_PASSWORD), null)
      }
      return done(authError('not authorized: no credentials', NOT_AUTHORIZED), null)
    },
    authorizeSubscribe: (client, sub, done) => {
      if (!policy || !client || serviceClients.has(client)) return done(null, sub)
      const verdict = policy.subscribe(principals.get(client) ?? { clientId: client.id }, sub.topic)
      if (verdict.allowed) return done(null, sub)
      log('info', `client ${JSON.stringify(client.id)}: SUBSCRIBE ${JSON.stringify(sub.topic)} refused (0x87): ${verdict.reason}`)
      return done(null, null)
    },
    authorizePublish: (client, packet, done) => {
      if (packet.topic.startsWith('$SYS/')) return done(new Error('$SYS/ topics are reserved'))
      const reasonString = client && publishPolicy ? publishPolicy.inspect(client.id, packet) : null
      if (reasonString !== null) {
        log('warn', `client ${JSON.stringify(client!.id)} disconnected: ${reasonString}`)
        // The message goes nowhere: aedes drops a publish refused here once the connection is closed.
        client!.disconnect({ reasonCode: TOPIC_NAME_INVALID, properties: { reasonString } }, () => done(new Error(reasonString)))
        return
      }
      const serviceOnly = client && !serviceClients.has(client) ? (publishPolicy?.serviceOnly?.(packet.topic) ?? null) : null
      if (serviceOnly !== null) {
        log('warn', `client ${JSON.stringify(client!.id)}: PUBLISH to ${JSON.stringify(packet.topic.slice(0, 200))} refused (0x87): ${serviceOnly}`)
        return done(new Error('not authorized'))
      }
      if (policy && client && !serviceClients.has(client)) {
        const verdict = policy.publish(principals.get(client) ?? { clientId: client.id }, packet.topic)
        if (!verdict.allowed) {
          log('info', `client ${JSON.stringify(client.id)}: PUBLISH to ${JSON.stringify(packet.topic.slice(0, 200))} refused (0x87): ${verdict.reason}`)
          return done(new Error('not authorized'))
        }
        // An answer goes where the requester could read it anyway: else a Response Topic publishes around the Publish rules.
        const responseTopic = packet.properties?.responseTopic
        const reads = responseTopic ? policy.subscribe(principals.get(client) ?? { clientId: client.id }, responseTopic) : null
        if (reads && !reads.allowed) {
          log(
            'info',
            `client ${JSON.stringify(client.id)}: PUBLISH with Response Topic ${JSON.stringify(responseTopic!.slice(0, 200))} refused (0x87): it may not subscribe to it: ${reads.reason}`,
          )
          return done(new Error('not authorized'))
        }
      }
      done(null)
    },
  })
  aedes.on('clientDisconnect', (client) => {
    const last = lastPrincipals.get(client.id)
    if (last && principals.get(client) === last.principal) last.goneAt = Date.now()
    // Forgotten once gone for long: no request of theirs is still on its way by then.
    for (const [id, entry] of lastPrincipals) if (entry.goneAt !== null && Date.now() - entry.goneAt > PRINCIPAL_AFTER_DISCONNECT_MS) lastPrincipals.delete(id)
  })
  aedes.on('clientError', (client, err) => log('debug', `broker: client ${client?.id ?? '?'}: ${err.message}`))
  aedes.on('connectionError', (client, err) => log('debug', `broker: connection ${client?.id ?? '?'}: ${err.message}`))

  const sockets = new Set<Socket | Duplex>()
  const server: Server = createServer((socket) => {
    socket.setNoDelay(true)
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
    aedes.handle(socket)
  })
  try {
    if (!options.inProcessOnly)
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject)
        server.listen(options.port, host, () => {
          server.off('error', reject)
          resolve()
        })
      })
  } catch (err) {
    await new Promise<void>((resolve) => aedes.close(() => resolve()))
    throw err
  }
  server.on('error', (err) => log('error', `broker: ${err.message}`))
  const port = options.inProcessOnly ? ++inProcessBrokers : (server.address() as { port: number }).port
  const tlsListeners: RunningTlsListener[] = []
  try {
    for (const listener of options.tlsListeners ?? []) {
      tlsListeners.push(
        await startTlsListener(
          listener,
          host,
          (socket) => {
            listenerOf.set(socket, listener.authentication)
            sockets.add(socket)
            socket.once('close', () => sockets.delete(socket))
            aedes.handle(socket)
          },
          (err) => log('error', `broker: TLS listener ${listener.port}: ${err.message}`),
        ),
      )
    }
  } catch (err) {
    for (const l of tlsListeners) l.server.close()
    server.close()
    await new Promise<void>((resolve) => aedes.close(() => resolve()))
    throw err
  }

  const url = options.inProcessOnly ? `mqtt://${IN_PROCESS_HOST}:${port}` : `mqtt://${host.includes(':') ? `[${host}]` : host}:${port}`

  let stopping: Promise<void> | null = null
  const connectInProcess = (): Duplex => {
    const [clientEnd, brokerEnd] = inProcessPair()
    if (stopping) {
      // As a refused TCP connection: the client sees an error and a close, and retries later.
      process.nextTick(() => clientEnd.destroy(Object.assign(new Error('the broker is stopped'), { code: 'ECONNREFUSED' })))
      return clientEnd
    }
    sockets.add(brokerEnd)
    brokerEnd.once('close', () => sockets.delete(brokerEnd))
    aedes.handle(brokerEnd)
    return clientEnd
  }
  runningHere.set(url, connectInProcess)
  return {
    url,
    host,
    port,
    aedes,
    tlsUrls: tlsListeners.map((l) => `mqtts://${l.host.includes(':') ? `[${l.host}]` : l.host}:${l.port}`),
    serviceCredentials,
    onClientDisconnect(listener) {
      aedes.on('clientDisconnect', (client) => listener(client.id))
    },
    principalOf(clientId) {
      const client = connectedClient(aedes, clientId)
      return (client && principals.get(client)) || lastPrincipals.get(clientId)?.principal || { clientId }
    },
    isConnected(clientId) {
      return connectedClient(aedes, clientId) !== null
    },
    disconnectClients() {
      const clients = Object.values((aedes as unknown as { clients: Record<string, AedesClient> }).clients)
      const closing = clients.filter((c) => !serviceClients.has(c))
      // MQTT 5 clients are told why (0x98, Administrative action), so none takes it for a session takeover.
      for (const c of closing)
        c.disconnect({ reasonCode: ADMINISTRATIVE_ACTION, properties: { reasonString: 'the authorization policy was updated' } }, () => {})
      return closing.length
    },
    deliverUnsubscribed(clientId, message) {
      const client = connectedClient(aedes, clientId)
      if (!client || client.closed) return false
      const filters = Object.keys((client as unknown as { subscriptions: Record<string, unknown> }).subscriptions ?? {})
      const topic = message.topic.split('/')
      if (filters.some((f) => topicMatches(f.split('/'), topic))) return false
      client.publish(
        { cmd: 'publish', topic: message.topic, payload: message.payload, qos: 1, retain: false, dup: false, properties: message.properties },
        (err) => {
          if (err) log('debug', `broker: direct delivery to ${clientId} failed: ${err.message}`)
        },
      )
      return true
    },
    connectInProcess,
    stop() {
      stopping ??= (async () => {
        if (runningHere.get(url) === connectInProcess) runningHere.delete(url)
        const closed = Promise.all([
          new Promise<void>((resolve) => server.close(() => resolve())),
          ...tlsListeners.map((l) => new Promise<void>((resolve) => l.server.close(() => resolve()))),
          new Promise<void>((resolve) => aedes.close(() => resolve())),
        ])
        await within(closed, STOP_TIMEOUT_MS)
        // Whatever did not close politely in time is cut, so the port is free when stop resolves.
        for (const socket of sockets) socket.destroy()
        await within(closed, 200)
      })()
      return stopping
    },
  }
}

function connectedClient(aedes: Aedes, clientId: string): AedesClient | null {
  const clients = (aedes as unknown as { clients: Record<string, AedesClient> }).clients
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
        "the emulator's embedded broker needs the optional dependency aedes, which is not installed (npm install aedes@2.0.0-beta.1, or install this package without --omit=optional)",
        { cause: err },
      ),
      { code: 'EMULATOR_BROKER_MISSING' },
    )
  }
}

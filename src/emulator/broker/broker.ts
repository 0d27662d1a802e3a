import { randomBytes } from 'node:crypto'
import { createConnection, createServer, type Server, type Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import type { Aedes, AuthenticateError, Client as AedesClient } from 'aedes' with { 'resolution-mode': 'import' }
import { inProcessPair } from './in-process'
import { makeLogger, type FilteredLogger } from '../logger'
import { within } from '../within'

/** Who may connect to the embedded broker; without it anyone may. */
export interface BrokerAuth {
  /** username → password. */
  users?: Record<string, string>
  /** Service account tokens accepted with the MQTT 5 enhanced authentication method `K8S-SAT`. */
  satTokens?: string[]
}

/** A client's PUBLISH as a publish policy sees it: its properties may be amended in place. */
export interface InspectedPublish {
  topic: string
  properties?: { responseTopic?: string; userProperties?: Record<string, string | string[]> }
}

/**
 * A service's rules for what clients publish, given to the broker by the service that runs it (the
 * state store emulator's are in service/broker-policy.ts); the broker itself knows no topic but `$SYS/`.
 */
export interface PublishPolicy {
  /**
   * Judges a client's PUBLISH before it is routed, and may amend its properties in place. A reason
   * disconnects the client (reason code 0x90, Topic Name invalid) and drops the message; null lets it through.
   */
  inspect(clientId: string, packet: InspectedPublish): string | null
}

export interface BrokerOptions {
  /** Default 127.0.0.1. */
  host?: string
  /** 0 picks a free port. */
  port: number
  auth?: BrokerAuth
  /** Without one, the broker routes every publish but those to `$SYS/`, as any broker. */
  publishPolicy?: PublishPolicy
  log?: FilteredLogger
}

export interface EmbeddedBroker {
  /** `mqtt://host:port`, for clients. */
  readonly url: string
  readonly host: string
  readonly port: number
  readonly aedes: Aedes
  /** Credentials the broker always accepts, for the emulator's own connection when auth is on. */
  readonly serviceCredentials: { username: string; password: string } | null
  /** Called with the MQTT client id of every client whose connection ends. */
  onClientDisconnect(listener: (clientId: string) => void): void
  /** Whether a client with this id is connected right now. */
  isConnected(clientId: string): boolean
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

export const SAT_AUTH_METHOD = 'K8S-SAT'

// aedes' CONNACK return codes (v3 numbering; aedes maps them to the MQTT 5 reason codes 0x86 and 0x87).
const BAD_USERNAME_OR_PASSWORD = 4
const NOT_AUTHORIZED = 5
/** MQTT 5 reason code 0x90: "The Topic Name is correctly formed, but is not accepted by this Client or Server". */
const TOPIC_NAME_INVALID = 0x90

const STOP_TIMEOUT_MS = 2000

/** The brokers running in this process, by URL, while they run. */
const runningHere = new Map<string, () => Duplex>()

/**
 * A stream builder (mqtt.js's, the client's `connectStream`) for the embedded broker at `url` when
 * one runs in this process now (as under `npm start` or the config node's embedded emulator); null
 * for any other URL. Each connection is in-process while a broker of this process serves the URL,
 * and a TCP connection to the URL otherwise: the broker may stop, and another one, here or in
 * another process, may serve the URL later, so reconnecting works as it does over TCP.
 */
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
  const serviceCredentials = authOn ? { username: `aio-statestore-emulator-${randomBytes(6).toString('hex')}`, password: randomBytes(24).toString('base64url') } : null
  const users = new Map(Object.entries(auth?.users ?? {}))
  if (serviceCredentials) users.set(serviceCredentials.username, serviceCredentials.password)
  const satTokens = new Set((auth?.satTokens ?? []).map((t) => t.trim()))
  /** The verdict on a client's K8S-SAT token, taken in preConnect, used in authenticate. */
  const satVerdicts = new WeakMap<AedesClient, boolean>()

  // aedes 2 is ESM-only; this package is CommonJS.
  const { Aedes: AedesClass } = await import('aedes')
  const aedes = await AedesClass.createBroker({
    // aedes does not implement the AUTH exchange and refuses any Authentication Method. K8S-SAT
    // needs no exchange (the token is in the CONNECT), so it is judged here and taken off the packet.
    preConnect: (client, packet, done) => {
      const props = packet.properties
      if (props?.authenticationMethod === SAT_AUTH_METHOD) {
        const token = props.authenticationData ? Buffer.from(props.authenticationData).toString('utf8').trim() : ''
        satVerdicts.set(client, token.length > 0 && satTokens.has(token))
        delete props.authenticationMethod
        delete props.authenticationData
      }
      done(null, true)
    },
    authenticate: (client, username, password, done) => {
      if (!authOn) return done(null, true)
      const sat = satVerdicts.get(client)
      if (sat === true) return done(null, true)
      if (sat === false) return done(authError('not authorized: the K8S-SAT token is not accepted', NOT_AUTHORIZED), null)
      if (username !== undefined) {
        const expected = users.get(username)
        if (expected !== undefined && password !== undefined && Buffer.from(password).equals(Buffer.from(expected, 'utf8'))) return done(null, true)
        return done(authError('bad user name or password', BAD_USERNAME_OR_PASSWORD), null)
      }
      return done(authError('not authorized: no credentials', NOT_AUTHORIZED), null)
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
      done(null)
    },
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
  const port = (server.address() as { port: number }).port
  const url = `mqtt://${host.includes(':') ? `[${host}]` : host}:${port}`

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
    serviceCredentials,
    onClientDisconnect(listener) {
      aedes.on('clientDisconnect', (client) => listener(client.id))
    },
    isConnected(clientId) {
      return connectedClient(aedes, clientId) !== null
    },
    deliverUnsubscribed(clientId, message) {
      const client = connectedClient(aedes, clientId)
      if (!client || client.closed) return false
      const filters = Object.keys((client as unknown as { subscriptions: Record<string, unknown> }).subscriptions ?? {})
      if (filters.some((f) => topicMatches(f, message.topic))) return false
      client.publish({ cmd: 'publish', topic: message.topic, payload: message.payload, qos: 1, retain: false, dup: false, properties: message.properties }, (err) => {
        if (err) log('debug', `broker: direct delivery to ${clientId} failed: ${err.message}`)
      })
      return true
    },
    connectInProcess,
    stop() {
      stopping ??= (async () => {
        if (runningHere.get(url) === connectInProcess) runningHere.delete(url)
        const closed = Promise.all([
          new Promise<void>((resolve) => server.close(() => resolve())),
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

/** MQTT topic filter matching: `+` one level, `#` the rest; `$` topics only match filters that name them. */
function topicMatches(filter: string, topic: string): boolean {
  const f = filter.split('/')
  const t = topic.split('/')
  if (t[0]?.startsWith('$') && (f[0] === '+' || f[0] === '#')) return false
  for (let i = 0; i < f.length; i++) {
    if (f[i] === '#') return true
    if (i >= t.length) return false
    if (f[i] !== '+' && f[i] !== t[i]) return false
  }
  return f.length === t.length
}

function authError(message: string, returnCode: number): AuthenticateError {
  return Object.assign(new Error(message), { returnCode }) as AuthenticateError
}

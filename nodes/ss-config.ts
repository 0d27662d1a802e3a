import type { Node, NodeAPI, NodeDef } from 'node-red'
import { parsePersistenceProperty, StateStoreClient, type ClientOptions, type ConnectionStatus } from '../src/client'
import type { ProtocolName } from '../src/protocol'
import { ConnectionError, OverloadedError, type ConnectionErrorCode } from '../src/diagnostics/errors'
import { LockFollower, StoreActivity } from '../src/observe'
import { authOptions, configClientId, type StoreCredentials, type TlsConfigNode } from './config/client-options'
import {
  claimEnvironmentClientId,
  environmentText,
  fromEnvironment,
  registerEnvironmentEndpoint,
  releaseEnvironmentClientId,
  type FromEnvironment,
} from './config/environment'
import { registerConnectionTest } from './config/connection-test'
import { acquireEmbedded, inProcessConnector, releaseEmbedded } from './config/embedded'
import { positiveInt, wholeNumber } from './msg/props'
import type { StoreConfigNode } from './config/config-node'
import { ConnectionLog, shownReason } from './lib/connection-log'
import { StoreUsers } from './config/store-users'
import { shareForFunctions } from './config/function-access'
import { wholeDefaults, type SettingsOf } from './config/schemas'

/** The node's config as saved, derived from its schema. */
type ConfigDef = NodeDef & SettingsOf<'ss-config'>

const FALLBACK = wholeDefaults('ss-config')

type Credentials = StoreCredentials

/** The config node closes within 2 s: users get this long to finish (release locks) before the client goes. */
const USERS_GRACE_MS = 1000

const MIB = 1024 * 1024

export = function (RED: NodeAPI) {
  function SsConfig(this: Node<Credentials>, def: ConfigDef) {
    RED.nodes.createNode(this, def)
    const node = this as Node<Credentials> & StoreConfigNode
    const users = new StoreUsers()
    // Blank fields take this process's AIO environment; a wrong variable fails the connection, named in status and log.
    let environment: FromEnvironment = {}
    let environmentError: unknown = null
    try {
      environment = def.embedded
        ? {}
        : fromEnvironment({ ...def, credentials: node.credentials ?? {}, hasTls: Boolean(def.tls) })
    } catch (err) {
      environmentError = err
    }
    const claimed =
      !def.clientId?.trim() && environment.clientId ? claimEnvironmentClientId(environment.clientId, node.id) : null
    if (claimed?.shared)
      node.warn(RED._('ss-config.log.environmentClientId', { id: environment.clientId!, client: claimed.clientId }))
    const clientId = def.clientId?.trim() || claimed?.clientId || configClientId(RED.settings.userDir, node.id)
    const requestTimeoutMs = positiveInt(def.requestTimeout, FALLBACK.requestTimeout)
    // Blank: a msg waits for a connection that is down as long as for its answer, its request timeout; 0 fails it at
    // once.
    const connectionWaitMs = Math.min(wholeNumber(def.connectionWait, requestTimeoutMs), requestTimeoutMs)
    const maxQueuedBytes = wholeNumber(def.queueMemory, FALLBACK.queueMemory) * MIB
    let connection: ConnectionStatus = { state: 'disconnected' }
    let client: Promise<StateStoreClient> | null = null
    let usesEmbedded = false
    let closing = false
    /** Keeps the sidebar's lock entries true to the store while the client lives. */
    let follower: LockFollower | null = null
    /** What the editor's state store sidebar shows of this connection (nodes/ss-sidebar.ts). */
    const activity = new StoreActivity()
    let brokerUrl = def.embedded ? '' : def.broker || environment.brokerUrl || ''

    const log = new ConnectionLog()
    function publish(status: ConnectionStatus): void {
      connection = status
      activity.metrics.onStatus(status)
      activity.connectionChanged()
      const line = log.next(status)
      if (line) {
        const text = RED._(`ss-config.log.${line.key}`, {
          client: clientId,
          reason: shownReason(status, (key) => RED._(key)) ?? '',
        })
        if (line.warn) node.warn(text)
        else node.log(text)
      }
      users.tell(status)
    }

    function options(brokerUrl: string, connectStream?: ClientOptions['connectStream']): ClientOptions {
      const creds = node.credentials ?? {}
      const opts: ClientOptions = {
        brokerUrl,
        ...(connectStream ? { connectStream } : {}),
        clientId,
        keepaliveSec: environment.keepaliveSec ?? positiveInt(def.keepalive, FALLBACK.keepalive),
        cleanStart: def.cleanStart !== false,
        requestTimeoutMs,
        connectionWaitMs,
        maxInFlight: positiveInt(def.maxInFlight, FALLBACK.maxInFlight),
        maxQueuedBytes,
        ...(def.protocol ? { protocol: def.protocol as ProtocolName } : {}),
        // A malformed one fails the connection, said in the status: the editor refuses it before.
        persistenceProperty: parsePersistenceProperty(def.persistenceProperty),
        ...(def.metricCategory !== undefined ? { metricCategory: def.metricCategory.trim() } : {}),
        metrics: activity.metrics,
        logger: (level, message) =>
          level === 'info' ? node.log(message) : level === 'debug' ? node.debug(message) : node.warn(message),
      }
      const expiry = Number(def.sessionExpiry)
      if (String(def.sessionExpiry ?? '').trim() !== '' && Number.isSafeInteger(expiry) && expiry >= 0)
        opts.sessionExpirySec = expiry
      else if (environment.sessionExpirySec !== undefined) opts.sessionExpirySec = environment.sessionExpirySec
      const tlsNode = def.tls ? (RED.nodes.getNode(def.tls) as unknown as TlsConfigNode | null) : null
      const { username, password, satTokenFile, tls } = environment
      const fromEnv = {
        ...(username !== undefined ? { username } : {}),
        ...(password !== undefined ? { password } : {}),
        ...(satTokenFile !== undefined ? { satTokenFile } : {}),
        ...(tls ? { tls } : {}),
      }
      return { ...opts, ...fromEnv, ...authOptions(creds, tlsNode) }
    }

    async function connect(): Promise<StateStoreClient> {
      if (environmentError) throw new Error(environmentText(RED, environmentError))
      publish({ state: 'connecting' })
      if (def.embedded) {
        usesEmbedded = true
        const emulator = await acquireEmbedded((level, message) => RED.log[level](`[ss-config:${node.id}] ${message}`))
        brokerUrl = emulator.brokerUrl
      }
      // A broker in this process (the embedded emulator, `npm start`'s) is reached without loopback TCP.
      const connectStream = inProcessConnector(brokerUrl) ?? undefined
      // Checks after every connect that a state store answers: the status says so when none does, and msgs fail at
      // once.
      const created = new StateStoreClient({ ...options(brokerUrl, connectStream), checkService: true })
      created.on('status', publish)
      created.on('error', (err) => {
        activity.metrics.addError(err.message)
        node.warn(err.message)
      })
      publish(created.status)
      follower = new LockFollower(activity, created)
      return created
    }

    async function disconnect(): Promise<void> {
      const current = client
      client = null
      void follower?.detach()
      follower = null
      if (current) {
        try {
          const c = await current
          c.removeListener('status', publish)
          await c.close()
        } catch {
          // it never connected (embedded emulator failed to start): nothing to close
        }
      }
      if (usesEmbedded) {
        usesEmbedded = false
        releaseEmbedded()
      }
      connection = { state: 'disconnected' }
    }

    Object.defineProperties(node, {
      clientId: { value: clientId, enumerable: true },
      connection: { get: () => connection, enumerable: true },
      activity: { value: activity, enumerable: true },
      brokerUrl: { get: () => brokerUrl, enumerable: true },
      embedded: { value: def.embedded === true, enumerable: true },
      client: { get: () => client, enumerable: true },
      // The sidebar opens its own connection with these to look for a standalone emulator's admin channel.
      clientOptions: { value: () => (brokerUrl ? options(brokerUrl) : null) },
    })

    node.register = (user) => {
      users.add(user)
      if (!client && !closing) {
        client = connect()
        client.catch((err: unknown) => {
          node.error(RED._('ss-config.errors.start', { error: err instanceof Error ? err.message : String(err) }))
          publish({ state: 'disconnected', reason: err instanceof Error ? err.message : String(err) })
        })
      }
      user.onConnection(connection)
    }

    node.deregister = async (user, removed) => {
      if (users.remove(user) && removed && !closing) await disconnect()
    }

    /** Connection errors already in the catalogue's words. */
    const explained = new WeakSet<ConnectionError>()
    function notConnected(code: ConnectionErrorCode, reason: string | undefined, cause?: unknown): ConnectionError {
      const text = reason
        ? RED._('ss-config.errors.notConnectedReason', { client: clientId, reason })
        : RED._('ss-config.errors.notConnected', { client: clientId })
      const err = new ConnectionError(code, text, cause === undefined ? undefined : { cause })
      explained.add(err)
      return err
    }

    // The wait for a connection that is down is the client's (connectionWaitMs, per request): not repeated here.
    node.started = async () => {
      if (!client) throw notConnected(closing ? 'ConnectionClosed' : 'NotConnected', undefined)
      try {
        return await client
      } catch (err) {
        // A client that did not start (bad options) is as good as closed: waiting longer does not help.
        throw notConnected(
          'ConnectionClosed',
          shownReason(connection, (key) => RED._(key)) ?? (err instanceof Error ? err.message : String(err)),
          err,
        )
      }
    }

    // A missing service keeps the client's message (status.noService says what to check); the other codes say "not
    // connected" and why.
    // A full wait queue names this node's setting. A write's failure keeps whether it was written.
    node.explain = (err) => {
      if (err instanceof OverloadedError && err.bound === 'maxQueuedBytes') {
        const own = new OverloadedError(
          RED._('ss-config.errors.overloaded', { mb: String(maxQueuedBytes / MIB) }),
          err.bound,
          err.limit,
        )
        if (err.written !== undefined) own.written = err.written
        return own
      }
      if (!(err instanceof ConnectionError) || err.code === 'NoService' || explained.has(err)) return err
      const own = notConnected(err.code, shownReason(connection, (key) => RED._(key)) ?? err.message, err)
      if (err.written !== undefined) own.written = err.written
      return own
    }

    shareForFunctions(RED, node)
    node.on('close', (_removed: boolean, done: () => void) => {
      closing = true
      // The users leave now: their lock entries go without a request on a connection about to close.
      void follower?.detach()
      follower = null
      void (async () => {
        // Users close at the same time; wait briefly so a lock node can still release over this connection.
        await users.left(USERS_GRACE_MS)
        await disconnect()
        if (claimed && !claimed.shared) releaseEnvironmentClientId(environment.clientId!, node.id)
        done()
      })()
    })
  }

  registerConnectionTest(RED)
  registerEnvironmentEndpoint(RED)

  RED.nodes.registerType<Node<Credentials>, ConfigDef, unknown, Credentials>('ss-config', SsConfig, {
    credentials: {
      username: { type: 'text' },
      password: { type: 'password' },
      satTokenFile: { type: 'text' },
    },
  })
}

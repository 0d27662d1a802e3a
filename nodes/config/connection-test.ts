import { randomBytes } from 'node:crypto'
import { CLIENT_DEFAULTS, StateStoreClient, type ClientOptions, type ConnectionStatus } from '../../src/client'
import {
  authOptions,
  configClientId,
  defaultBrokerUrl,
  type StoreCredentials,
  type TlsConfigNode,
} from './client-options'
import type { StoreConfigNode } from './config-node'
import { environmentText, fromEnvironment, LOCAL_BROKER, type FromEnvironment } from './environment'
import { positiveInt } from '../msg/props'

/** What the config dialog's Test connection button reports. */
export type ConnectionTestResult =
  | 'connected'
  | 'noService'
  | 'silent'
  | 'authFailed'
  | 'notAuthorized'
  | 'notAuthorizedTestId'
  | 'refused'
  | 'tls'
  | 'notFound'
  | 'notMqtt'
  | 'tlsExpected'
  | 'tlsUnexpected'
  | 'timeout'
  | 'failed'

export interface ConnectionTestOutcome {
  result: ConnectionTestResult
  /** The broker's or the socket's own words (never a credential: neither mqtt.js nor the broker repeats them). */
  reason?: string
  /**
   * Not authorized: the client id the broker refused, or (notAuthorizedTestId) the deployed connection's, which it lets
   * in.
   */
  clientId?: string
  /** notAuthorizedTestId: Test connection's own client id, which the broker refused. */
  testClientId?: string
}

/** CONNACK 0x87 Not authorized: an authorization policy's refusal, or (mosquitto) a wrong password. */
const NOT_AUTHORIZED = '135'

/** Node.js error codes of a TLS handshake the client refused (certificate chain, host name, expiry, protocol). */
const TLS_CODES = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_|ERR_OSSL)/

function classify(status: ConnectionStatus): ConnectionTestOutcome {
  const problem = status.problem
  // The catalogue text of these says all there is to say, and what to change.
  if (problem === 'notMqtt' || problem === 'tlsExpected' || problem === 'tlsUnexpected') return { result: problem }
  const reason = status.reason
  // A Node.js error's code is a string, an MQTT refusal's (mqtt.js ErrorWithReasonCode) the number: 135 is compared as
  // '135'.
  const code = String((status.error as { code?: string | number } | undefined)?.code ?? '')
  const result: ConnectionTestResult =
    problem === 'authFailed'
      ? code === NOT_AUTHORIZED
        ? 'notAuthorized'
        : 'authFailed'
      : code === 'ECONNREFUSED'
        ? 'refused'
        : TLS_CODES.test(code) || /certificate|SSL routines|TLS/i.test(reason ?? '')
          ? 'tls'
          : code === 'ENOTFOUND' || code === 'EAI_AGAIN'
            ? 'notFound'
            : 'failed'
  return reason === undefined ? { result } : { result, reason }
}

/**
 * Connects once with the settings the dialog holds, as a client of its own (a client id of its own,
 * so the deployed connection is not taken over), then asks whether a state store answers (a plain
 * MQTT broker is reachable but has none), and says how it went. Never throws, closes what it opened.
 *
 * Refused as not authorized, the test's own id may be what a policy naming client ids refuses: it
 * then says so when the deployed connection with the dialog's id is up (`deployedConnected`), or
 * else tries once more with that id itself (nothing is taken over, as that connection is down),
 * and names the id the broker refused.
 */
export async function testConnection(
  options: ClientOptions,
  timeoutMs: number,
  deployedConnected = false,
): Promise<ConnectionTestOutcome> {
  const testClientId = `${options.clientId}-test-${randomBytes(3).toString('hex')}`
  const started = performance.now()
  const first = await attempt(options, testClientId, timeoutMs)
  if (first.result !== 'notAuthorized') return first
  const clientId = options.clientId
  if (deployedConnected) return { result: 'notAuthorizedTestId', clientId, testClientId }
  const second = await attempt(options, clientId, Math.max(1000, timeoutMs - (performance.now() - started)))
  if (second.result === 'notAuthorized') return { ...second, clientId }
  if (second.result === 'connected' || second.result === 'noService' || second.result === 'silent')
    return { result: 'notAuthorizedTestId', clientId, testClientId }
  return second
}

async function attempt(options: ClientOptions, clientId: string, timeoutMs: number): Promise<ConnectionTestOutcome> {
  let client: StateStoreClient
  try {
    client = new StateStoreClient({ ...options, clientId, reconnectMinMs: 60_000, reconnectMaxMs: 60_000 })
  } catch (err) {
    return { result: 'failed', reason: err instanceof Error ? err.message : String(err) }
  }
  const deadline = performance.now() + timeoutMs
  try {
    const outcome = await new Promise<ConnectionTestOutcome>((resolve) => {
      const timer = setTimeout(
        () => resolve({ result: 'timeout', ...(client.status.reason ? { reason: client.status.reason } : {}) }),
        timeoutMs,
      )
      const settle = (outcome: ConnectionTestOutcome) => {
        clearTimeout(timer)
        resolve(outcome)
      }
      client.on('status', (status) => {
        if (status.state === 'connected') settle({ result: 'connected' })
        else if (status.state === 'disconnected') settle(classify(status))
      })
      if (client.status.state === 'connected') settle({ result: 'connected' })
    })
    if (outcome.result !== 'connected') return outcome
    const found = await client.checkService({ timeoutMs: Math.max(1, Math.round(deadline - performance.now())) })
    return found === 'answered' ? outcome : { result: found === 'none' ? 'noService' : 'silent' }
  } finally {
    await client.close()
  }
}

/** What the dialog sends: its fields as they are now, deployed or not. */
interface TestRequest {
  id?: string
  broker?: string
  clientId?: string
  tls?: string
  usetls?: boolean
  keepalive?: string
  credentials?: StoreCredentials
}

const ENV = /^\$\{(\w+)\}$/
/** The editor shows a saved password as this placeholder; the deployed node's own password is meant. */
const SAVED_PASSWORD = '__PWRD__'
const TEST_TIMEOUT_MS = 5000

/** `${NAME}` as the whole value reads the environment, as Node-RED does when the flow starts. */
function resolveEnv(value: string | undefined): string | undefined {
  const name = value === undefined ? undefined : ENV.exec(value.trim())?.[1]
  return name === undefined ? value : process.env[name]
}

/** A broker URL without user info (a URL may carry a password), or null when the value is not one. */
function shownBrokerUrl(value: string | undefined): string | null {
  if (!value) return null
  try {
    const url = new URL(value)
    if (!/^(mqtts?|wss?):$/.test(url.protocol)) return null
    url.username = ''
    url.password = ''
    return url.toString().replace(/\/$/, '')
  } catch {
    return null
  }
}

/**
 * The config dialog's admin endpoints, behind the editor's permissions:
 * POST /ss-config/test connects once with the dialog's settings and answers { result, reason };
 * GET /ss-config/broker?value=${NAME} answers what an environment variable in the broker field
 * resolves to, only when it is a broker URL (no other environment value ever leaves the runtime);
 * with a blank value, the broker a blank field connects to.
 */
export function registerConnectionTest(RED: import('node-red').NodeAPI): void {
  const admin = RED.httpAdmin
  admin.post('/ss-config/test', RED.auth.needsPermission('ss-config.write'), (req, res) => {
    const body = (req.body ?? {}) as TestRequest
    void (async () => {
      const saved = body.id ? (RED.nodes.getCredentials(body.id) as TestRequest['credentials'] | undefined) : undefined
      const creds = { ...body.credentials }
      if (creds.password === SAVED_PASSWORD) creds.password = saved?.password
      const tlsNode = body.usetls && body.tls ? (RED.nodes.getNode(body.tls) as unknown as TlsConfigNode | null) : null
      if (body.usetls && body.tls && !tlsNode) {
        res.json({ result: 'tlsNotDeployed' })
        return
      }
      const resolved = {
        username: resolveEnv(creds.username),
        password: resolveEnv(creds.password),
        satTokenFile: resolveEnv(creds.satTokenFile),
      }
      // Blank fields stand for this Node-RED's AIO environment, as in the deployed node.
      let environment: FromEnvironment
      try {
        environment = fromEnvironment({
          broker: resolveEnv(body.broker),
          clientId: resolveEnv(body.clientId),
          keepalive: resolveEnv(body.keepalive),
          credentials: resolved,
          hasTls: tlsNode !== null,
        })
      } catch (err) {
        res.json({ result: 'failed', reason: environmentText(RED, err) })
        return
      }
      const { clientId: envClientId, ...fromEnv } = environment
      const options: ClientOptions = {
        brokerUrl: resolveEnv(body.broker) || environment.brokerUrl || LOCAL_BROKER,
        clientId:
          resolveEnv(body.clientId)
            ?.trim()
            .replace(/[^A-Za-z0-9_.-]/g, '-') ||
          envClientId ||
          configClientId(RED.settings.userDir, body.id ?? 'config'),
        keepaliveSec: environment.keepaliveSec ?? positiveInt(resolveEnv(body.keepalive), CLIENT_DEFAULTS.keepaliveSec),
        connectTimeoutMs: TEST_TIMEOUT_MS,
      }
      // The deployed connection with this very client id and broker, up now: proof that the broker lets that id in.
      const deployed = body.id ? (RED.nodes.getNode(body.id) as unknown as StoreConfigNode | null) : null
      const deployedConnected =
        deployed !== null &&
        deployed.clientId === options.clientId &&
        deployed.brokerUrl === options.brokerUrl &&
        deployed.connection?.state === 'connected'
      res.json(
        await testConnection(
          { ...options, ...fromEnv, brokerUrl: options.brokerUrl, ...authOptions(resolved, tlsNode) },
          TEST_TIMEOUT_MS,
          deployedConnected,
        ),
      )
    })().catch((err: unknown) =>
      res.json({ result: 'failed', reason: err instanceof Error ? err.message : String(err) }),
    )
  })
  admin.get('/ss-config/broker', RED.auth.needsPermission('ss-config.read'), (req, res) => {
    const value = typeof req.query.value === 'string' ? req.query.value.trim() : ''
    // Blank: where a blank field connects (npm start's broker under npm start), for the field's placeholder.
    res.json({
      resolved:
        value === '' ? shownBrokerUrl(defaultBrokerUrl()) : ENV.test(value) ? shownBrokerUrl(resolveEnv(value)) : null,
    })
  })
}

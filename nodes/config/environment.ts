import type { NodeAPI } from 'node-red'
import {
  CLIENT_DEFAULTS,
  EnvironmentError,
  environmentAuth,
  environmentTls,
  readAioEnvironment,
  type AioEnvironment,
  type ClientOptions,
} from '../../src/client'
import type { StoreCredentials } from './client-options'

/** A blank Broker URL with no AIO environment: a broker on this machine (the emulator's default). */
export const LOCAL_BROKER = 'mqtt://127.0.0.1:1883'

/** The config node's fields that may be left blank, as the flow (or the dialog) holds them. */
export interface ConnectionFields {
  broker?: string | undefined
  clientId?: string | undefined
  keepalive?: string | number | undefined
  sessionExpiry?: string | number | undefined
  credentials: StoreCredentials
  /** A TLS configuration node is chosen: the environment's TLS files are not used. */
  hasTls: boolean
}

export type FromEnvironment = Partial<
  Pick<
    ClientOptions,
    'brokerUrl' | 'keepaliveSec' | 'sessionExpirySec' | 'username' | 'password' | 'satTokenFile' | 'tls'
  >
> & { clientId?: string }

const blank = (v: string | number | undefined) => v === undefined || String(v).trim() === ''

/**
 * What each blank field stands for in the AIO environment of this process (the SDKs' variables, or
 * AIO_STATESTORE_URL for the broker). Authentication comes from the environment only when the node
 * gives no credential at all, and TLS only when it names no TLS configuration: the SDKs' rule that
 * a SAT excludes a password holds within one source. Throws an EnvironmentError for a wrong variable.
 */
export function fromEnvironment(fields: ConnectionFields, env: NodeJS.ProcessEnv = process.env): FromEnvironment {
  const aio = readAioEnvironment(env)
  const out: FromEnvironment = {}
  if (blank(fields.broker)) out.brokerUrl = aio.brokerUrl ?? LOCAL_BROKER
  if (blank(fields.clientId) && aio.clientId !== undefined) out.clientId = aio.clientId
  if (blank(fields.keepalive) && aio.keepaliveSec !== undefined) out.keepaliveSec = aio.keepaliveSec
  if (blank(fields.sessionExpiry) && aio.sessionExpirySec !== undefined) out.sessionExpirySec = aio.sessionExpirySec
  const creds = fields.credentials
  if (!creds.username && !creds.password && !creds.satTokenFile) Object.assign(out, environmentAuth(aio))
  if (!fields.hasTls) {
    const tls = environmentTls(aio)
    if (tls) out.tls = tls
  }
  return out
}

/** AIO_MQTT_CLIENT_ID → the config node of this runtime connecting with it. */
const claims = new Map<string, string>()

/**
 * The client id a config node with a blank Client ID takes from AIO_MQTT_CLIENT_ID: the id itself
 * for the first config node of this runtime, `<id>-<node id>` for any other (two connections with one
 * id take each other's session over). `shared` is set when the id was taken.
 */
export function claimEnvironmentClientId(id: string, nodeId: string): { clientId: string; shared: boolean } {
  const holder = claims.get(id)
  if (holder === undefined || holder === nodeId) {
    claims.set(id, nodeId)
    return { clientId: id, shared: false }
  }
  return { clientId: `${id}-${nodeId.replace(/[^A-Za-z0-9_.-]/g, '-')}`, shared: true }
}

export function releaseEnvironmentClientId(id: string, nodeId: string): void {
  if (claims.get(id) === nodeId) claims.delete(id)
}

/** The error's variable, value and problem in the catalogue's words; any other error's message. */
export function environmentText(RED: NodeAPI, err: unknown): string {
  if (!(err instanceof EnvironmentError)) return err instanceof Error ? err.message : String(err)
  return RED._('ss-config.errors.environment', {
    variable: err.variable,
    value: err.value,
    problem: RED._(`ss-config.environment.${err.problem}`),
  })
}

/**
 * What the dialog shows as the placeholder of each blank field: the values of this Node-RED's AIO
 * environment (no password: only the password file's name), or the error that stops their use.
 */
export interface EnvironmentView {
  broker: string
  brokerVariable?: string
  clientId?: string
  keepalive: number
  sessionExpiry?: number
  username?: string
  satTokenFile?: string
  passwordFile?: string
  caFile?: string
  certFile?: string
  error?: string
}

export function environmentView(RED: NodeAPI, env: NodeJS.ProcessEnv = process.env): EnvironmentView {
  let aio: AioEnvironment
  try {
    aio = readAioEnvironment(env)
  } catch (err) {
    return { broker: LOCAL_BROKER, keepalive: CLIENT_DEFAULTS.keepaliveSec, error: environmentText(RED, err) }
  }
  const view: EnvironmentView = {
    broker: shownUrl(aio.brokerUrl) ?? LOCAL_BROKER,
    keepalive: aio.keepaliveSec ?? CLIENT_DEFAULTS.keepaliveSec,
  }
  const put = <K extends keyof EnvironmentView>(key: K, value: EnvironmentView[K] | undefined) => {
    if (value !== undefined) view[key] = value
  }
  put('brokerVariable', aio.brokerVariable)
  put('clientId', aio.clientId)
  put('sessionExpiry', aio.sessionExpirySec)
  put('username', aio.username)
  put('satTokenFile', aio.satFile)
  put('passwordFile', aio.passwordFile)
  put('caFile', aio.caFile)
  put('certFile', aio.certFile)
  return view
}

/** A broker URL without user info (a URL may carry a password). */
function shownUrl(value: string | undefined): string | undefined {
  if (!value) return undefined
  try {
    const url = new URL(value)
    url.username = ''
    url.password = ''
    return url.toString().replace(/\/$/, '')
  } catch {
    return undefined
  }
}

/** GET /ss-config/environment: the dialog's view of the blank fields, behind the editor's read permission. */
export function registerEnvironmentEndpoint(RED: NodeAPI): void {
  RED.httpAdmin.get('/ss-config/environment', RED.auth.needsPermission('ss-config.read'), (_req, res) => {
    res.json(environmentView(RED))
  })
}

import { readFileSync } from 'node:fs'
import { rateLimited } from '../diagnostics/log'
import { basename } from 'node:path'
import {
  CLIENT_DEFAULTS,
  defaultClientId,
  EnvironmentError,
  parsePersistenceProperty,
  environmentAuth,
  environmentTls,
  readAioEnvironment,
  type ClientOptions,
  type Logger,
  type TlsOptions,
} from '../client'

/**
 * The `config` object of a `contextStorage` entry in Node-RED's settings.js. Connection settings
 * carry the config node's names; durations are numbers (seconds for keepalive and session expiry,
 * milliseconds for the request timeout), as in the config node.
 */
export interface ContextStoreConfig {
  /** mqtt://, mqtts://, ws://, wss://; default mqtt://127.0.0.1:1883. Ignored when `embedded`. */
  broker?: string
  /** Run (or share) the in-process emulator with its own broker, as the config node's option does. */
  embedded?: boolean
  /** Default `nodered-context-<host>-<hash of user dir and prefix>`: unique per runtime, stable across restarts. */
  clientId?: string
  username?: string
  password?: string
  /** TLS: file paths, as the TLS config node takes them. */
  ca?: string
  cert?: string
  key?: string
  passphrase?: string
  servername?: string
  /** Default true. */
  verifyservercert?: boolean
  satTokenFile?: string
  /** Seconds, default 60. */
  keepalive?: number
  cleanStart?: boolean
  /** Seconds. */
  sessionExpiry?: number
  /** Milliseconds, default 10000: also how long a call waits for a down connection. */
  requestTimeout?: number
  maxInFlight?: number
  /** Every key this store writes starts with it. Default `nodered/<name of the user directory>/`. */
  prefix?: string
  /** Keep every value in memory, kept current by key notifications; allows synchronous get. Default true. */
  cache?: boolean
  /** Ask the service to persist every key written. Default true. */
  persist?: boolean
  /**
   * The user property that asks for it, as the cluster's Broker resource names it
   * (`dynamicSettings`): `"name=value"` or `{ key, value }`. Default `aio-persistence=true`.
   */
  persistenceProperty?: string | { key: string; value: string }
  /**
   * Milliseconds between the reads of every cached key that find a change whose notification the
   * broker dropped (a subscriber queue limit with DropOldest). Default 300000; 0: never.
   */
  reconcileInterval?: number
  /**
   * The CONNECT user property `metriccategory` (the broker's traffic metrics). Default this package's name; '' for
   * none.
   */
  metricCategory?: string
  /** Where diagnostics go; default Node-RED's log when it can be found, else the console. */
  logger?: Logger
  /** Set by Node-RED: `{ userDir }`. */
  settings?: { userDir?: string }
}

export interface ResolvedConfig {
  prefix: string
  cache: boolean
  persist: boolean
  embedded: boolean
  requestTimeoutMs: number
  logger: Logger
  /** The client options, without the broker URL when embedded (known once the emulator runs). */
  client: Omit<ClientOptions, 'brokerUrl'> & { brokerUrl?: string }
}

const DEFAULT_BROKER = 'mqtt://127.0.0.1:1883'

function positive(value: unknown, name: string, fallback: number): number {
  if (value === undefined || value === null || value === '') return fallback
  const n = Number(value)
  if (!Number.isFinite(n) || n <= 0)
    throw new Error(`state store context: ${name} must be a positive number, not ${JSON.stringify(value)}`)
  return n
}

/**
 * Settings left out take the AIO SDKs' environment of the process (AIO_BROKER_HOSTNAME, AIO_SAT_FILE,
 * …, or AIO_STATESTORE_URL), as the config node's blank fields do; the client id is then
 * `<AIO_MQTT_CLIENT_ID>-context`, so that it never takes over the config node's session.
 */
export function resolveConfig(config: ContextStoreConfig = {}, env: NodeJS.ProcessEnv = process.env): ResolvedConfig {
  if (typeof config !== 'object' || config === null) throw new Error('state store context: config must be an object')
  const aio = fromEnvironment(() => readAioEnvironment(env))
  const userDir = config.settings?.userDir ?? process.cwd()
  const prefix = config.prefix ?? `nodered/${basename(userDir) || 'node-red'}/`
  if (typeof prefix !== 'string') throw new Error('state store context: prefix must be a string')
  const requestTimeoutMs = positive(config.requestTimeout, 'requestTimeout', CLIENT_DEFAULTS.requestTimeoutMs)
  const clientId =
    config.clientId?.trim() || (aio.clientId ? `${aio.clientId}-context` : defaultClientId(userDir, prefix, 'context'))
  // A context store whose broker has no state store retries every second, for ever: one line a minute says so.
  const logger = rateLimited(config.logger ?? nodeRedLogger(), { burst: 3, windowMs: 60_000 })
  const client: ResolvedConfig['client'] = {
    clientId,
    keepaliveSec: positive(config.keepalive, 'keepalive', aio.keepaliveSec || CLIENT_DEFAULTS.keepaliveSec),
    cleanStart: config.cleanStart !== false,
    requestTimeoutMs,
    maxInFlight: positive(config.maxInFlight, 'maxInFlight', CLIENT_DEFAULTS.maxInFlight),
    logger,
  }
  if (!config.embedded) client.brokerUrl = config.broker || aio.brokerUrl || DEFAULT_BROKER
  if (config.sessionExpiry !== undefined && Number(config.sessionExpiry) !== 0)
    client.sessionExpirySec = positive(config.sessionExpiry, 'sessionExpiry', 0)
  else if (config.sessionExpiry === undefined && aio.sessionExpirySec) client.sessionExpirySec = aio.sessionExpirySec
  const persistence = config.persistenceProperty
  if (persistence !== undefined)
    client.persistenceProperty =
      typeof persistence === 'string' ? settingOf(() => parsePersistenceProperty(persistence)) : persistence
  if (config.metricCategory !== undefined) client.metricCategory = config.metricCategory
  if (config.reconcileInterval !== undefined)
    client.reconcileIntervalMs =
      Number(config.reconcileInterval) === 0 ? 0 : positive(config.reconcileInterval, 'reconcileInterval', 0)
  if (config.username) client.username = config.username
  if (config.password) client.password = config.password
  if (config.satTokenFile) client.satTokenFile = config.satTokenFile
  // The environment's authentication and TLS only when the config gives none of its own (one source, one way of
  // authenticating).
  if (!config.embedded && !config.username && !config.password && !config.satTokenFile)
    Object.assign(
      client,
      fromEnvironment(() => environmentAuth(aio)),
    )
  const tls =
    tlsOptions(config) ??
    (config.embedded || config.ca || config.cert || config.key ? undefined : fromEnvironment(() => environmentTls(aio)))
  if (tls) client.tls = tls
  return {
    prefix,
    cache: config.cache !== false,
    persist: config.persist !== false,
    embedded: config.embedded === true,
    requestTimeoutMs,
    logger,
    client,
  }
}

/** A setting the client refuses stops the store, said as the store's. */
function settingOf<T>(read: () => T): T {
  try {
    return read()
  } catch (err) {
    throw new Error(`state store context: ${(err as Error).message}`, { cause: err })
  }
}

/** A wrong AIO variable stops the store with its name, its value and why. */
function fromEnvironment<T>(read: () => T): T {
  try {
    return read()
  } catch (err) {
    if (err instanceof EnvironmentError) throw new Error(`state store context: ${err.message}`, { cause: err })
    throw err
  }
}

function tlsOptions(config: ContextStoreConfig): TlsOptions | undefined {
  const read = (file: string | undefined, name: string) => {
    if (!file) return undefined
    try {
      return readFileSync(file)
    } catch (err) {
      throw new Error(`state store context: cannot read the ${name} file: ${(err as Error).message}`, { cause: err })
    }
  }
  const tls: TlsOptions = {}
  const ca = read(config.ca, 'ca')
  const cert = read(config.cert, 'cert')
  const key = read(config.key, 'key')
  if (ca) tls.ca = ca
  if (cert) tls.cert = cert
  if (key) tls.key = key
  if (config.passphrase) tls.passphrase = config.passphrase
  if (config.servername) tls.servername = config.servername
  if (config.verifyservercert === false) tls.rejectUnauthorized = false
  return Object.keys(tls).length > 0 ? tls : undefined
}

/**
 * A context store is handed no logger. Node-RED's own log is in @node-red/util, which resolves from
 * the node-red that started the process (not from the user directory this package lives in).
 */
function nodeRedLogger(): Logger {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { createRequire } = require('node:module') as typeof import('node:module')
    const entry = require.main?.filename ?? process.argv[1]
    if (entry) {
      const { log } = createRequire(entry)('@node-red/util') as { log?: Record<LogLevelName, (m: string) => void> }
      if (typeof log?.warn === 'function') return (level, message) => log[level](`[statestore context] ${message}`)
    }
  } catch {
    // not started by node-red: the console it is
  }
  return (level, message) => {
    if (level !== 'debug') console[level === 'info' ? 'log' : level](`[statestore context] ${message}`)
  }
}
type LogLevelName = 'error' | 'warn' | 'info' | 'debug'

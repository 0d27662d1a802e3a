import { ArgumentError } from '../diagnostics/errors'
import { rateLimited, shownUrl } from '../diagnostics/log'
import { HybridLogicalClock } from '../hlc'
import { dialect, isProtocolName, PROTOCOL_NAMES, type Dialect } from '../protocol'
import type { ClientOptions, Logger, PersistenceProperty } from './types'
import { wholeNumber } from '../checks/whole-number'

/** The defaults of the options ClientOptions leaves open; the config node and the context store show and use the same. */
export const CLIENT_DEFAULTS = {
  keepaliveSec: 60,
  reconnectMinMs: 500,
  // The cap on the backoff: a broker back after an outage is found again within 2 s (plus the connect).
  reconnectMaxMs: 2000,
  connectTimeoutMs: 10_000,
  requestTimeoutMs: 10_000,
  maxInFlight: 1000,
  /** 80 MiB: 50,000 waiting SETs of 1 KB values with their bookkeeping (QUEUED_REQUEST_BYTES each). */
  maxQueuedBytes: 80 * 1024 * 1024,
  maxClockDriftMs: 60_000,
  /** Observed keys are read again this often, to find a lost notification (a broker queue that drops the oldest). */
  reconcileIntervalMs: 300_000,
  /** The Broker resource's default `dynamicSettings` (AIO docs, "Configure broker persistence"). */
  persistenceProperty: { key: 'aio-persistence', value: 'true' },
  /** Names this package in the broker's traffic metrics (the CONNECT user property `metriccategory`). */
  metricCategory: 'node-red-contrib-aio-statestore',
} as const

/** The CONNECT user property that names a client's traffic category in the AIO broker's metrics. */
export const METRIC_CATEGORY_PROPERTY = 'metriccategory'

/**
 * `key=value` (as a setting writes it: the config node, the context store, the CLI) as a user
 * property; blank for the default. ArgumentError says what is wrong.
 */
export function parsePersistenceProperty(text: string | undefined): PersistenceProperty {
  if (text === undefined || text.trim() === '') return { ...CLIENT_DEFAULTS.persistenceProperty }
  const i = text.indexOf('=')
  const key = i < 0 ? '' : text.slice(0, i).trim()
  if (i < 0 || key === '') throw new ArgumentError(`the persistence property must be written name=value (aio-persistence=true), got ${JSON.stringify(text)}`)
  return { key, value: text.slice(i + 1).trim() }
}

export interface ResolvedOptions extends ClientOptions {
  keepaliveSec: number
  cleanStart: boolean
  reconnectMinMs: number
  reconnectMaxMs: number
  connectTimeoutMs: number
  requestTimeoutMs: number
  maxInFlight: number
  /** undefined: no bound on the count, only on the bytes. */
  maxQueued: number | undefined
  maxQueuedBytes: number
  clock: HybridLogicalClock
  logger: Logger
  dialect: Dialect
  persistenceProperty: PersistenceProperty
  metricCategory: string
  reconcileIntervalMs: number
}

const PROTOCOLS = new Set(['mqtt:', 'mqtts:', 'ws:', 'wss:', 'tcp:', 'ssl:'])

/** Fills in defaults and refuses what cannot work, before any socket is opened. */
export function resolveOptions(options: ClientOptions): ResolvedOptions {
  if (!options || typeof options !== 'object') throw new ArgumentError('client options are required')
  let url: URL
  try {
    url = new URL(options.brokerUrl)
  } catch {
    throw new ArgumentError(`the broker URL ${JSON.stringify(shownUrl(String(options.brokerUrl)))} is not a URL`)
  }
  if (!PROTOCOLS.has(url.protocol)) {
    throw new ArgumentError(`the broker URL must start with mqtt://, mqtts://, ws:// or wss://, got ${JSON.stringify(shownUrl(options.brokerUrl))}`)
  }
  if (typeof options.clientId !== 'string' || options.clientId.length === 0) {
    throw new ArgumentError('a client id is required: the service addresses notifications to it')
  }
  if (/[+#/]/.test(options.clientId)) {
    // It becomes a level of the response topic; a wildcard or slash there would break the subscription.
    throw new ArgumentError(`the client id ${JSON.stringify(options.clientId)} must not contain "+", "#" or "/"`)
  }
  if (options.protocol !== undefined && !isProtocolName(options.protocol)) {
    throw new ArgumentError(`protocol must be one of ${PROTOCOL_NAMES.join(', ')}, got ${JSON.stringify(options.protocol)}`)
  }
  const resolved: ResolvedOptions = {
    ...options,
    keepaliveSec: count(options.keepaliveSec, CLIENT_DEFAULTS.keepaliveSec, 'keepaliveSec', 0),
    cleanStart: options.cleanStart ?? true,
    reconnectMinMs: count(options.reconnectMinMs, CLIENT_DEFAULTS.reconnectMinMs, 'reconnectMinMs', 1),
    reconnectMaxMs: count(options.reconnectMaxMs, CLIENT_DEFAULTS.reconnectMaxMs, 'reconnectMaxMs', 1),
    connectTimeoutMs: count(options.connectTimeoutMs, CLIENT_DEFAULTS.connectTimeoutMs, 'connectTimeoutMs', 1),
    requestTimeoutMs: count(options.requestTimeoutMs, CLIENT_DEFAULTS.requestTimeoutMs, 'requestTimeoutMs', 1),
    ...(options.connectionWaitMs !== undefined ? { connectionWaitMs: count(options.connectionWaitMs, 0, 'connectionWaitMs', 0) } : {}),
    maxInFlight: count(options.maxInFlight, CLIENT_DEFAULTS.maxInFlight, 'maxInFlight', 1),
    maxQueued: options.maxQueued === undefined ? undefined : count(options.maxQueued, 0, 'maxQueued', 0),
    maxQueuedBytes: count(options.maxQueuedBytes, CLIENT_DEFAULTS.maxQueuedBytes, 'maxQueuedBytes', 0),
    clock: options.clock ?? new HybridLogicalClock({ maxDriftMs: count(options.maxClockDriftMs, CLIENT_DEFAULTS.maxClockDriftMs, 'maxClockDriftMs', 0) }),
    logger: options.logger ? rateLimited(options.logger, { burst: 20 }) : () => {},
    dialect: dialect(options.protocol),
    persistenceProperty: userPropertyOption(options.persistenceProperty),
    reconcileIntervalMs: count(options.reconcileIntervalMs, CLIENT_DEFAULTS.reconcileIntervalMs, 'reconcileIntervalMs', 0),
    metricCategory: textOption(options.metricCategory, CLIENT_DEFAULTS.metricCategory, 'metricCategory'),
  }
  if (resolved.reconnectMaxMs < resolved.reconnectMinMs) throw new ArgumentError('reconnectMaxMs must not be smaller than reconnectMinMs')
  if (options.sessionExpirySec !== undefined) count(options.sessionExpirySec, 0, 'sessionExpirySec', 0)
  return resolved
}

function count(value: number | undefined, fallback: number, name: string, min: number): number {
  if (value === undefined) return fallback
  const n = typeof value === 'number' ? wholeNumber(value, min) : undefined
  if (n === undefined) throw new ArgumentError(`${name} must be a whole number of at least ${min}, got ${value}`)
  return n
}

function userPropertyOption(p: PersistenceProperty | undefined): PersistenceProperty {
  if (p === undefined) return { ...CLIENT_DEFAULTS.persistenceProperty }
  if (typeof p !== 'object' || p === null || typeof p.key !== 'string' || p.key === '' || typeof p.value !== 'string')
    throw new ArgumentError('persistenceProperty must be { key, value }, two strings, the key not empty')
  return { key: p.key, value: p.value }
}

function textOption(value: string | undefined, fallback: string, name: string): string {
  if (value === undefined) return fallback
  if (typeof value !== 'string') throw new ArgumentError(`${name} must be a string, got ${JSON.stringify(value)}`)
  return value
}

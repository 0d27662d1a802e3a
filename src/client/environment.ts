import { readFileSync } from 'node:fs'
import { ArgumentError } from '../diagnostics/errors'
import type { ClientOptions, TlsOptions } from './types'

/**
 * The connection settings every AIO workload is given as environment variables, read as the AIO
 * SDKs read them (`doc/reference/connection-settings.md` in Azure/iot-operations-sdks), with their
 * defaults and their rule that a SAT file excludes a password. Our own `AIO_STATESTORE_URL` (a
 * whole broker URL, set by `npm start`) wins over the host name, port and TLS variables.
 */

/** The SDKs' variables, in the order of their reference page. */
export const AIO_VARIABLES = [
  'AIO_BROKER_HOSTNAME',
  'AIO_BROKER_TCP_PORT',
  'AIO_MQTT_USE_TLS',
  'AIO_TLS_CA_FILE',
  'AIO_MQTT_CLEAN_START',
  'AIO_MQTT_KEEP_ALIVE',
  'AIO_MQTT_CLIENT_ID',
  'AIO_MQTT_SESSION_EXPIRY',
  'AIO_MQTT_USERNAME',
  'AIO_MQTT_PASSWORD_FILE',
  'AIO_TLS_CERT_FILE',
  'AIO_TLS_KEY_FILE',
  'AIO_TLS_KEY_PASSWORD_FILE',
  'AIO_SAT_FILE',
] as const

export type AioVariable = (typeof AIO_VARIABLES)[number] | 'AIO_STATESTORE_URL'

/** The SDKs' defaults for what a variable left unset means (keep alive and session expiry in seconds). */
export const AIO_DEFAULTS = {
  tcpPort: 8883,
  useTls: true,
  keepAliveSec: 60,
  sessionExpirySec: 3600,
  cleanStart: false,
} as const

/**
 * Why a variable cannot be used:
 * - `number`: not a whole number in range; `boolean`: not `true` or `false`; `url`: not a broker URL;
 * - `file`: the file it names cannot be read;
 * - `exclusive`: AIO_SAT_FILE with AIO_MQTT_PASSWORD_FILE (a broker takes one way of authenticating);
 * - `pair`: a certificate without its key, or a key (or its password) without its certificate.
 */
export type EnvironmentProblem = 'number' | 'boolean' | 'url' | 'file' | 'exclusive' | 'pair'

/** A variable of the AIO environment that cannot be used: its name, its value and why. */
export class EnvironmentError extends ArgumentError {
  constructor(
    readonly variable: AioVariable,
    readonly value: string,
    readonly problem: EnvironmentProblem,
    detail: string,
  ) {
    super(`${variable}=${JSON.stringify(value)}: ${detail}`)
  }
}

/** What the environment sets, checked but with no file read yet; a field is absent when its variable is. */
export interface AioEnvironment {
  /** From AIO_STATESTORE_URL, else AIO_BROKER_HOSTNAME with AIO_BROKER_TCP_PORT and AIO_MQTT_USE_TLS. */
  brokerUrl?: string
  brokerVariable?: 'AIO_STATESTORE_URL' | 'AIO_BROKER_HOSTNAME'
  clientId?: string
  keepaliveSec?: number
  sessionExpirySec?: number
  cleanStart?: boolean
  username?: string
  passwordFile?: string
  satFile?: string
  caFile?: string
  certFile?: string
  keyFile?: string
  keyPasswordFile?: string
}

/** Reads and checks the variables; throws an EnvironmentError naming the first one that cannot be used. */
export function readAioEnvironment(env: NodeJS.ProcessEnv = process.env): AioEnvironment {
  const text = (name: AioVariable) => {
    const v = env[name]?.trim()
    return v === undefined || v === '' ? undefined : v
  }
  const out: AioEnvironment = {}
  const url = text('AIO_STATESTORE_URL')
  const host = text('AIO_BROKER_HOSTNAME')
  const port = text('AIO_BROKER_TCP_PORT')
  const useTls = bool('AIO_MQTT_USE_TLS', text('AIO_MQTT_USE_TLS'))
  if (port !== undefined) whole('AIO_BROKER_TCP_PORT', port, 1, 65535)
  if (url !== undefined) {
    if (!isBrokerUrl(url))
      throw new EnvironmentError('AIO_STATESTORE_URL', url, 'url', 'expected an mqtt://, mqtts://, ws:// or wss:// URL')
    out.brokerUrl = url
    out.brokerVariable = 'AIO_STATESTORE_URL'
  } else if (host !== undefined) {
    const scheme = (useTls ?? AIO_DEFAULTS.useTls) ? 'mqtts' : 'mqtt'
    const name = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host
    out.brokerUrl = `${scheme}://${name}:${port ?? AIO_DEFAULTS.tcpPort}`
    if (!isBrokerUrl(out.brokerUrl))
      throw new EnvironmentError('AIO_BROKER_HOSTNAME', host, 'url', 'expected a host name or an IP address')
    out.brokerVariable = 'AIO_BROKER_HOSTNAME'
  }
  const set = <K extends keyof AioEnvironment>(key: K, value: AioEnvironment[K] | undefined) => {
    if (value !== undefined) out[key] = value
  }
  set('clientId', text('AIO_MQTT_CLIENT_ID'))
  const keepalive = text('AIO_MQTT_KEEP_ALIVE')
  set('keepaliveSec', keepalive === undefined ? undefined : whole('AIO_MQTT_KEEP_ALIVE', keepalive, 0, 65535))
  const expiry = text('AIO_MQTT_SESSION_EXPIRY')
  set('sessionExpirySec', expiry === undefined ? undefined : whole('AIO_MQTT_SESSION_EXPIRY', expiry, 0, 0xffffffff))
  set('cleanStart', bool('AIO_MQTT_CLEAN_START', text('AIO_MQTT_CLEAN_START')))
  set('username', text('AIO_MQTT_USERNAME'))
  set('passwordFile', text('AIO_MQTT_PASSWORD_FILE'))
  set('satFile', text('AIO_SAT_FILE'))
  set('caFile', text('AIO_TLS_CA_FILE'))
  set('certFile', text('AIO_TLS_CERT_FILE'))
  set('keyFile', text('AIO_TLS_KEY_FILE'))
  set('keyPasswordFile', text('AIO_TLS_KEY_PASSWORD_FILE'))
  if (out.satFile !== undefined && out.passwordFile !== undefined) {
    throw new EnvironmentError(
      'AIO_SAT_FILE',
      out.satFile,
      'exclusive',
      'a SAT file and AIO_MQTT_PASSWORD_FILE exclude each other: set one of them',
    )
  }
  if (out.keyFile !== undefined && out.certFile === undefined)
    throw new EnvironmentError('AIO_TLS_KEY_FILE', out.keyFile, 'pair', 'a key file needs AIO_TLS_CERT_FILE')
  if (out.certFile !== undefined && out.keyFile === undefined)
    throw new EnvironmentError('AIO_TLS_CERT_FILE', out.certFile, 'pair', 'a certificate file needs AIO_TLS_KEY_FILE')
  if (out.keyPasswordFile !== undefined && out.keyFile === undefined) {
    throw new EnvironmentError(
      'AIO_TLS_KEY_PASSWORD_FILE',
      out.keyPasswordFile,
      'pair',
      'a key password file needs AIO_TLS_KEY_FILE',
    )
  }
  return out
}

/**
 * The environment's authentication as client options: the SAT file (checked readable; the client
 * reads it again at every connect), or a username with the password read from its file.
 */
export function environmentAuth(aio: AioEnvironment): Pick<ClientOptions, 'username' | 'password' | 'satTokenFile'> {
  const opts: Pick<ClientOptions, 'username' | 'password' | 'satTokenFile'> = {}
  if (aio.username !== undefined) opts.username = aio.username
  if (aio.passwordFile !== undefined)
    opts.password = readVariableFile('AIO_MQTT_PASSWORD_FILE', aio.passwordFile)
      .toString('utf8')
      .replace(/\r?\n$/, '')
  if (aio.satFile !== undefined) {
    readVariableFile('AIO_SAT_FILE', aio.satFile)
    opts.satTokenFile = aio.satFile
  }
  return opts
}

/** The environment's TLS files, read; undefined when it names none. */
export function environmentTls(aio: AioEnvironment): TlsOptions | undefined {
  if (aio.caFile === undefined && aio.certFile === undefined) return undefined
  const tls: TlsOptions = {}
  if (aio.caFile !== undefined) tls.ca = readVariableFile('AIO_TLS_CA_FILE', aio.caFile)
  if (aio.certFile !== undefined && aio.keyFile !== undefined) {
    tls.cert = readVariableFile('AIO_TLS_CERT_FILE', aio.certFile)
    tls.key = readVariableFile('AIO_TLS_KEY_FILE', aio.keyFile)
  }
  if (aio.keyPasswordFile !== undefined)
    tls.passphrase = readVariableFile('AIO_TLS_KEY_PASSWORD_FILE', aio.keyPasswordFile)
      .toString('utf8')
      .replace(/\r?\n$/, '')
  return tls
}

function readVariableFile(variable: AioVariable, file: string): Buffer {
  try {
    return readFileSync(file)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message
    throw new EnvironmentError(variable, file, 'file', `cannot read the file (${code})`)
  }
}

function whole(variable: AioVariable, value: string, min: number, max: number): number {
  const n = /^\d{1,10}$/.test(value) ? Number(value) : NaN
  if (!(n >= min && n <= max))
    throw new EnvironmentError(variable, value, 'number', `expected a whole number from ${min} to ${max}`)
  return n
}

function bool(variable: AioVariable, value: string | undefined): boolean | undefined {
  if (value === undefined) return undefined
  const v = value.toLowerCase()
  if (v === 'true') return true
  if (v === 'false') return false
  throw new EnvironmentError(variable, value, 'boolean', 'expected true or false')
}

function isBrokerUrl(value: string): boolean {
  try {
    const url = new URL(value)
    return /^(mqtts?|wss?):$/.test(url.protocol) && url.hostname !== ''
  } catch {
    return false
  }
}

import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { ClientOptions } from '../client'
import { UsageError } from './exit'
import { wholeNumber as readWholeNumber } from '../whole-number'

/**
 * Where and how the CLI connects: its flags first, then the environment variables the AIO SDKs read
 * for their MQTT connection (Rust `MqttConnectionSettingsBuilder::from_environment`, the same names in
 * Go and .NET), so that the CLI in a pod connects as the SDK applications beside it do.
 */

export const CONNECTION_FLAGS = {
  broker: { type: 'string' },
  'client-id': { type: 'string' },
  username: { type: 'string' },
  'password-file': { type: 'string' },
  'sat-file': { type: 'string' },
  'ca-file': { type: 'string' },
  'cert-file': { type: 'string' },
  'key-file': { type: 'string' },
  'key-password-file': { type: 'string' },
  timeout: { type: 'string' },
} as const

export const CONNECTION_HELP = `Connection (flags win over the AIO SDKs' environment variables in brackets):
  --broker <url>              mqtt://, mqtts://, ws:// or wss:// URL. Default: from AIO_BROKER_HOSTNAME,
                              AIO_BROKER_TCP_PORT (8883) and AIO_MQTT_USE_TLS (true) when set, else
                              mqtt://127.0.0.1:1883 (the emulator's default).
  --client-id <id>            MQTT client id [AIO_MQTT_CLIENT_ID]; default aio-statestore-cli-<random>.
  --username <name>           [AIO_MQTT_USERNAME]
  --password-file <file>      The password, read from a file [AIO_MQTT_PASSWORD_FILE].
  --sat-file <file>           Kubernetes service account token for K8S-SAT authentication [AIO_SAT_FILE].
  --ca-file <file>            CA certificates (PEM) the broker's certificate is checked against [AIO_TLS_CA_FILE].
  --cert-file <file>          Client certificate (PEM) [AIO_TLS_CERT_FILE]; with --key-file.
  --key-file <file>           Its private key (PEM) [AIO_TLS_KEY_FILE].
  --key-password-file <file>  The key's passphrase, read from a file [AIO_TLS_KEY_PASSWORD_FILE].
  --timeout <ms>              How long to wait for the connection and for each request (default 10000).
  Also read: AIO_MQTT_KEEP_ALIVE (s), AIO_MQTT_SESSION_EXPIRY (s), AIO_MQTT_CLEAN_START (default true here).`

export type ConnectionValues = { [K in keyof typeof CONNECTION_FLAGS]?: string | undefined }

export interface Connection {
  options: ClientOptions
  timeoutMs: number
}

export function connectionFrom(values: ConnectionValues, env: NodeJS.ProcessEnv = process.env): Connection {
  const pick = (flag: keyof ConnectionValues, name: string): string | undefined => values[flag] ?? nonEmpty(env[name])
  const timeoutMs = values.timeout === undefined ? 10_000 : wholeNumber('--timeout', values.timeout, 1)
  const options: ClientOptions = {
    brokerUrl: values.broker ?? brokerFromEnv(env) ?? 'mqtt://127.0.0.1:1883',
    clientId: pick('client-id', 'AIO_MQTT_CLIENT_ID') ?? `aio-statestore-cli-${randomBytes(4).toString('hex')}`,
    requestTimeoutMs: timeoutMs,
    connectTimeoutMs: timeoutMs,
    cleanStart: boolean('AIO_MQTT_CLEAN_START', env.AIO_MQTT_CLEAN_START) ?? true,
  }
  const keepalive = nonEmpty(env.AIO_MQTT_KEEP_ALIVE)
  if (keepalive !== undefined) options.keepaliveSec = wholeNumber('AIO_MQTT_KEEP_ALIVE', keepalive, 0)
  const sessionExpiry = nonEmpty(env.AIO_MQTT_SESSION_EXPIRY)
  if (sessionExpiry !== undefined) options.sessionExpirySec = wholeNumber('AIO_MQTT_SESSION_EXPIRY', sessionExpiry, 0)
  const username = pick('username', 'AIO_MQTT_USERNAME')
  if (username !== undefined) options.username = username
  const passwordFile = pick('password-file', 'AIO_MQTT_PASSWORD_FILE')
  const satFile = pick('sat-file', 'AIO_SAT_FILE')
  // The SDKs refuse both at once: a broker takes one way of authenticating per connection.
  if (passwordFile !== undefined && satFile !== undefined) throw new UsageError('give a password file or a SAT file, not both')
  if (passwordFile !== undefined) options.password = readText('password file', passwordFile)
  if (satFile !== undefined) options.satTokenFile = satFile
  const ca = pick('ca-file', 'AIO_TLS_CA_FILE')
  const cert = pick('cert-file', 'AIO_TLS_CERT_FILE')
  const key = pick('key-file', 'AIO_TLS_KEY_FILE')
  const keyPassword = pick('key-password-file', 'AIO_TLS_KEY_PASSWORD_FILE')
  if ((cert === undefined) !== (key === undefined)) throw new UsageError('a client certificate and its key go together: give both --cert-file and --key-file')
  if (keyPassword !== undefined && key === undefined) throw new UsageError('a key password file without a key file')
  if (ca !== undefined || cert !== undefined) {
    options.tls = {
      ...(ca !== undefined ? { ca: readBytes('CA file', ca) } : {}),
      ...(cert !== undefined ? { cert: readBytes('certificate file', cert), key: readBytes('key file', key!) } : {}),
      ...(keyPassword !== undefined ? { passphrase: readText('key password file', keyPassword) } : {}),
    }
  }
  return { options, timeoutMs }
}

function brokerFromEnv(env: NodeJS.ProcessEnv): string | undefined {
  const host = nonEmpty(env.AIO_BROKER_HOSTNAME)
  if (host === undefined) return undefined
  const port = nonEmpty(env.AIO_BROKER_TCP_PORT) ?? '8883'
  wholeNumber('AIO_BROKER_TCP_PORT', port, 1)
  const tls = boolean('AIO_MQTT_USE_TLS', env.AIO_MQTT_USE_TLS) ?? true
  return `${tls ? 'mqtts' : 'mqtt'}://${host.includes(':') ? `[${host}]` : host}:${port}`
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value
}

function boolean(name: string, value: string | undefined): boolean | undefined {
  const v = nonEmpty(value)
  if (v === undefined) return undefined
  if (v === 'true') return true
  if (v === 'false') return false
  throw new UsageError(`${name}=${JSON.stringify(v)}: expected true or false`)
}

export function wholeNumber(name: string, text: string, min: number): number {
  const n = readWholeNumber(text, min)
  if (n === undefined) throw new UsageError(`${name} ${JSON.stringify(text)}: expected a whole number of at least ${min}`)
  return n
}

function readBytes(what: string, file: string): Buffer {
  try {
    return readFileSync(file)
  } catch (err) {
    throw new UsageError(`cannot read the ${what} ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
  }
}

/** A secret file's text without the line end an editor or `echo` adds. */
function readText(what: string, file: string): string {
  return readBytes(what, file).toString('utf8').replace(/\r?\n$/, '')
}

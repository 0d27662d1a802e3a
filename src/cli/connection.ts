import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { EnvironmentError, parsePersistenceProperty, readAioEnvironment, type ClientOptions } from '../client'
import { UsageError } from './exit'
import { wholeNumber as readWholeNumber } from '../checks/whole-number'

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
  'tls-server-name': { type: 'string' },
  timeout: { type: 'string' },
  'persistence-property': { type: 'string' },
  'metric-category': { type: 'string' },
} as const

export const CONNECTION_HELP =
  `Connection (before or after the command; flags win over the AIO SDKs' environment ` +
  `variables in brackets):
  --broker <url>              mqtt://, mqtts://, ws:// or wss:// URL [AIO_STATESTORE_URL]. Default: from
                              AIO_BROKER_HOSTNAME, AIO_BROKER_TCP_PORT (8883) and AIO_MQTT_USE_TLS (true)
                              when set, else mqtt://127.0.0.1:1883 (the emulator's default).
  --client-id <id>            MQTT client id [AIO_MQTT_CLIENT_ID]; default aio-statestore-cli-<random>.
  --username <name>           [AIO_MQTT_USERNAME]
  --password-file <file>      The password, read from a file [AIO_MQTT_PASSWORD_FILE].
  --sat-file <file>           Kubernetes service account token for K8S-SAT authentication [AIO_SAT_FILE].
  --ca-file <file>            CA certificates (PEM) the broker's certificate is checked against [AIO_TLS_CA_FILE].
  --cert-file <file>          Client certificate (PEM) [AIO_TLS_CERT_FILE]; with --key-file.
  --key-file <file>           Its private key (PEM) [AIO_TLS_KEY_FILE].
  --key-password-file <file>  The key's passphrase, read from a file [AIO_TLS_KEY_PASSWORD_FILE].
  --tls-server-name <name>    The name the broker's certificate is checked for, when the URL's host is
                              another (a port-forward to 127.0.0.1 of the cluster's aio-broker).
  --timeout <ms>              How long to wait for the connection and for each request (default 10000).
  --persistence-property <name=value>  The user property --persist sends, as the cluster's Broker resource
                              names it (spec.persistence.dynamicSettings; default aio-persistence=true).
  --metric-category <name>    The CONNECT user property metriccategory the broker's metrics count the
                              traffic under (default node-red-contrib-aio-statestore; "" for none).
  Also read: AIO_MQTT_KEEP_ALIVE (s), AIO_MQTT_SESSION_EXPIRY (s), AIO_MQTT_CLEAN_START (default true here).`

export type ConnectionValues = { [K in keyof typeof CONNECTION_FLAGS]?: string | undefined }

export interface Connection {
  options: ClientOptions
  timeoutMs: number
}

export function connectionFrom(values: ConnectionValues, env: NodeJS.ProcessEnv = process.env): Connection {
  const timeoutMs = values.timeout === undefined ? 10_000 : wholeNumber('--timeout', values.timeout, 1)
  let aio
  try {
    aio = readAioEnvironment(env)
  } catch (err) {
    throw err instanceof EnvironmentError ? new UsageError(err.message) : err
  }
  // A flag replaces its variable; the SDKs' pairing and exclusion rules then apply to the result.
  const passwordFile = values['password-file'] ?? aio.passwordFile
  const satFile = values['sat-file'] ?? aio.satFile
  if (passwordFile !== undefined && satFile !== undefined)
    throw new UsageError('give a password file or a SAT file, not both')
  const cert = values['cert-file'] ?? aio.certFile
  const key = values['key-file'] ?? aio.keyFile
  const keyPassword = values['key-password-file'] ?? aio.keyPasswordFile
  if ((cert === undefined) !== (key === undefined))
    throw new UsageError('a client certificate and its key go together: give both --cert-file and --key-file')
  if (keyPassword !== undefined && key === undefined) throw new UsageError('a key password file without a key file')
  const options: ClientOptions = {
    brokerUrl: values.broker ?? aio.brokerUrl ?? 'mqtt://127.0.0.1:1883',
    clientId: values['client-id'] ?? aio.clientId ?? `aio-statestore-cli-${randomBytes(4).toString('hex')}`,
    requestTimeoutMs: timeoutMs,
    connectTimeoutMs: timeoutMs,
    cleanStart: aio.cleanStart ?? true,
  }
  if (values['persistence-property'] !== undefined) {
    try {
      options.persistenceProperty = parsePersistenceProperty(values['persistence-property'])
    } catch (err) {
      throw new UsageError(`--persistence-property: ${(err as Error).message}`)
    }
  }
  if (values['metric-category'] !== undefined) options.metricCategory = values['metric-category']
  if (aio.keepaliveSec !== undefined) options.keepaliveSec = aio.keepaliveSec
  if (aio.sessionExpirySec !== undefined) options.sessionExpirySec = aio.sessionExpirySec
  const username = values.username ?? aio.username
  if (username !== undefined) options.username = username
  // A file that cannot be read is named by where it came from: the flag, or the SDKs' variable.
  const from = (flag: keyof ConnectionValues, variable: string, what: string) =>
    values[flag] !== undefined ? `${what} (--${flag})` : `${what} (${variable})`
  if (passwordFile !== undefined)
    options.password = readText(from('password-file', 'AIO_MQTT_PASSWORD_FILE', 'password file'), passwordFile)
  if (satFile !== undefined) {
    readBytes(from('sat-file', 'AIO_SAT_FILE', 'SAT file'), satFile)
    options.satTokenFile = satFile
  }
  const ca = values['ca-file'] ?? aio.caFile
  const serverName = values['tls-server-name']
  if (ca !== undefined || cert !== undefined || serverName !== undefined) {
    options.tls = {
      ...(ca !== undefined ? { ca: readBytes(from('ca-file', 'AIO_TLS_CA_FILE', 'CA file'), ca) } : {}),
      ...(cert !== undefined
        ? {
            cert: readBytes(from('cert-file', 'AIO_TLS_CERT_FILE', 'certificate file'), cert),
            key: readBytes(from('key-file', 'AIO_TLS_KEY_FILE', 'key file'), key!),
          }
        : {}),
      ...(keyPassword !== undefined
        ? {
            passphrase: readText(
              from('key-password-file', 'AIO_TLS_KEY_PASSWORD_FILE', 'key password file'),
              keyPassword,
            ),
          }
        : {}),
      ...(serverName !== undefined ? { servername: serverName } : {}),
    }
  }
  return { options, timeoutMs }
}

export function wholeNumber(name: string, text: string, min: number): number {
  const n = readWholeNumber(text, min)
  if (n === undefined)
    throw new UsageError(`${name} ${JSON.stringify(text)}: expected a whole number of at least ${min}`)
  return n
}

function readBytes(what: string, file: string): Buffer {
  try {
    return readFileSync(file)
  } catch (err) {
    throw new UsageError(
      `cannot read the ${what} ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    )
  }
}

/** A secret file's text without the line end an editor or `echo` adds. */
function readText(what: string, file: string): string {
  return readBytes(what, file)
    .toString('utf8')
    .replace(/\r?\n$/, '')
}

#!/usr/bin/env node
import { readFileSync } from 'node:fs'
import { shownUrl } from '../../diagnostics/log'
import { parseArgs } from 'node:util'
import { isLogThreshold, type LogThreshold } from '../logger'
import {
  MEMORY_PROFILES,
  startEmulator,
  type EmulatorOptions,
  type MemoryProfile,
  type TlsListenerOptions,
} from '../index'
import { DEV_PORTS, prepareDevLayout, writeDevEnv, type DevLayout } from '../dev-layout'
import { readAuthenticationFile } from '../resource-file'
import type { AuthenticationSources } from '../core/authentication-documents'

const HELP = `aio-statestore-emulator: a local Azure IoT Operations state store (MQTT 5 + RESP3)

Usage:
  aio-statestore-emulator [--listen [host:]port] [options]    embedded MQTT 5 broker (default 127.0.0.1:1883)
  aio-statestore-emulator --broker <mqtt url> [options]       serve through an existing MQTT 5 broker

Options:
  --listen [host:]port     Start the embedded MQTT 5 broker (aedes) on this address and serve through it.
                           Host defaults to 127.0.0.1; port 0 picks a free port. This is the default
                           (127.0.0.1:1883) when --broker is not given.
  --broker <url>           Serve through an existing MQTT 5 broker (mqtt://, mqtts://, ws://, wss://), e.g.
                           mqtt://127.0.0.1:1883. The emulator connects as an ordinary client and subscribes
                           to the state store request topic. A password in the URL (mqtt://user:pw@host)
                           is taken, with a warning: every user of the machine sees it in ps.
  --username <name>        With --broker: the user name the emulator connects with.
  --password-file <file>   With --broker: its password, read from a file (or set
                           AIO_STATESTORE_BROKER_PASSWORD). --password <password> is still taken, with a
                           warning: every user of the machine sees it in ps.
  --persist <file>         Make persisted keys durable: they are written (and synced) to this append-only
                           file before they are answered, and restored with their versions, expiries and
                           fencing tokens on the next start. Which keys: those SET with the user property
                           aio-persistence=true, or what --broker-config says. Without it every key lives
                           in memory only.
  --broker-config <file>   A Broker resource (YAML or JSON, as applied to a cluster): its spec.persistence
                           decides which keys --persist keeps (stateStore mode None, All, or Custom with
                           stateStoreResources and dynamic mode; dynamicSettings names the user property).
  --max-keys <n>           Key quota: a SET that would create key n+1 is answered
                           "-ERR the quota has been exceeded" (default 1000000; 0 for none).
  --max-bytes <n>          Byte quota over every key and value held and each key's bookkeeping (160
                           bytes a key, 400 with an expiry or a fencing token; default 268435456, 256 MiB;
                           0 for none): a SET past it is answered "-ERR the quota has been exceeded".
  --memory-profile <p>     The AIO broker's memory profile: tiny, low, medium (default) or high. It sets
                           the largest message the embedded broker takes (4, 16, 64 or 256 MiB; a larger
                           packet is refused, DISCONNECT 0x95) and the default of --max-value-bytes.
  --max-value-bytes <n>    The largest value a SET may store (default: the profile's largest message less
                           1 MiB, 66060288 for medium; 0 for none); a larger one is answered
                           "-ERR the quota has been exceeded".
  --max-key-bytes <n>      The longest key a SET may store (default 65535; 0 for none); a longer one is
                           answered "-ERR the quota has been exceeded". Each quota refusal names its
                           flag in the log.
  --max-registrations <n>  KEYNOTIFY registrations one client id may hold (default 10000; 0 for none); one
                           more is answered "-ERR the quota has been exceeded", the log naming the flag.
  --max-connections <n>    With the embedded broker: connections each listener holds at once (default 1024;
                           0 for none), as mosquitto's max_connections; past it a new connection is closed
                           at once, and the log names the flag.
  --tls-handshake-timeout <seconds>
                           With the embedded broker: how long a TLS listener waits for a client's handshake
                           before it closes the socket (default 10).
  --subscriber-queue <length>[:DropOldest|None]
                           Embedded broker: the AIO broker's subscriber queue limit for key notifications
                           (Broker spec.advanced.clients.subscriberQueueLimit): at most <length> sent and
                           unacknowledged and <length> waiting; DropOldest (the default here) drops the
                           oldest waiting one, and nothing tells the subscriber.
  --clock-offset <ms>      Run the service's clock this many milliseconds ahead (negative: behind, written
                           --clock-offset=-90000) of this machine's, to rehearse a cluster whose clock is
                           off: beyond 60 s requests are refused as TimestampSkew, or their answers'
                           versions are too far ahead for the client.
  --node-id <id>           The HLC node id of the service, in every version it mints (default: a random
                           UUID). Must not contain ":".
  --auth <file>            A BrokerAuthorization resource (YAML or JSON, several documents allowed, as
                           applied to a cluster), or its bare authorizationPolicies object ({"rules": [...]}).
                           Principals by clientIds, usernames and attributes. With the embedded broker,
                           brokerResources are enforced as on AIO: CONNECT without a Connect rule gets
                           CONNACK 0x87, PUBLISH and SUBSCRIBE outside the rules' topics 0x87. State store
                           requests outside stateStoreResources are answered "-ERR not authorized". The
                           info log names the rule that allowed or refused each request. Example:
                             {"rules": [{"principals": {"clientIds": ["sensor-*"]},
                               "brokerResources": [{"method": "Connect"}],
                               "stateStoreResources": [{"method": "ReadWrite", "keyType": "Pattern",
                                                        "keys": ["{principal.clientId}/*"]}]}]}
  --users-file <file>      With the embedded broker: accept the users of this file, one name:password a
                           line (# starts a comment). Once any user or --sat-token is given, connections
                           without accepted credentials are refused (CONNACK "bad user name or password" /
                           "not authorized"). --user <name:password> (repeatable) is still taken, with a
                           warning: every user of the machine sees it in ps.
  --attributes <name:attr=value[,attr=value...]>
                           With the embedded broker: authorization attributes of the user <name> (as a
                           cluster takes them from a client certificate), matched by rules with
                           principals.attributes and substituted for {principal.attributes.attr}
                           (repeatable).
  --sat-token <token>      With the embedded broker: accept this Kubernetes service account token with
                           the MQTT 5 enhanced authentication method K8S-SAT (repeatable).
  --sat-token-file <file>  The same, the token read from a file (repeatable).
  --seed <file>            Put these keys into the store at start: the statestore.json of the WASM graph
                           development environment ([{"key": value}, ...]) or an aio-statestore export
                           (NDJSON). Keys restored from --persist are kept as they are.
  --dev <dir>              The AIO SDKs' development layout: makes (once) a CA, a localhost certificate, a
                           client certificate and a token in <dir>/.session (broker-ca.crt, client.crt,
                           client.key, token.txt) with openssl, writes <dir>/.env with the AIO_* lines of
                           the TLS + SAT listener, and serves the SDKs' dev ports: --listen 1883 (plain, no
                           authentication), --x509-listen 8883 (TLS + X.509) and --sat-listen 8884
                           (TLS + SAT); each can be changed with its flag. Files of <dir>/.session that
                           others may write are refused (chmod go-w), and so is a <dir> everyone may
                           write. A start that fails (a port taken) leaves no folder it made. See
                           docs/cluster.md.
  --tls-cert <file>        The TLS listeners' certificate (PEM, with its chain); --tls-key its key.
  --tls-key <file>
  --x509-listen [host:]port
                           A TLS listener authenticating clients by their certificate, signed by the CA of
                           --client-ca <file>. Attributes for authorization come from --authn.
  --client-ca <file>
  --sat-listen [host:]port A TLS listener authenticating clients by K8S-SAT: the tokens in the files of
                           --sat-token-file, read again at every CONNECT (a rotated file counts at once).
  --authn <file>           Who authenticated clients are, as a cluster's resources say (YAML or JSON): a
                           BrokerAuthentication's x509Settings.authorizationAttributes (certificate subject
                           → attributes, matched from the client's certificate up its chain) and a
                           ServiceAccount's aio-broker-auth/<name> annotations (attributes of SAT clients).
  --no-scan                Answer SCAN "-ERR unknown command", as the released AIO broker does (the emulator
                           has SCAN, which the SDKs designed but no released broker answers yet).
  --admin                  Serve the emulator's admin channel (list, filter and inspect every key; what the
                           Node-RED sidebar's key browser uses) as MQTT 5 request/response on the topic
                           aio-statestore-emulator/admin/v1/request. Off by default. For development only:
                           anyone who can publish to that topic reads every key (restrict it with broker ACLs).
  --log-level <level>      silent, error, warn, info (default) or debug. Every refused request is logged
                           at info with the reason; dropped requests at warn.
  -h, --help               This text.

It prints one line containing "ready" and the broker URL when it serves, and stops cleanly on
SIGINT or SIGTERM (pending persistent writes are flushed first), and when the process that started
it (npx, npm, a shell) exits. SIGHUP reads the --auth file again
and disconnects every client, as a cluster's policy update does.
`

/** How often the emulator looks whether the process that started it is still there. */
const PARENT_CHECK_MS = 500

/** A port already taken: the flag that chooses another for that listener. */
function portHint(err: unknown, options: EmulatorOptions): string {
  const e = err as NodeJS.ErrnoException & { port?: number }
  if (e.code !== 'EADDRINUSE') return ''
  const port = e.port ?? Number(/:(\d+)$/.exec(e.message)?.[1])
  const tlsIndex = options.tlsListeners?.findIndex((l) => l.port === port) ?? -1
  const flag =
    tlsIndex < 0
      ? '--listen'
      : options.tlsListeners![tlsIndex]!.authentication.method === 'x509'
        ? '--x509-listen'
        : '--sat-listen'
  return (
    `\nport ${port} is taken (another broker, or npm start?): choose another with ${flag} PORT (0 picks a free ` +
    `one)`
  )
}

function fail(message: string): never {
  process.stderr.write(`aio-statestore-emulator: ${message}\nRun with --help for usage.\n`)
  process.exit(2)
}

function parseListen(text: string): { host?: string; port: number } {
  const m = /^(?:(\[[^\]]+\]|[^:]+|[^\]]*:[^\]]*)?:)?(\d+)$/.exec(text)
  const hostPart = m?.[1]
  const port = m ? Number(m[2]) : NaN
  if (!m || !Number.isInteger(port) || port < 0 || port > 65535)
    fail(`--listen ${JSON.stringify(text)}: expected [host:]port`)
  const host = hostPart?.startsWith('[') ? hostPart.slice(1, -1) : hostPart
  return host ? { host, port } : { port }
}

/** A secret given on the command line is still taken, with a warning: ps shows every process's arguments. */
function warnArgv(flag: string, instead: string): void {
  process.stderr.write(
    `aio-statestore-emulator: warning: ${flag} puts a password where every user of this machine sees it (ps); use ` +
      `${instead}\n`,
  )
}

/** Whether a URL carries a password in its user info (`mqtt://user:pw@host`). */
function urlPassword(url: string): boolean {
  try {
    return new URL(url).password !== ''
  } catch {
    return false
  }
}

/** A secret read from a file, without its trailing newline. */
function readSecret(flag: string, file: string): string {
  try {
    return readFileSync(file, 'utf8').replace(/\r?\n$/, '')
  } catch (err) {
    return fail(`${flag} ${file}: ${(err as Error).message}`)
  }
}

function parseCount(name: string, text: string): number {
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(Number(text)))
    fail(`${name} ${JSON.stringify(text)}: expected a whole number`)
  return Number(text)
}

/** The TLS listeners the flags ask for (with --dev, the SDKs' dev layout); null when none. */
function tlsListenersFrom(
  values: Record<string, string | string[] | boolean | undefined>,
): { listeners: TlsListenerOptions[]; layout: (DevLayout & { undo(): void }) | null } | null {
  const text = (name: string) => values[name] as string | undefined
  const dev = text('dev')
  const x509Listen = text('x509-listen') ?? (dev !== undefined ? String(DEV_PORTS.x509) : undefined)
  const satListen = text('sat-listen') ?? (dev !== undefined ? String(DEV_PORTS.sat) : undefined)
  if (x509Listen === undefined && satListen === undefined) {
    for (const flag of ['tls-cert', 'tls-key', 'client-ca', 'authn'])
      if (text(flag) !== undefined) fail(`--${flag} goes with --x509-listen, --sat-listen or --dev`)
    return null
  }
  const sat = satListen === undefined ? undefined : parseListen(satListen)
  let layout: (DevLayout & { undo(): void }) | null = null
  if (dev !== undefined) {
    try {
      layout = prepareDevLayout(dev)
    } catch (err) {
      fail(`--dev ${dev}: ${(err as Error).message}`)
    }
  }
  const cert = text('tls-cert') ?? layout?.brokerCertFile
  const key = text('tls-key') ?? layout?.brokerKeyFile
  if (!cert || !key) fail('a TLS listener needs --tls-cert and --tls-key (or --dev)')
  let sources: AuthenticationSources = { x509: [], serviceAccountAttributes: {} }
  const authn = text('authn')
  if (authn !== undefined) {
    try {
      sources = readAuthenticationFile(authn)
    } catch (err) {
      fail(`--authn: ${(err as Error).message}`)
    }
  }
  const listeners: TlsListenerOptions[] = []
  if (x509Listen !== undefined) {
    const ca = text('client-ca') ?? layout?.caFile
    if (!ca) fail('--x509-listen needs --client-ca, the CA that signs the client certificates')
    listeners.push({
      ...parseListen(x509Listen),
      certFile: cert,
      keyFile: key,
      clientCaFile: ca,
      authentication: { method: 'x509', attributes: sources.x509 },
    })
  }
  if (sat !== undefined) {
    const files = [...((values['sat-token-file'] as string[] | undefined) ?? []), ...(layout ? [layout.tokenFile] : [])]
    if (files.length === 0) fail('--sat-listen needs --sat-token-file, the file of an accepted token')
    const attributes =
      Object.keys(sources.serviceAccountAttributes).length > 0 ? { attributes: sources.serviceAccountAttributes } : {}
    listeners.push({
      ...sat,
      certFile: cert,
      keyFile: key,
      authentication: { method: 'sat', tokenFiles: files.map((file) => ({ file, ...attributes })) },
    })
  }
  return { listeners, layout }
}

async function main(): Promise<void> {
  let values
  try {
    ;({ values } = parseArgs({
      options: {
        listen: { type: 'string' },
        broker: { type: 'string' },
        username: { type: 'string' },
        password: { type: 'string' },
        'password-file': { type: 'string' },
        'users-file': { type: 'string' },
        persist: { type: 'string' },
        'max-keys': { type: 'string' },
        'max-bytes': { type: 'string' },
        'max-value-bytes': { type: 'string' },
        'memory-profile': { type: 'string' },
        'max-key-bytes': { type: 'string' },
        'max-connections': { type: 'string' },
        'max-registrations': { type: 'string' },
        'tls-handshake-timeout': { type: 'string' },
        'node-id': { type: 'string' },
        'clock-offset': { type: 'string' },
        'subscriber-queue': { type: 'string' },
        auth: { type: 'string' },
        'broker-config': { type: 'string' },
        attributes: { type: 'string', multiple: true },
        user: { type: 'string', multiple: true },
        'sat-token': { type: 'string', multiple: true },
        'sat-token-file': { type: 'string', multiple: true },
        'log-level': { type: 'string' },
        admin: { type: 'boolean' },
        'no-scan': { type: 'boolean' },
        seed: { type: 'string' },
        dev: { type: 'string' },
        'tls-cert': { type: 'string' },
        'tls-key': { type: 'string' },
        'x509-listen': { type: 'string' },
        'client-ca': { type: 'string' },
        'sat-listen': { type: 'string' },
        authn: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }))
  } catch (err) {
    fail((err as Error).message)
  }
  if (values.help) {
    process.stdout.write(HELP)
    return
  }
  const level = values['log-level'] ?? 'info'
  if (!isLogThreshold(level)) fail(`--log-level ${JSON.stringify(level)}: expected silent, error, warn, info or debug`)
  const logLevel: LogThreshold = level
  if (values.broker && values.listen) fail('give --broker or --listen, not both')

  const options: EmulatorOptions = { logLevel }
  const tls = tlsListenersFrom(values)
  if (tls && values.broker) fail('--dev, --x509-listen and --sat-listen apply to the embedded broker, not to --broker')
  if (tls) {
    options.tlsListeners = tls.listeners
    // The SAT listener's tokens are its own: the plain listener stays open (the SDKs' dev port 1883 has no
    // authentication).
    values['sat-token-file'] = undefined
    if (tls.layout && values.listen === undefined) values.listen = String(DEV_PORTS.plain)
  }
  if (values.broker) {
    options.brokerUrl = values.broker
    if (urlPassword(values.broker))
      warnArgv(
        '--broker with a password in its URL',
        '--username with --password-file or AIO_STATESTORE_BROKER_PASSWORD',
      )
    if (values.username !== undefined) options.brokerUsername = values.username
    if (values.password !== undefined) warnArgv('--password', '--password-file or AIO_STATESTORE_BROKER_PASSWORD')
    if (values.password !== undefined && values['password-file'] !== undefined)
      fail('give --password or --password-file, not both')
    const passwordFile =
      values['password-file'] !== undefined ? readSecret('--password-file', values['password-file']) : undefined
    const password = values.password ?? passwordFile ?? process.env.AIO_STATESTORE_BROKER_PASSWORD
    if (password !== undefined) options.brokerPassword = password
    if (values.user || values['users-file'] || values['sat-token'] || values['sat-token-file'] || values.attributes)
      fail('--user, --attributes and --sat-token apply to the embedded broker, not to --broker')
  } else {
    options.listen = parseListen(values.listen ?? '1883')
    const users: Record<string, string> = {}
    if (values.user) warnArgv('--user', '--users-file')
    for (const u of values.user ?? []) {
      const i = u.indexOf(':')
      // The value holds a password: only the name is shown.
      if (i <= 0) fail(`--user: expected name:password, got no ":"`)
      if (u.slice(i + 1).trim() === '')
        fail(`--user ${JSON.stringify(u.slice(0, i))}: the password is empty; a user needs one`)
      users[u.slice(0, i)] = u.slice(i + 1)
    }
    if (values['users-file'] !== undefined) {
      const file = values['users-file']
      readSecret('--users-file', file)
        .split(/\r?\n/)
        .forEach((line, n) => {
          if (line.trim() === '' || line.trimStart().startsWith('#')) return
          const i = line.indexOf(':')
          if (i <= 0) fail(`--users-file ${file}: line ${n + 1}: expected name:password`)
          const name = line.slice(0, i).trim()
          if (line.slice(i + 1).trim() === '')
            fail(
              `--users-file ${file}: line ${n + 1}: the password of ${JSON.stringify(name)} is empty; a user needs one`,
            )
          users[name] = line.slice(i + 1)
        })
    }
    const satTokens = [...(values['sat-token'] ?? [])]
    for (const file of values['sat-token-file'] ?? []) {
      try {
        satTokens.push(readFileSync(file, 'utf8').trim())
      } catch (err) {
        fail(`--sat-token-file ${file}: ${(err as Error).message}`)
      }
    }
    const attributes: Record<string, Record<string, string>> = {}
    for (const a of values.attributes ?? []) {
      const i = a.indexOf(':')
      const pairs = a
        .slice(i + 1)
        .split(',')
        .map((pair) => pair.split('='))
      if (i <= 0 || pairs.some((p) => p.length !== 2 || !p[0]))
        fail(`--attributes ${JSON.stringify(a)}: expected name:attribute=value[,attribute=value...]`)
      attributes[a.slice(0, i)] = {
        ...attributes[a.slice(0, i)],
        ...(Object.fromEntries(pairs) as Record<string, string>),
      }
    }
    if (Object.keys(users).length > 0 || satTokens.length > 0 || Object.keys(attributes).length > 0)
      options.brokerAuth = { users, satTokens, attributes }
  }
  if (values.persist) options.persistFile = values.persist
  if (values['max-keys'] !== undefined) options.maxKeys = parseCount('--max-keys', values['max-keys']) || Infinity
  if (values['max-bytes'] !== undefined) options.maxBytes = parseCount('--max-bytes', values['max-bytes']) || Infinity
  const profile = values['memory-profile']
  if (profile !== undefined) {
    if (!Object.hasOwn(MEMORY_PROFILES, profile))
      fail(`--memory-profile ${JSON.stringify(profile)}: expected ${Object.keys(MEMORY_PROFILES).join(', ')}`)
    options.memoryProfile = profile as MemoryProfile
  }
  if (values['max-value-bytes'] !== undefined)
    options.maxValueBytes = parseCount('--max-value-bytes', values['max-value-bytes']) || Infinity
  if (values['max-key-bytes'] !== undefined)
    options.maxKeyBytes = parseCount('--max-key-bytes', values['max-key-bytes']) || Infinity
  if (values['max-registrations'] !== undefined)
    options.maxRegistrations = parseCount('--max-registrations', values['max-registrations']) || Infinity
  if (values['max-connections'] !== undefined)
    options.maxConnections = parseCount('--max-connections', values['max-connections']) || Infinity
  if (values['tls-handshake-timeout'] !== undefined) {
    const seconds = parseCount('--tls-handshake-timeout', values['tls-handshake-timeout'])
    if (seconds < 1) fail('--tls-handshake-timeout takes a whole number of seconds >= 1')
    options.tlsHandshakeTimeoutMs = seconds * 1000
  }
  if (values['node-id'] !== undefined) options.nodeId = values['node-id']
  if (values['subscriber-queue'] !== undefined) {
    const m = /^(\d+)(?::(None|DropOldest))?$/.exec(values['subscriber-queue'].trim())
    if (!m || Number(m[1]) < 1)
      fail(
        `--subscriber-queue ${JSON.stringify(values['subscriber-queue'])}: expected <length>[:DropOldest|None], ` +
          `e.g. 100:DropOldest`,
      )
    options.subscriberQueue = {
      length: Number(m[1]),
      strategy: (m[2] as 'None' | 'DropOldest' | undefined) ?? 'DropOldest',
    }
  }
  if (values['clock-offset'] !== undefined) {
    const text = values['clock-offset']
    if (!/^[+-]?\d+$/.test(text.trim()) || !Number.isSafeInteger(Number(text)))
      fail(`--clock-offset ${JSON.stringify(text)}: expected whole milliseconds, e.g. --clock-offset=-90000`)
    options.clockOffsetMs = Number(text)
  }
  if (values.auth) options.authorizationFile = values.auth
  if (values['broker-config']) options.brokerConfigFile = values['broker-config']
  if (values.admin) options.adminOverMqtt = true
  if (values['no-scan']) options.scan = false
  if (values.seed) options.seedFile = values.seed

  let emulator
  try {
    emulator = await startEmulator(options)
  } catch (err) {
    // A layout this start made is taken back: no folder with certificates and no .env is left.
    tls?.layout?.undo()
    process.stderr.write(`aio-statestore-emulator: cannot start: ${(err as Error).message}${portHint(err, options)}\n`)
    process.exit(1)
  }
  process.stdout.write(
    `aio-statestore-emulator ready on ${shownUrl(emulator.brokerUrl)} (node id ${emulator.nodeId})\n`,
  )
  tls?.listeners.forEach((l, i) =>
    process.stdout.write(
      `aio-statestore-emulator TLS + ${l.authentication.method === 'x509' ? 'X.509' : 'SAT'} on ` +
        `${emulator.tlsUrls[i]}\n`,
    ),
  )
  if (tls?.layout) {
    const satIndex = tls.listeners.findIndex((l) => l.authentication.method === 'sat')
    if (satIndex >= 0) writeDevEnv(tls.layout, Number(new URL(emulator.tlsUrls[satIndex]!).port))
  }
  if (tls?.layout)
    process.stdout.write(
      `aio-statestore-emulator dev layout in ${tls.layout.dir}: export ${tls.layout.envFile} (set -a; . ` +
        `${tls.layout.envFile}; set +a) to connect over TLS + SAT\n`,
    )

  let stopping = false
  const stop = (signal: NodeJS.Signals, why: string = signal) => {
    if (stopping) {
      process.stderr.write(`aio-statestore-emulator: ${signal} again, exiting now\n`)
      process.exit(1)
    }
    stopping = true
    process.stderr.write(`aio-statestore-emulator: ${why}, stopping\n`)
    emulator.stop().then(
      () => process.exit(0),
      (err: Error) => {
        process.stderr.write(`aio-statestore-emulator: stop failed: ${err.message}\n`)
        process.exit(1)
      },
    )
  }
  process.on('SIGINT', () => stop('SIGINT'))
  process.on('SIGTERM', () => stop('SIGTERM'))
  // Started by npx or npm, this process is a child of a shell or of npm: stopping them does not pass
  // the signal on, and it would live on with its ports. Being re-parented means whoever started it is gone.
  const parent = process.ppid
  setInterval(() => {
    if (process.ppid !== parent && !stopping) stop('SIGTERM', 'the process that started it exited')
  }, PARENT_CHECK_MS).unref()
  // A policy update, as `az iot ops broker authz apply` makes one: the --auth file is read again and every client
  // disconnected.
  if (options.authorizationFile) {
    process.on('SIGHUP', () => {
      emulator.updateAuthorization().then(
        (n) =>
          process.stdout.write(
            `aio-statestore-emulator: authorization updated from ${options.authorizationFile}; ${n} client(s) ` +
              `disconnected\n`,
          ),
        (err: Error) =>
          process.stderr.write(
            `aio-statestore-emulator: authorization not updated, the policy in force stays: ${err.message}\n`,
          ),
      )
    })
  }
}

void main()

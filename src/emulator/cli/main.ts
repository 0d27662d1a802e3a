#!/usr/bin/env node
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { isLogThreshold, type LogThreshold } from '../logger'
import { startEmulator, type EmulatorOptions } from '../index'

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
                           to the state store request topic.
  --username <name>        With --broker: the user name the emulator connects with.
  --password <password>    With --broker: its password (or set AIO_STATESTORE_BROKER_PASSWORD).
  --persist <file>         Make persisted keys durable: they are written (and synced) to this append-only
                           file before they are answered, and restored with their versions, expiries and
                           fencing tokens on the next start. Which keys: those SET with the user property
                           aio-persistence=true, or what --broker-config says. Without it every key lives
                           in memory only.
  --broker-config <file>   A Broker resource (YAML or JSON, as applied to a cluster): its spec.persistence
                           decides which keys --persist keeps (stateStore mode None, All, or Custom with
                           stateStoreResources and dynamic mode; dynamicSettings names the user property).
  --max-keys <n>           Key quota: a SET that would create key n+1 is answered
                           "-ERR the quota has been exceeded". Unlimited by default.
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
  --user <name:password>   With the embedded broker: accept this user (repeatable). Once any --user or
                           --sat-token is given, connections without accepted credentials are refused
                           (CONNACK "bad user name or password" / "not authorized").
  --attributes <name:attr=value[,attr=value...]>
                           With the embedded broker: authorization attributes of the user <name> (as a
                           cluster takes them from a client certificate), matched by rules with
                           principals.attributes and substituted for {principal.attributes.attr}
                           (repeatable).
  --sat-token <token>      With the embedded broker: accept this Kubernetes service account token with
                           the MQTT 5 enhanced authentication method K8S-SAT (repeatable).
  --sat-token-file <file>  The same, the token read from a file (repeatable).
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
SIGINT or SIGTERM (pending persistent writes are flushed first).
`

function fail(message: string): never {
  process.stderr.write(`aio-statestore-emulator: ${message}\nRun with --help for usage.\n`)
  process.exit(2)
}

function parseListen(text: string): { host?: string; port: number } {
  const m = /^(?:(\[[^\]]+\]|[^:]+|[^\]]*:[^\]]*)?:)?(\d+)$/.exec(text)
  const hostPart = m?.[1]
  const port = m ? Number(m[2]) : NaN
  if (!m || !Number.isInteger(port) || port < 0 || port > 65535) fail(`--listen ${JSON.stringify(text)}: expected [host:]port`)
  const host = hostPart?.startsWith('[') ? hostPart.slice(1, -1) : hostPart
  return host ? { host, port } : { port }
}

function parseCount(name: string, text: string): number {
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(Number(text))) fail(`${name} ${JSON.stringify(text)}: expected a whole number`)
  return Number(text)
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
        persist: { type: 'string' },
        'max-keys': { type: 'string' },
        'node-id': { type: 'string' },
        auth: { type: 'string' },
        'broker-config': { type: 'string' },
        attributes: { type: 'string', multiple: true },
        user: { type: 'string', multiple: true },
        'sat-token': { type: 'string', multiple: true },
        'sat-token-file': { type: 'string', multiple: true },
        'log-level': { type: 'string' },
        admin: { type: 'boolean' },
        'no-scan': { type: 'boolean' },
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
  if (values.broker) {
    options.brokerUrl = values.broker
    if (values.username !== undefined) options.brokerUsername = values.username
    const password = values.password ?? process.env.AIO_STATESTORE_BROKER_PASSWORD
    if (password !== undefined) options.brokerPassword = password
    if (values.user || values['sat-token'] || values['sat-token-file'] || values.attributes) fail('--user, --attributes and --sat-token apply to the embedded broker, not to --broker')
  } else {
    options.listen = parseListen(values.listen ?? '1883')
    const users: Record<string, string> = {}
    for (const u of values.user ?? []) {
      const i = u.indexOf(':')
      if (i <= 0) fail(`--user ${JSON.stringify(u)}: expected name:password`)
      users[u.slice(0, i)] = u.slice(i + 1)
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
      const pairs = a.slice(i + 1).split(',').map((pair) => pair.split('='))
      if (i <= 0 || pairs.some((p) => p.length !== 2 || !p[0])) fail(`--attributes ${JSON.stringify(a)}: expected name:attribute=value[,attribute=value...]`)
      attributes[a.slice(0, i)] = { ...attributes[a.slice(0, i)], ...(Object.fromEntries(pairs) as Record<string, string>) }
    }
    if (Object.keys(users).length > 0 || satTokens.length > 0 || Object.keys(attributes).length > 0) options.brokerAuth = { users, satTokens, attributes }
  }
  if (values.persist) options.persistFile = values.persist
  if (values['max-keys'] !== undefined) options.maxKeys = parseCount('--max-keys', values['max-keys'])
  if (values['node-id'] !== undefined) options.nodeId = values['node-id']
  if (values.auth) options.authorizationFile = values.auth
  if (values['broker-config']) options.brokerConfigFile = values['broker-config']
  if (values.admin) options.adminOverMqtt = true
  if (values['no-scan']) options.scan = false

  let emulator
  try {
    emulator = await startEmulator(options)
  } catch (err) {
    process.stderr.write(`aio-statestore-emulator: cannot start: ${(err as Error).message}\n`)
    process.exit(1)
  }
  process.stdout.write(`aio-statestore-emulator ready on ${emulator.brokerUrl} (node id ${emulator.nodeId})\n`)

  let stopping = false
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      process.stderr.write(`aio-statestore-emulator: ${signal} again, exiting now\n`)
      process.exit(1)
    }
    stopping = true
    process.stderr.write(`aio-statestore-emulator: ${signal}, stopping\n`)
    emulator.stop().then(
      () => process.exit(0),
      (err: Error) => {
        process.stderr.write(`aio-statestore-emulator: stop failed: ${err.message}\n`)
        process.exit(1)
      },
    )
  }
  process.on('SIGINT', stop)
  process.on('SIGTERM', stop)
}

void main()

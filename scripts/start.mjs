// `npm start`: a local Node-RED with this package loaded from the working tree, the embedded MQTT 5
// broker with the state-store emulator attached, and the example flows deployed (docs/start.md).
//
// Node-RED runs embedded in this process rather than as a `node-red` child: the editor can listen
// on port 0 and report the real port, "ready" means the flows have started (the CLI only logs it),
// and one process to stop means Ctrl-C or SIGTERM can never leave a runtime or broker behind.
//
// Machine-readable lines for scripts (the browser tests): `broker ready at mqtt://…` and, last,
// `editor ready at http://…` once the flows are running.
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { createRequire } from 'node:module'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { devLayoutFromArgs } from './start-dev-layout.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(import.meta.url)
const say = (line) => console.log(`[npm start] ${line}`)
// Paths as the user would type them: relative inside the repository, absolute elsewhere.
const shown = (p) => {
  const r = relative(root, p)
  return r && !r.startsWith('..') ? r : p
}

function fail(message) {
  console.error(`[npm start] ${message}`)
  process.exit(1)
}

const [major, minor] = process.versions.node.split('.').map(Number)
if (major < 22 || (major === 22 && minor < 9)) {
  fail(
    `Node-RED 5 needs Node.js >= 22.9, this is ${process.version} (${process.execPath}).\n` +
      '  Run it as `npm start`: npm puts node_modules/.bin first on PATH, where the `node` devDependency\n' +
      '  provides Node.js 24. If that is missing, run `npm install` first.',
  )
}

function port(name, fallback) {
  const value = process.env[name]
  if (value === undefined || value === '') return fallback
  const n = Number(value)
  if (!Number.isInteger(n) || n < 0 || n > 65535) fail(`${name}=${value} is not a TCP port (0 picks a free one)`)
  return n
}

// `npm start -- --fresh`: start with an empty store (the kept one is deleted); `-- --memory`: a
// store in memory only, kept nowhere (the emulator without a persistence file).
// `-- --dev DIR`: the AIO SDKs' development layout (scripts/start-dev-layout.mjs).
const args = process.argv.slice(2)
const unknown = args.filter((a, i) => a !== '--fresh' && a !== '--memory' && a !== '--dev' && args[i - 1] !== '--dev')
if (unknown.length > 0)
  fail(
    `unknown argument ${unknown.join(' ')}: npm start -- --fresh starts with an empty store, npm start -- --memory keeps the store in memory only, npm start -- --dev DIR runs in the AIO SDKs' development layout`,
  )
const fresh = args.includes('--fresh')
const memory = args.includes('--memory')

port('PORT', 1880) // checked here for a clear message; dev/settings.js reads it
const mqttPort = port('MQTT_PORT', 1883)
const settings = require('../dev/settings.js')
const emulatorEntry = join(root, 'dist', 'src', 'emulator', 'index.js')
if (!existsSync(emulatorEntry))
  fail(`${shown(emulatorEntry)} is missing: run \`npm run build\` (npm start does it first)`)
const { startEmulator } = require(emulatorEntry)
const { readExamples, mergeExamples, pointAtBroker, quietExamples } = require('../dev/flows.js')
let devLayout = null
try {
  devLayout = devLayoutFromArgs(root, args, port)
} catch (err) {
  fail(err.message)
}

// The flow file is seeded once. Afterwards it belongs to the user (Node-RED rewrites it on every
// deploy), so it is never overwritten, and the tracked examples are only ever read.
function seedFlows(brokerUrl) {
  mkdirSync(settings.userDir, { recursive: true })
  const flowFile = resolve(settings.userDir, settings.flowFile)
  if (existsSync(flowFile)) {
    say(`flows: ${shown(flowFile)} (yours; delete it to get the examples back)`)
    return
  }
  const examples = readExamples(join(root, 'examples'))
  const nodes = quietExamples(pointAtBroker(mergeExamples(examples), brokerUrl))
  writeFileSync(flowFile, JSON.stringify(nodes, null, 4) + '\n')
  say(`flows: seeded ${shown(flowFile)} with ${examples.length} example flow(s) from examples/`)
}

// The seeded config nodes name the broker through an environment variable, so the flows keep
// working when MQTT_PORT changes between runs; a config node with a blank Broker URL uses it too.
const { START_BROKER_ENV: BROKER_ENV } = require(join(root, 'dist', 'nodes', 'config', 'client-options.js'))

let emulator = null
let RED = null
let server = null
let stopping = null

async function stop(signal, exitCode = 0) {
  if (stopping) return stopping
  say(`${signal}: stopping Node-RED, the emulator and the broker`)
  const hardStop = setTimeout(() => {
    console.error('[npm start] did not stop within 15 s, exiting anyway')
    process.exit(1)
  }, 15000)
  hardStop.unref()
  stopping = (async () => {
    try {
      if (RED) await RED.stop()
    } catch (err) {
      console.error('[npm start] stopping Node-RED:', err)
    }
    if (server) {
      server.closeAllConnections()
      await new Promise((r) => server.close(() => r()))
    }
    try {
      if (emulator) await emulator.stop()
    } catch (err) {
      console.error('[npm start] stopping the emulator:', err)
    }
    say('stopped')
  })()
  await stopping
  process.exit(exitCode)
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    // A second Ctrl-C while stopping means "now".
    if (stopping) process.exit(1)
    void stop(signal)
  })
}

// `npm start` runs this under `sh -c`. A SIGTERM sent to npm reaches that shell, which dies
// without passing it on, and this process would live on, holding both ports. Being re-parented
// is the sign that whoever started us is gone.
const parent = process.ppid
setInterval(() => {
  if (process.ppid !== parent && !stopping) void stop('parent process exited')
}, 500).unref()

function listen(srv, portNumber, host) {
  return new Promise((resolveListen, reject) => {
    srv.once('error', reject)
    srv.listen(portNumber, host, () => {
      srv.off('error', reject)
      resolveListen(srv.address().port)
    })
  })
}

// RED.start() resolves before the flows run; the runtime reports them as started, or as waiting
// for node types that failed to load.
function flowsRunning(events) {
  return new Promise((resolveRunning) => {
    const onStarted = () => done(null)
    const onEvent = (event) => {
      if (event?.id === 'runtime-state' && event.payload?.error) done(event.payload)
    }
    const done = (problem) => {
      events.off('flows:started', onStarted)
      events.off('runtime-event', onEvent)
      resolveRunning(problem)
    }
    events.on('flows:started', onStarted)
    events.on('runtime-event', onEvent)
  })
}

// The store is kept beside the flows, in the user directory, so a second run finds its keys (and
// the context kept in them) again; dev/broker.yaml persists every key, as persistence mode All.
const storeFile = resolve(settings.userDir, 'statestore.aof')

async function main() {
  mkdirSync(settings.userDir, { recursive: true })
  if (fresh) rmSync(storeFile, { force: true })
  try {
    emulator = await startEmulator({
      ...(memory ? {} : { persistFile: storeFile, brokerConfigFile: join(root, 'dev', 'broker.yaml') }),
      listen: { host: '127.0.0.1', port: mqttPort },
      logLevel: process.env.EMULATOR_LOG_LEVEL || 'info',
      // The editor's state store sidebar lists this emulator's keys through its admin channel.
      admin: true,
      logger: (level, message) => console.log(`[emulator] [${level}] ${message}`),
      ...(devLayout ? { tlsListeners: devLayout.tlsListeners } : {}),
    })
  } catch (err) {
    if (err?.code === 'EADDRINUSE')
      fail(`MQTT port ${mqttPort} is in use on 127.0.0.1: stop what uses it, or set MQTT_PORT`)
    throw err
  }
  if (stopping) return
  process.env[BROKER_ENV] = emulator.brokerUrl
  if (devLayout) {
    // The seeded flows' ${AIO_STATESTORE_URL} becomes the TLS + SAT listener; CA and token come from .env.
    const [x509, sat] = devLayout.started(emulator)
    process.env[BROKER_ENV] = `mqtts://localhost:${new URL(sat).port}`
    say(
      `dev layout in ${shown(devLayout.layout.dir)}: TLS + X.509 at ${x509}, TLS + SAT at ${sat}; this Node-RED has ${shown(devLayout.layout.envFile)}'s AIO_* environment`,
    )
  }
  say(`broker ready at ${emulator.brokerUrl}`)
  say(`  (MQTT 5, embedded aedes with the state-store emulator; point MQTT clients and other tools here)`)
  const kept = emulator.keyCount
  say(
    memory
      ? 'store: in memory only (--memory); nothing is kept for the next run'
      : fresh
        ? `store: started empty (--fresh); every key is kept in ${shown(storeFile)} for the next run`
        : `store: ${kept} key(s) from ${shown(storeFile)}; every key is kept there for the next run (npm start -- --fresh starts empty)`,
  )

  // Both ports are taken before the flows are written, so a busy port leaves at most the store file.
  RED = require('node-red')
  // express is Node-RED's own dependency; resolve it from there so it always matches the runtime.
  const express = createRequire(require.resolve('node-red'))('express')
  const app = express()
  // The editor port is taken now (so a busy port fails before the flows are written) but requests
  // wait until the flows run: answered earlier, Node-RED's editor API replies 503 and logs
  // "[error] Node-RED runtime not started" for a user who simply opened the browser early.
  let runtimeReady
  const ready = new Promise((r) => (runtimeReady = r))
  app.use((req, res, next) => void ready.then(() => next()))
  server = createServer(app)
  let editorPort
  try {
    editorPort = await listen(server, settings.uiPort, settings.uiHost)
  } catch (err) {
    if (err?.code === 'EADDRINUSE')
      fail(`editor port ${settings.uiPort} is in use on 127.0.0.1: stop what uses it, or set PORT`)
    throw err
  }

  seedFlows(`\${${BROKER_ENV}}`)

  RED.init(server, settings)
  app.use(settings.httpAdminRoot, RED.httpAdmin)
  app.use(settings.httpNodeRoot, RED.httpNode)
  const running = flowsRunning(RED.events)
  await RED.start()
  const problem = await running
  if (stopping) return
  runtimeReady()
  const url = `http://${settings.uiHost}:${editorPort}`
  say(`Node-RED ${RED.version()} on Node.js ${process.version}, user data in ${shown(settings.userDir)}/`)
  if (problem)
    say(
      `WARNING: the flows did not start (${problem.error}${problem.types ? ': ' + problem.types.join(', ') : ''}); see the log above`,
    )
  say('Ctrl-C stops Node-RED, the emulator and the broker')
  say(`editor ready at ${url}`)
}

main().catch((err) => {
  console.error('[npm start] failed:', err)
  void stop('error', 1)
})

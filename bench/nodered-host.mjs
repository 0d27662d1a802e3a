// A Node-RED runtime for bench/nodered.mjs, embedded in this process (forked, with IPC), loading
// this package from the working tree and node-red-contrib-redis from node_modules. Flows (the
// parent writes them): each ends in a bench-sink node (lib/sink-node) calling `global.get('benchSink')(name, msg)`.
//   argv: <userDir> <echo broker url> <emulator broker url>
//   IPC in:  { run: <entry node id>, sink: <name>, count, window, key prefix }  -> { msgsPerSec, errors }
//            { bare: true, count, window } -> { msgsPerSec }: the bare mqtt.js reference, SET then GET per msg
//            { bare: 'emulator', count, window } -> the same requester on the emulator through mosquitto
//              (the same service as the ss flow: the reference for what the nodes themselves cost)
//            { bare: 'embedded', count, window } -> { msgsPerSec }: the same requester on the embedded
//              emulator of the `embconf` config node, through its in-process stream (no Node-RED node,
//              no client of ours on the path: the ceiling of the embedded flow)
//            { client: <config node id>, count, window } -> { msgsPerSec }: that config node's client
//              alone, SET then GET per msg (what the flow costs without its nodes)
//            { watch: 'start' } / { watch: 'stop' } -> { latencies, oneHop } (ms, from the hrtime in the
//              value): msgs after ss-watch, and the writer's raw publishes to bench/watch/# received by
//              a plain mqtt.js subscriber in this process (one broker hop: the reference)
//            'stop'
import { createServer } from 'node:http'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { ROOT, windowed } from './lib/harness.mjs'
import { connectBare, fixedRequest } from './lib/bare-requester.mjs'

const require = createRequire(import.meta.url)
const userDir = process.argv[2]

let onSink = () => {}
const settings = {
  uiHost: '127.0.0.1',
  uiPort: 0,
  httpAdminRoot: '/',
  httpNodeRoot: '/',
  userDir,
  flowFile: 'flows.json',
  credentialSecret: 'bench',
  nodesDir: [ROOT, join(ROOT, 'node_modules', 'node-red-contrib-redis'), join(import.meta.dirname, 'lib', 'sink-node')],
  functionGlobalContext: { benchSink: (name, msg) => onSink(name, msg) },
  telemetry: { enabled: false, updateNotification: false },
  diagnostics: { enabled: false, ui: false },
  editorTheme: { tours: false },
  logging: { console: { level: 'warn', metrics: false, audit: false } },
}

const RED = require('node-red')
const express = createRequire(require.resolve('node-red'))('express')
const app = express()
const server = createServer(app)
RED.init(server, settings)
app.use(settings.httpAdminRoot, RED.httpAdmin)
const started = new Promise((resolve) => RED.events.once('flows:started', resolve))
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
await RED.start()
await started

/** Pushes `count` messages into `entry`, `window` at a time; resolves when `sink` has seen them all. */
async function run({ run: entryId, sink, count, window, prefix }) {
  const entry = RED.nodes.getNode(entryId)
  if (!entry) throw new Error(`no node ${entryId} in the flows`)
  const value = 'v'.repeat(100)
  let errors = 0
  // Which msg reached the sink does not matter, only how many: each completes one outstanding send.
  const outstanding = []
  onSink = (name, msg) => {
    if (name !== sink) return
    if (msg.payload !== value) errors++
    outstanding.shift()?.()
  }
  const msgsPerSec = await windowed(count, window, (i, done) => {
    outstanding.push(done)
    entry.receive({ topic: `${prefix}${String(i % 1000).padStart(12, '0')}`, payload: value })
  })
  return { msgsPerSec, errors }
}

/** The bare reference: a plain mqtt.js requester in this process, two requests per msg like the flow. */
const bare = await connectBare(process.argv[3])
const emulatorBare = await connectBare(process.argv[4])
const embeddedBare = (async () => {
  const { embeddedEmulator } = require(join(ROOT, 'dist/src/emulator/embedded'))
  const { inProcessConnector } = require(join(ROOT, 'dist/src/emulator'))
  const emulator = await embeddedEmulator()
  if (!emulator) throw new Error('no embedded emulator runs in this process (the embconf config node starts it)')
  return connectBare(emulator.brokerUrl, { connectStream: inProcessConnector(emulator.brokerUrl) })
})()
embeddedBare.catch(() => {})
function runBare({ bare: where, count, window }) {
  if (where === 'embedded') return embeddedBare.then((requester) => drivePairs(requester, count, window))
  return drivePairs(where === 'emulator' ? emulatorBare : bare, count, window)
}
async function drivePairs(bare, count, window) {
  const setBytes = fixedRequest('SET')
  const getBytes = fixedRequest('GET')
  return {
    msgsPerSec: await windowed(count, window, (_i, done) =>
      bare.send(setBytes, () => bare.send(getBytes, () => done())),
    ),
  }
}

/** Our client alone (the config node's, no palette node on the path): SET then GET per msg, like the flow. */
async function runClient({ client: configId, count, window }) {
  const client = await RED.nodes.getNode(configId).started()
  const value = Buffer.alloc(100, 0x76)
  const msgsPerSec = await windowed(count, window, (i, done) => {
    const key = `client-${String(i % 1000).padStart(12, '0')}`
    client
      .set(key, value)
      .then(() => client.get(key))
      .then(() => done(), done)
  })
  return { msgsPerSec }
}

let latencies = []
let oneHop = []
// The one-hop reference: the same bytes published straight to a topic, received with no node and no client of ours.
const mqtt = require('mqtt')
const subscriber = mqtt.connect(process.argv[4], {
  protocolVersion: 5,
  clientId: `bench-one-hop-${process.pid}`,
  reconnectPeriod: 0,
})
subscriber.on('connect', () => subscriber.stream.setNoDelay?.(true))
await new Promise((resolve, reject) => {
  subscriber.once('connect', resolve)
  subscriber.once('error', reject)
})
await subscriber.subscribeAsync('bench/watch/#', { qos: 1 })
subscriber.on('message', (_topic, payload) =>
  oneHop.push(Number(process.hrtime.bigint() - payload.readBigUInt64LE(0)) / 1e6),
)
process.on('message', async (m) => {
  if (m === 'stop') {
    await bare.close()
    await emulatorBare.close()
    await subscriber.endAsync()
    await (await embeddedBare.catch(() => null))?.close()
    await RED.stop()
    server.closeAllConnections()
    server.close()
    process.exit(0)
  }
  if (m.run) process.send(await run(m))
  if (m.bare) process.send(await runBare(m))
  if (m.client) process.send(await runClient(m))
  if (m.watch === 'start') {
    latencies = []
    oneHop = []
    onSink = (name, msg) => {
      if (name !== 'watch' || !Buffer.isBuffer(msg.payload)) return
      latencies.push(Number(process.hrtime.bigint() - msg.payload.readBigUInt64LE(0)) / 1e6)
    }
  }
  if (m.watch === 'stop') process.send({ latencies, oneHop })
})
// Node-RED reports errors from nodes here too; a benchmark must not hide them.
RED.events.on('runtime-event', (e) => {
  if (e?.payload?.error) console.error('node-red:', JSON.stringify(e))
})
process.send({ ready: true })

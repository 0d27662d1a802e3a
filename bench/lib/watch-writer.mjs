// The writer of the watch benchmark, in its own process (forked by bench/watch.mjs):
//   watch-writer.mjs <brokerUrl> <mode: statestore|raw|relay|answer> <rate/s> <ms> <keys>
// On the message 'go' it writes at `rate` per second for `ms`, round-robin over `keys` keys, and
// replies { sent, acked, failed }. Every value carries the moment it was sent (CLOCK_MONOTONIC via
// process.hrtime, which every process on the machine shares) and a sequence number, so the watcher
// measures latency and counts losses. `statestore` writes SETs through StateStoreClient; `raw`
// publishes the same bytes at QoS 1 straight to a topic the watcher subscribes to: one broker hop,
// the least a notification can cost. `relay` publishes them to bench/relay/<key>, which
// bench/lib/watch-relay.mjs republishes to the watcher's topic: two broker hops, as a notification takes.
// `answer` sends them as requests (the client's properties) to bench/ask/<key>, which
// bench/lib/watch-answer-relay.mjs answers and republishes: the MQTT work the emulator does per SET.
import { createRequire } from 'node:module'
import { connectClient, keyOf } from './load.mjs'

const require = createRequire(import.meta.url)
const mqtt = require('mqtt')

const [url, mode, rateText, msText, keysText] = process.argv.slice(2)
const rate = Number(rateText)
const ms = Number(msText)
const keys = Number(keysText)

let write
let close
if (mode === 'statestore') {
  const client = await connectClient(url, { maxInFlight: 5000 })
  write = (i, value) => client.set(keyOf(i % keys), value)
  close = () => client.close()
} else if (mode === 'answer') {
  // A request as the client makes it (response topic, correlation data, expiry, content type, the
  // client's user properties), answered by bench/lib/watch-answer-relay.mjs: each write resolves on its answer.
  const client = mqtt.connect(url, { protocolVersion: 5, clientId: `watch-asker-${process.pid}`, reconnectPeriod: 0 })
  client.on('connect', () => client.stream.setNoDelay?.(true))
  await new Promise((resolve, reject) => {
    client.once('connect', resolve)
    client.once('error', reject)
  })
  const responseTopic = `bench/answers/${process.pid}`
  await client.subscribeAsync(responseTopic, { qos: 1 })
  const waiting = new Map()
  let id = 0
  client.on('message', (_topic, _payload, packet) => {
    const key = packet.properties?.correlationData?.toString('latin1')
    waiting.get(key)?.()
    waiting.delete(key)
  })
  const clientId = `bench-${process.pid}`
  write = (i, value) =>
    new Promise((resolve) => {
      const correlationData = Buffer.alloc(16)
      correlationData.writeUInt32BE(++id, 12)
      waiting.set(correlationData.toString('latin1'), resolve)
      client.publish(`bench/ask/${keyOf(i % keys)}`, value, {
        qos: 1,
        properties: {
          responseTopic,
          correlationData,
          messageExpiryInterval: 10,
          contentType: 'application/octet-stream',
          payloadFormatIndicator: false,
          userProperties: {
            $high_priority: '',
            $partition: clientId,
            __protVer: '1.0',
            __srcId: clientId,
            __ts: `${String(Date.now()).padStart(15, '0')}:00000:${clientId}`,
          },
        },
      })
    })
  close = () => client.endAsync()
} else {
  const client = mqtt.connect(url, { protocolVersion: 5, clientId: `watch-writer-${process.pid}`, reconnectPeriod: 0 })
  client.on('connect', () => client.stream.setNoDelay?.(true))
  await new Promise((resolve, reject) => {
    client.once('connect', resolve)
    client.once('error', reject)
  })
  const prefix = mode === 'relay' ? 'bench/relay' : 'bench/watch'
  write = (i, value) => client.publishAsync(`${prefix}/${keyOf(i % keys)}`, value, { qos: 1 })
  close = () => client.endAsync()
}

async function run() {
  let sent = 0
  let acked = 0
  let failed = 0
  const pending = []
  const t0 = performance.now()
  // Paced against the schedule, not the previous write: a late tick catches up.
  while (performance.now() - t0 < ms) {
    const due = Math.floor(((performance.now() - t0) / 1000) * rate)
    while (sent < due) {
      const value = Buffer.alloc(100, 0x76)
      value.writeBigUInt64LE(process.hrtime.bigint(), 0)
      value.writeUInt32LE(sent, 8)
      pending.push(
        write(sent, value).then(
          () => acked++,
          () => failed++,
        ),
      )
      sent++
    }
    await new Promise((resolve) => setTimeout(resolve, 1))
  }
  await Promise.all(pending)
  return { sent, acked, failed }
}

process.on('message', async (m) => {
  if (m === 'go') process.send(await run())
  if (m === 'stop') {
    await close()
    process.exit(0)
  }
})
process.send({ ready: true })

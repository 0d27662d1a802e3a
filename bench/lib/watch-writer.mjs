// The writer of the watch benchmark, in its own process (forked by bench/watch.mjs):
//   watch-writer.mjs <brokerUrl> <mode: statestore|raw|relay> <rate/s> <ms> <keys>
// On the message 'go' it writes at `rate` per second for `ms`, round-robin over `keys` keys, and
// replies { sent, acked, failed }. Every value carries the moment it was sent (CLOCK_MONOTONIC via
// process.hrtime, which every process on the machine shares) and a sequence number, so the watcher
// measures latency and counts losses. `statestore` writes SETs through StateStoreClient; `raw`
// publishes the same bytes at QoS 1 straight to a topic the watcher subscribes to: one broker hop,
// the least a notification can cost. `relay` publishes them to bench/relay/<key>, which
// bench/lib/watch-relay.mjs republishes to the watcher's topic: two broker hops, as a notification takes.
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

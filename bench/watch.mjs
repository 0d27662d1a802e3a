// Measurement 4 (client part): notification latency and fan-out. One client watches 1,000 keys
// (StateStoreClient.observe, one KEYNOTIFY each); another client, in its own process
// (bench/lib/watch-writer.mjs), SETs them round-robin at 2,000/s. Latency runs from the SET being
// sent to the watcher's listener being called; every applied SET must arrive as one notification.
// Reference, interleaved round by round: the same writer publishing the same bytes at QoS 1 straight
// to a topic the watcher subscribes to through the same mosquitto (one broker hop, where a key
// notification takes two and the emulator in between).
import { fork } from 'node:child_process'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { BENCH_DIR, benchArgs, fmtRange, fmtRatio, interleave, percentiles, sleep, table, writeResult } from './lib/harness.mjs'
import { connectClient, keyOf } from './lib/load.mjs'
import { startEmulatorProcess, startMosquitto } from './lib/procs.mjs'

const require = createRequire(import.meta.url)
const mqtt = require('mqtt')

const { quick, rounds, argv } = benchArgs()
const KEYS = 1000
// `--rate N` to see where the pipeline saturates on a given machine; the target is at 2,000/s.
const RATE = argv.includes('--rate') ? Number(argv[argv.indexOf('--rate') + 1]) : 2000
const MS = quick ? 1000 : 2000
const DRAIN_MS = 3000

const broker = await startMosquitto()
const emu = await startEmulatorProcess({ brokerUrl: broker.urls[0] })

// Per round: latencies in ms, and the sequence numbers seen.
let latencies = []
let seen = new Set()
let duplicates = 0
function received(value) {
  const now = process.hrtime.bigint()
  latencies.push(Number(now - value.readBigUInt64LE(0)) / 1e6)
  const seq = value.readUInt32LE(8)
  if (seen.has(seq)) duplicates++
  seen.add(seq)
}

const watcher = await connectClient(broker.urls[0])
const t0 = Date.now()
const listener = (n) => {
  if (n.operation === 'SET' && n.value && !n.reconciled) received(n.value)
}
const observations = await Promise.all(Array.from({ length: KEYS }, (_, i) => watcher.observe(keyOf(i), listener)))
console.log(`watch: ${observations.length} keys observed in ${Date.now() - t0} ms`)

const raw = mqtt.connect(broker.urls[0], { protocolVersion: 5, clientId: `watch-raw-${process.pid}`, reconnectPeriod: 0 })
raw.on('connect', () => raw.stream.setNoDelay?.(true))
await new Promise((resolve) => raw.once('connect', resolve))
await raw.subscribeAsync('bench/watch/#', { qos: 1 })
raw.on('message', (_topic, payload) => received(payload))

async function startWriter(mode) {
  const child = fork(join(BENCH_DIR, 'lib/watch-writer.mjs'), [broker.urls[0], mode, String(RATE), String(MS), String(KEYS)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const next = () => new Promise((resolve) => child.once('message', resolve))
  await next()
  return {
    run: async () => {
      const reply = next()
      child.send('go')
      return reply
    },
    stop: async () => {
      child.send('stop')
      await new Promise((resolve) => child.once('exit', resolve))
    },
  }
}
const writers = { statestore: await startWriter('statestore'), raw: await startWriter('raw') }

const r = await interleave({
  variants: ['statestore', 'raw'],
  reference: 'raw',
  rounds,
  warmup: 1,
  measure: async (mode) => {
    latencies = []
    seen = new Set()
    duplicates = 0
    const { sent, acked, failed } = await writers[mode].run()
    const deadline = Date.now() + DRAIN_MS
    while (seen.size < acked && Date.now() < deadline) await sleep(20)
    const p = percentiles(latencies)
    const lost = acked - seen.size
    console.log(`watch ${mode}: sent ${sent}, applied ${acked}, failed ${failed}, notified ${seen.size}, lost ${lost}, duplicates ${duplicates}, p50 ${p.p50.toFixed(2)} ms, p99 ${p.p99.toFixed(2)} ms, max ${p.max.toFixed(2)} ms`)
    return { p50: p.p50, p99: p.p99, max: p.max, lost, sent, failed, duplicates, rate: (acked / MS) * 1000 }
  },
})

for (const o of observations) await o.close()
await watcher.close()
await raw.endAsync()
await Promise.all(Object.values(writers).map((w) => w.stop()))
await emu.stop()
await broker.stop()

const s = r.statestore
const rows = [
  ['state store (SET -> notification)', fmtRange(s.p50, 2, ' ms'), fmtRange(s.p99, 2, ' ms'), fmtRange(s.max, 1, ' ms'), fmtRange(s.lost), fmtRange(s.failed), fmtRange(s.rate)],
  ['raw MQTT publish (reference)', fmtRange(r.raw.p50, 2, ' ms'), fmtRange(r.raw.p99, 2, ' ms'), fmtRange(r.raw.max, 1, ' ms'), fmtRange(r.raw.lost), fmtRange(r.raw.failed), fmtRange(r.raw.rate)],
  ['ratio state store / raw', fmtRatio(s.p50.ratio), fmtRatio(s.p99.ratio), fmtRatio(s.max.ratio), '', '', ''],
]
const t = table(
  `Watch: ${KEYS} keys watched, ${RATE} SETs/s for ${MS} ms from another process, through mosquitto; median (min–max) over ${rounds} interleaved rounds`,
  ['path', 'p50', 'p99', 'max', 'lost', 'failed SETs', 'rate /s'],
  rows,
)
const totalLost = s.lost.samples.reduce((a, b) => a + b, 0)
writeResult('watch', {
  tables: [t],
  headline: [
    { metric: `notification p99 at ${RATE} SETs/s (SET sent -> client listener)`, value: Number(s.p99.median.toFixed(2)), unit: ' ms', min: s.p99.min, max: s.p99.max, target: '< 10 ms', pass: s.p99.median < 10 },
    { metric: `notification p99 / one-hop publish p99, same run, ${RATE} SETs/s`, value: Number(s.p99.ratio.median.toFixed(3)), min: s.p99.ratio.min, max: s.p99.ratio.max, target: '<= 3x', pass: s.p99.ratio.median <= 3 },
    { metric: 'notifications lost, all rounds', value: totalLost, unit: '', target: '0', pass: totalLost === 0 },
  ],
  data: r,
  notes: ['latency clock: process.hrtime (CLOCK_MONOTONIC, shared by the writer and watcher processes)', 'lost = SETs answered +OK minus distinct notifications received within 3 s after the last SET'],
})

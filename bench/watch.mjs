// Measurement 4 (client part): notification latency and fan-out. One client watches 1,000 keys
// (StateStoreClient.observe, one KEYNOTIFY each); another client, in its own process
// (bench/lib/watch-writer.mjs), SETs them round-robin at 2,000/s. Latency runs from the SET being
// sent to the watcher's listener being called; every applied SET must arrive as one notification.
// Reference, interleaved round by round: the same writer publishing the same bytes at QoS 1 straight
// to a topic the watcher subscribes to through the same mosquitto (one broker hop, where a key
// notification takes two and the emulator in between). And a second reference, to tell what part of
// the ratio is the emulator's: the same bytes through two hops with a bare mqtt.js relay process in
// between (bench/lib/watch-relay.mjs), the least a notification's path can cost. And a third, the
// fairer floor for the emulator's CPU: a relay that also answers (bench/lib/watch-answer-relay.mjs),
// sent requests with the client's properties, so that it does the MQTT work the emulator does per SET
// (one PUBLISH in, an answer and a notification out, two PUBACKs in) and nothing else.
//
// `--baseline <dir>`: a checkout of an earlier version with its dist/ built; its emulator runs too,
// with its own mosquitto, watcher client and writer (this version's client code on both sides), and
// its rounds interleave with the others: a before/after of the emulator in one run, round by round.
//
// `--trace` loads bench/lib/watch-trace.cjs into every process and prints where each message's time
// goes, stage by stage (it costs a little CPU; the headline figures of a traced run are not the ones
// to quote).
import { fork } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  BENCH_DIR,
  benchArgs,
  fmtRange,
  fmtRatio,
  interleave,
  pairRatio,
  percentiles,
  sleep,
  table,
  writeResult,
} from './lib/harness.mjs'
import { connectClient, keyOf } from './lib/load.mjs'
import { cpuMsOf, launch, startEmulatorProcess, startMosquitto, waitForOutput } from './lib/procs.mjs'
import { traceReport } from './lib/watch-trace-report.mjs'

const require = createRequire(import.meta.url)
const mqtt = require('mqtt')

const { quick, rounds, argv } = benchArgs()
const KEYS = 1000
// `--rate N` to see where the pipeline saturates on a given machine; the target is at 2,000/s.
const RATE = argv.includes('--rate') ? Number(argv[argv.indexOf('--rate') + 1]) : 2000
const MS = quick ? 1000 : 2000
const DRAIN_MS = 3000
const WARMUP = 1

const trace = argv.includes('--trace')
const TRACER = join(BENCH_DIR, 'lib/watch-trace.cjs')
const traceArgs = trace ? ['--require', TRACER] : []
if (trace) {
  process.env.WATCH_TRACE_DIR = mkdtempSync(join(tmpdir(), 'watch-trace-'))
  require(TRACER)
}
const traceRole = (role) => ({ ...process.env, WATCH_TRACE_ROLE: role })

const baselineDir = argv.includes('--baseline') ? argv[argv.indexOf('--baseline') + 1] : null

const broker = await startMosquitto()
const emu = await startEmulatorProcess({ brokerUrl: broker.urls[0], nodeArgs: traceArgs, env: traceRole('emulator') })
const baseBroker = baselineDir ? await startMosquitto() : null
const baseEmu = baselineDir
  ? await startEmulatorProcess({
      brokerUrl: baseBroker.urls[0],
      cli: join(baselineDir, 'dist/src/emulator/cli/main.js'),
      env: traceRole('baseline-emulator'),
    })
  : null
// The processes each variant's messages go through besides the writer and this one (the watcher):
// their CPU per message is measured round by round.
const middleOf = { statestore: emu, baseline: baseEmu }
const brokerOf = { statestore: broker, raw: broker, relay: broker, answer: broker, baseline: baseBroker }
const relay = launch(process.execPath, [...traceArgs, join(BENCH_DIR, 'lib/watch-relay.mjs'), broker.urls[0]], {
  env: traceRole('relay'),
})
await waitForOutput(relay, /relay ready/, 15000, 'relay')
middleOf.relay = { child: relay }
const answerRelay = launch(
  process.execPath,
  [...traceArgs, join(BENCH_DIR, 'lib/watch-answer-relay.mjs'), broker.urls[0]],
  { env: traceRole('answer-relay') },
)
await waitForOutput(answerRelay, /answer relay ready/, 15000, 'answer relay')
middleOf.answer = { child: answerRelay }

// Per round: latencies in ms, and the sequence numbers seen.
let latencies = []
let seen = new Set()
let duplicates = 0
let mode = ''
function received(value) {
  const now = process.hrtime.bigint()
  globalThis.__watchTrace?.listener(mode, value)
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
const baseWatcher = baseBroker ? await connectClient(baseBroker.urls[0]) : null
if (baseWatcher)
  observations.push(
    ...(await Promise.all(Array.from({ length: KEYS }, (_, i) => baseWatcher.observe(keyOf(i), listener)))),
  )

const raw = mqtt.connect(broker.urls[0], {
  protocolVersion: 5,
  clientId: `watch-raw-${process.pid}`,
  reconnectPeriod: 0,
})
raw.on('connect', () => raw.stream.setNoDelay?.(true))
await new Promise((resolve) => raw.once('connect', resolve))
await raw.subscribeAsync('bench/watch/#', { qos: 1 })
raw.on('message', (_topic, payload) => received(payload))

async function startWriter(mode, url = broker.urls[0], role = `writer-${mode}`) {
  const child = fork(join(BENCH_DIR, 'lib/watch-writer.mjs'), [url, mode, String(RATE), String(MS), String(KEYS)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv: role.startsWith('baseline') ? [] : traceArgs,
    env: traceRole(role),
  })
  const next = () => new Promise((resolve) => child.once('message', resolve))
  await next()
  return {
    pid: child.pid,
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
const writers = {
  statestore: await startWriter('statestore'),
  raw: await startWriter('raw'),
  relay: await startWriter('relay'),
  answer: await startWriter('answer'),
}
if (baseBroker) writers.baseline = await startWriter('statestore', baseBroker.urls[0], 'baseline-writer')

const r = await interleave({
  variants: [...(baseBroker ? ['baseline'] : []), 'statestore', 'relay', 'answer', 'raw'],
  reference: 'raw',
  rounds,
  warmup: WARMUP,
  measure: async (variant) => {
    mode = variant
    latencies = []
    seen = new Set()
    duplicates = 0
    // CPU (user + system) of every process on the path, from /proc (the watcher: this process).
    const pids = {
      writer: writers[variant].pid,
      broker: brokerOf[variant].child.pid,
      middle: middleOf[variant]?.child.pid,
    }
    const ownCpuMs = () => {
      const u = process.cpuUsage()
      return (u.user + u.system) / 1000
    }
    const cpuBefore = {
      ...Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, pid ? cpuMsOf(pid) : 0])),
      watcher: ownCpuMs(),
    }
    const wallStart = performance.now()
    const { sent, acked, failed } = await writers[variant].run()
    const deadline = Date.now() + DRAIN_MS
    while (seen.size < acked && Date.now() < deadline) await sleep(20)
    const wallMs = performance.now() - wallStart
    const cpu = {
      ...Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, pid ? cpuMsOf(pid) - cpuBefore[k] : 0])),
      watcher: ownCpuMs() - cpuBefore.watcher,
    }
    const perMessage = (msTotal) => (msTotal * 1000) / Math.max(1, sent)
    const cpuTotal = cpu.writer + cpu.broker + cpu.middle + cpu.watcher
    const p = percentiles(latencies)
    const lost = acked - seen.size
    console.log(
      `watch ${variant}: sent ${sent}, applied ${acked}, failed ${failed}, notified ${seen.size}, lost ${lost}, duplicates ${duplicates}, p50 ${p.p50.toFixed(2)} ms, p99 ${p.p99.toFixed(2)} ms, max ${p.max.toFixed(2)} ms`,
    )
    return {
      p50: p.p50,
      p99: p.p99,
      max: p.max,
      lost,
      sent,
      failed,
      duplicates,
      rate: (acked / MS) * 1000,
      cpuWriter: perMessage(cpu.writer),
      cpuBroker: perMessage(cpu.broker),
      cpuMiddle: perMessage(cpu.middle),
      cpuWatcher: perMessage(cpu.watcher),
      cpuTotal: perMessage(cpuTotal),
      // Of the machine's cores, how busy these processes kept them over the round and its drain.
      coresBusy: cpuTotal / wallMs,
    }
  },
})

for (const o of observations) await o.close()
await watcher.close()
await baseWatcher?.close()
await raw.endAsync()
await Promise.all(Object.values(writers).map((w) => w.stop()))
await emu.stop()
await relay.stop()
await answerRelay.stop()
await broker.stop()
await baseEmu?.stop()
await baseBroker?.stop()

const s = r.statestore
const row = (name, v) => [
  name,
  fmtRange(v.p50, 2, ' ms'),
  fmtRange(v.p99, 2, ' ms'),
  fmtRange(v.max, 1, ' ms'),
  fmtRange(v.lost),
  fmtRange(v.failed),
  fmtRange(v.rate),
]
const toRelay = Object.fromEntries(['p50', 'p99', 'max'].map((m) => [m, pairRatio(r, 'statestore', 'relay', m)]))
const baseRows = baseBroker
  ? [
      row('state store, baseline emulator (before)', r.baseline),
      [
        'ratio state store / baseline (after / before)',
        ...['p50', 'p99', 'max'].map((m) => fmtRatio(pairRatio(r, 'statestore', 'baseline', m))),
        '',
        '',
        '',
      ],
    ]
  : []
const cpuNames = {
  baseline: 'state store, baseline emulator',
  statestore: 'state store',
  relay: 'two-hop bare relay',
  answer: 'two-hop relay that answers',
  raw: 'one-hop publish',
}
const cpuRows = Object.keys(cpuNames)
  .filter((v) => r[v])
  .map((v) => [
    cpuNames[v],
    ...['cpuWriter', 'cpuBroker', 'cpuMiddle', 'cpuWatcher', 'cpuTotal'].map((m) => fmtRange(r[v][m])),
    fmtRange(r[v].coresBusy, 2),
  ])
cpuRows.push([
  'ratio state store / two-hop relay, per round',
  ...['cpuWriter', 'cpuBroker', 'cpuMiddle', 'cpuWatcher', 'cpuTotal', 'coresBusy'].map((m) =>
    fmtRatio(pairRatio(r, 'statestore', 'relay', m)),
  ),
])
cpuRows.push([
  'ratio state store / relay that answers, per round',
  ...['cpuWriter', 'cpuBroker', 'cpuMiddle', 'cpuWatcher', 'cpuTotal', 'coresBusy'].map((m) =>
    fmtRatio(pairRatio(r, 'statestore', 'answer', m)),
  ),
])
if (baseBroker)
  cpuRows.push([
    'ratio state store / baseline',
    ...['cpuWriter', 'cpuBroker', 'cpuMiddle', 'cpuWatcher', 'cpuTotal', 'coresBusy'].map((m) =>
      fmtRatio(pairRatio(r, 'statestore', 'baseline', m)),
    ),
  ])
const rows = [
  row('state store (SET -> notification)', s),
  row('raw MQTT publish, one hop (reference)', r.raw),
  row('bare relay, two hops (second reference)', r.relay),
  row('relay that answers, two hops (third reference)', r.answer),
  [
    'ratio state store / one hop (target)',
    fmtRatio(s.p50.ratio),
    fmtRatio(s.p99.ratio),
    fmtRatio(s.max.ratio),
    '',
    '',
    '',
  ],
  [
    'ratio two-hop relay / one hop',
    fmtRatio(r.relay.p50.ratio),
    fmtRatio(r.relay.p99.ratio),
    fmtRatio(r.relay.max.ratio),
    '',
    '',
    '',
  ],
  [
    'ratio state store / two-hop relay',
    fmtRatio(toRelay.p50),
    fmtRatio(toRelay.p99),
    fmtRatio(toRelay.max),
    '',
    '',
    '',
  ],
  ...baseRows,
]
const t = table(
  `Watch: ${KEYS} keys watched, ${RATE} SETs/s for ${MS} ms from another process, through mosquitto; median (min–max) over ${rounds} interleaved rounds`,
  ['path', 'p50', 'p99', 'max', 'lost', 'failed SETs', 'rate /s'],
  rows,
)
const cpuTable = table(
  'CPU per message (user + system, µs, from /proc in 10 ms steps) of each process on the path, and the cores they kept busy; median (min–max) over the rounds',
  ['path', 'writer', 'mosquitto', 'emulator / relay', 'watcher', 'total', 'cores busy'],
  cpuRows,
)
const middleRatio = pairRatio(r, 'statestore', 'relay', 'cpuMiddle')
const middleToAnswer = pairRatio(r, 'statestore', 'answer', 'cpuMiddle')
const traceTables = trace
  ? traceReport({ dir: process.env.WATCH_TRACE_DIR, watcher: globalThis.__watchTrace.events, warmup: WARMUP })
  : []
const totalLost = s.lost.samples.reduce((a, b) => a + b, 0)
writeResult('watch', {
  tables: [t, cpuTable, ...traceTables],
  headline: [
    {
      metric: `notification p99 at ${RATE} SETs/s (SET sent -> client listener)`,
      value: Number(s.p99.median.toFixed(2)),
      unit: ' ms',
      min: s.p99.min,
      max: s.p99.max,
      target: '< 10 ms',
      pass: s.p99.median < 10,
    },
    {
      metric: `notification p99 / one-hop publish p99, same run, ${RATE} SETs/s`,
      value: Number(s.p99.ratio.median.toFixed(3)),
      min: s.p99.ratio.min,
      max: s.p99.ratio.max,
      target: '<= 3x',
      pass: s.p99.ratio.median <= 3,
    },
    { metric: 'notifications lost, all rounds', value: totalLost, unit: '', target: '0', pass: totalLost === 0 },
    {
      // Per round: the emulator's CPU per notification (it also answers the SET: two PUBLISHes and
      // two PUBACKs in for each, where the relay sends one and gets one) against the relay's.
      metric: `emulator CPU per notification / bare two-hop relay's, same rounds, ${RATE} SETs/s`,
      value: Number(middleRatio.median.toFixed(3)),
      min: middleRatio.min,
      max: middleRatio.max,
      target: '<= 1.3x',
      pass: middleRatio.median <= 1.3,
    },
    {
      // The same, against a relay that does the emulator's MQTT work: answers the SET and notifies.
      metric: `emulator CPU per notification / a relay's that answers and notifies, same rounds, ${RATE} SETs/s`,
      value: Number(middleToAnswer.median.toFixed(3)),
      min: middleToAnswer.min,
      max: middleToAnswer.max,
      target: 'report (1.0 = no cost but MQTT)',
      pass: true,
    },
  ],
  data: { ...r, statestoreToRelay: toRelay, emulatorCpuToRelay: middleRatio, emulatorCpuToAnswerRelay: middleToAnswer },
  notes: [
    'latency clock: process.hrtime (CLOCK_MONOTONIC, shared by the writer and watcher processes)',
    'lost = SETs answered +OK minus distinct notifications received within 3 s after the last SET',
  ],
})

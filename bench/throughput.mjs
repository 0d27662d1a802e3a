// Measurements 1 and 2: client -> emulator throughput, pipelined (window 1, 16, 64, 256), GET and
// SET, through mosquitto and through the emulator's embedded aedes broker, against the echo limit
// (bench/lib/echo-responder.mjs) driven by the same client through the same kind of broker; and the
// sequential round trip (window 1) p50/p99 against the echo responder's. And the bare-MQTT
// reference (bench/lib/bare-requester.mjs): a plain mqtt.js requester sending the client's bytes and
// properties to the same echo responder, so each figure also reads "ours / bare MQTT", and "client on
// the echo / bare on the echo" is the client's own cost.
//
// Processes: this one drives (StateStoreClient from dist/), the emulator CLI and the echo responder
// each run in their own, and so does each mosquitto. With mosquitto, the emulator and the echo
// responder each have a mosquitto of their own (same configuration; only one pair is busy at a
// time). With aedes, each serves through its own embedded broker, in its own process, as the
// emulator's `--listen` does.
import {
  benchArgs,
  fmtRange,
  fmtRatio,
  interleave,
  pairRatio,
  percentiles,
  table,
  writeResult,
} from './lib/harness.mjs'
import { connectBare } from './lib/bare-requester.mjs'
import { connectClient, drive, preload } from './lib/load.mjs'
import { startEchoProcess, startEmulatorProcess, startMosquitto } from './lib/procs.mjs'

const { quick, rounds, argv } = benchArgs()
const MS = quick ? 300 : 400
const LEAD_IN_MS = 150
const WINDOWS = [1, 16, 64, 256]
const OPS = ['GET', 'SET']
const KEYS = 1000
const brokers = argv.includes('--aedes-only')
  ? ['aedes']
  : argv.includes('--mosquitto-only')
    ? ['mosquitto']
    : ['mosquitto', 'aedes']

async function setup(broker) {
  if (broker === 'mosquitto') {
    const [m1, m2] = [await startMosquitto(), await startMosquitto()]
    const emu = await startEmulatorProcess({ brokerUrl: m1.urls[0] })
    const echo = await startEchoProcess({ brokerUrl: m2.urls[0] })
    return {
      urls: { emulator: m1.urls[0], echo: m2.urls[0] },
      stop: () => Promise.all([emu.stop(), echo.stop(), m1.stop(), m2.stop()]),
    }
  }
  const emu = await startEmulatorProcess({})
  const echo = await startEchoProcess({})
  return { urls: { emulator: emu.url, echo: echo.url }, stop: () => Promise.all([emu.stop(), echo.stop()]) }
}

const tpRows = []
const cpuRows = []
const latRows = []
const headline = []
const data = {}
for (const broker of brokers) {
  const env = await setup(broker)
  const clients = {
    emulator: await connectClient(env.urls.emulator),
    echo: await connectClient(env.urls.echo),
    bare: await connectBare(env.urls.echo),
  }
  // GETs find a 100-byte value, as the echo responder answers.
  await preload(clients.emulator, KEYS)
  data[broker] = {}
  for (const op of OPS) {
    for (const window of WINDOWS) {
      const r = await interleave({
        variants: ['emulator', 'echo', 'bare'],
        reference: 'echo',
        rounds,
        warmup: 1,
        measure: async (target) => {
          const client = clients[target]
          const run = (spec) => (target === 'bare' ? client.drive(spec) : drive(client, spec))
          await run({ op, window, ms: LEAD_IN_MS, keys: KEYS })
          const latencies = window === 1 ? [] : null
          // CPU time of this (the requesting) process per answered request: unlike ops/s, it hardly
          // depends on how long the other processes wait for a core on a loaded machine.
          const cpu0 = process.cpuUsage()
          const { opsPerSec, done } = await run({ op, window, ms: MS, keys: KEYS, latencies })
          const cpu = process.cpuUsage(cpu0)
          const cpuUsPerOp = (cpu.user + cpu.system) / done
          if (!latencies) return { opsPerSec, cpuUsPerOp }
          const p = percentiles(latencies)
          return { opsPerSec, cpuUsPerOp, p50: p.p50, p99: p.p99 }
        },
      })
      data[broker][`${op} w${window}`] = r
      const ratio = r.emulator.opsPerSec.ratio
      const clientCost = pairRatio(r, 'echo', 'bare', 'opsPerSec')
      const oursBare = pairRatio(r, 'emulator', 'bare', 'opsPerSec')
      // bare's CPU per request / the client's: the share of the requester's CPU that is mqtt.js and the socket.
      const cpuShare = pairRatio(r, 'bare', 'echo', 'cpuUsPerOp')
      cpuRows.push([
        broker,
        op,
        window,
        fmtRange(r.echo.cpuUsPerOp, 1, ' µs'),
        fmtRange(r.bare.cpuUsPerOp, 1, ' µs'),
        fmtRatio(cpuShare),
      ])
      if (window === 64)
        headline.push({
          metric: `${broker} ${op} window 64: requester CPU per request, bare mqtt.js / client`,
          value: Number(cpuShare.median.toFixed(3)),
          min: cpuShare.min,
          max: cpuShare.max,
          target: 'report (1.0 = no cost of ours)',
          pass: true,
        })
      tpRows.push([
        broker,
        op,
        window,
        fmtRange(r.emulator.opsPerSec),
        fmtRange(r.echo.opsPerSec),
        fmtRange(r.bare.opsPerSec),
        fmtRatio(ratio),
        fmtRatio(clientCost),
        fmtRatio(oursBare),
      ])
      console.log(
        `${broker} ${op} window ${window}: emulator ${fmtRange(r.emulator.opsPerSec)} ops/s, echo ${fmtRange(r.echo.opsPerSec)}, bare ${fmtRange(r.bare.opsPerSec)}; emulator/echo ${fmtRatio(ratio)}, client/bare ${fmtRatio(clientCost)}, ours/bare ${fmtRatio(oursBare)}`,
      )
      if (window === 1 || window === 64 || window === 256) {
        headline.push({
          metric: `${broker} ${op} window ${window}: client / bare mqtt.js (same echo responder)`,
          value: Number(clientCost.median.toFixed(3)),
          min: clientCost.min,
          max: clientCost.max,
          target: '>= 0.95x',
          pass: clientCost.median >= 0.95,
        })
      }
      if (window === 64) {
        headline.push({
          metric: `${broker} ${op} window 64: emulator / echo limit`,
          value: Number(ratio.median.toFixed(3)),
          min: ratio.min,
          max: ratio.max,
          target: '>= 0.95x',
          pass: ratio.median >= 0.95,
        })
      }
      if (window === 1) {
        const p50 = r.emulator.p50.ratio
        const p99 = r.emulator.p99.ratio
        latRows.push([
          broker,
          op,
          fmtRange(r.emulator.p50, 3, ' ms'),
          fmtRange(r.echo.p50, 3, ' ms'),
          fmtRatio(p50),
          fmtRange(r.emulator.p99, 3, ' ms'),
          fmtRange(r.echo.p99, 3, ' ms'),
          fmtRatio(p99),
        ])
        headline.push({
          metric: `${broker} ${op} sequential p50: emulator / echo`,
          value: Number(p50.median.toFixed(3)),
          min: p50.min,
          max: p50.max,
          target: '<= 1.3x',
          pass: p50.median <= 1.3,
        })
      }
    }
  }
  await Promise.all(Object.values(clients).map((c) => c.close()))
  await env.stop()
}

const t1 = table(
  `Pipelined throughput, ops/s median (min–max) over ${rounds} interleaved rounds of ${MS} ms; ratios per round: emulator / echo limit (both through StateStoreClient), client / bare (StateStoreClient and a bare mqtt.js requester on the same echo responder: the client's own cost), ours / bare (client + emulator against bare mqtt.js + echo)`,
  [
    'broker',
    'op',
    'window',
    'emulator',
    'client on echo',
    'bare mqtt.js on echo',
    'emulator / echo',
    'client / bare',
    'ours / bare',
  ],
  tpRows,
)
const t2 = table(
  `Sequential round trip (window 1), ms median (min–max) of the per-round percentile; ratio = emulator / echo per round`,
  ['broker', 'op', 'emulator p50', 'echo p50', 'p50 ratio', 'emulator p99', 'echo p99', 'p99 ratio'],
  latRows,
)
const t3 = table(
  `Requester CPU (user + system of the bench process) per answered request, µs, median (min–max) over ${rounds} interleaved rounds; ratio = bare / client per round (1.0: the client costs no more CPU than bare mqtt.js)`,
  ['broker', 'op', 'window', 'StateStoreClient', 'bare mqtt.js', 'bare / client'],
  cpuRows,
)
writeResult('throughput', {
  tables: [t1, t3, t2],
  headline,
  data,
  notes: [
    'driver: one StateStoreClient per target in the bench process; emulator CLI and echo responder in their own processes',
    'bare: bench/lib/bare-requester.mjs in the bench process, a plain mqtt.js client publishing the same fixed RESP bytes with the same MQTT 5 properties (response topic, correlation data, __ts, QoS 1) to the same echo responder; a callback per reply, nothing checked',
    `GET reads one of ${KEYS} preloaded 16-byte keys (100-byte values; the echo answers a 100-byte bulk); SET writes 100-byte values`,
    'mosquitto: one instance per target, same configuration (set_tcp_nodelay true); aedes: the embedded broker in the serving process',
  ],
})

// Measurement 3 and the Node-RED part of 4, in a running Node-RED (bench/nodered-host.mjs, its own
// process, this package loaded from the working tree):
//  - flow throughput: 10,000 msgs through set -> change (payload "") -> get -> sink (a bench-sink
//    node), 100 in the flow at a time, with ss-set/ss-get on the emulator (its own process, through
//    mosquitto) against the bare-MQTT reference: a plain mqtt.js requester
//    (bench/lib/bare-requester.mjs) in the Node-RED process sending the flow's two requests per msg
//    (SET, then GET) to the same emulator through the same broker, 100 msgs at a time: what the
//    nodes keep of what MQTT and the service allow. The same pair on the config node's embedded
//    emulator (in the Node-RED process, reached without TCP; the bare requester through its
//    in-process stream) and on the echo responder (the MQTT limit), and the same flow shape with
//    node-red-contrib-redis `redis-command` nodes on redis-server. msgs/s, rounds interleaved,
//    ratios per round.
//  - ss-watch latency: one ss-watch node watching 1,000 keys, 2,000 SETs/s from a client in
//    another process (bench/lib/watch-writer.mjs); SET sent -> msg at the node after ss-watch.
import { fork } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
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
  ratioFigure,
  sleep,
  summarize,
  table,
  writeResult,
} from './lib/harness.mjs'
import { keyOf } from './lib/load.mjs'
import { startEchoProcess, startEmulatorProcess, startMosquitto, startRedis } from './lib/procs.mjs'

const { quick, rounds } = benchArgs()
const COUNT = quick ? 3000 : 10_000
const WINDOW = 100
const WATCH_KEYS = 1000
const WATCH_RATE = 2000
const WATCH_MS = quick ? 1000 : 2000

const broker = await startMosquitto()
const emu = await startEmulatorProcess({ brokerUrl: broker.urls[0] })
// The echo limit for the same nodes: ss-set/ss-get against bench/lib/echo-responder.mjs.
const echoBroker = await startMosquitto()
const echo = await startEchoProcess({ brokerUrl: echoBroker.urls[0] })
const redis = await startRedis()
if (!redis) throw new Error('redis-server is not installed (apt-get install redis-server)')

const sink = (name, id, x) => ({ id, type: 'bench-sink', z: 'bench', name, x, y: 0, wires: [] })
const clearPayload = (id, next) => ({
  id,
  type: 'change',
  z: 'bench',
  name: '',
  rules: [{ t: 'set', p: 'payload', pt: 'msg', to: '', tot: 'str' }],
  x: 0,
  y: 0,
  wires: [[next]],
})
/** A change node that sets `msg.mark`: a hop of Node-RED's own, in place of one of ours. */
const mark = (id, next) => ({
  ...clearPayload(id, next),
  rules: [{ t: 'set', p: 'mark', pt: 'msg', to: '', tot: 'str' }],
})
/** An ss-config node with the bench's connection settings; `fields` names its broker and client. */
const ssConfig = (id, name, fields) => ({
  id,
  type: 'ss-config',
  name,
  embedded: false,
  usetls: false,
  tls: '',
  keepalive: '60',
  cleanStart: true,
  sessionExpiry: '',
  requestTimeout: '10000',
  maxInFlight: '1000',
  ...fields,
})
/** A node-red-contrib-redis command node on the bench's redis-config. */
const redisCommand = (id, command, next) => ({
  id,
  type: 'redis-command',
  z: 'bench',
  server: 'rdconf',
  command,
  name: '',
  topic: '',
  params: '',
  paramsType: 'json',
  payloadType: 'json',
  block: false,
  x: 0,
  y: 0,
  wires: [[next]],
})
const ssFlow = (name, store) => [
  {
    id: `${name}-set`,
    type: 'ss-set',
    z: 'bench',
    name: '',
    store,
    key: 'topic',
    keyType: 'msg',
    value: 'payload',
    valueType: 'msg',
    condition: 'always',
    expiry: '',
    fencingToken: 'fencingToken',
    fencingTokenType: 'msg',
    persist: false,
    notApplied: 'same',
    overrides: true,
    outputs: 1,
    x: 0,
    y: 0,
    wires: [[`${name}-clear`]],
  },
  clearPayload(`${name}-clear`, `${name}-get`),
  {
    id: `${name}-get`,
    type: 'ss-get',
    z: 'bench',
    name: '',
    store,
    key: 'topic',
    keyType: 'msg',
    decode: 'utf8',
    notFound: 'payload',
    overrides: true,
    outputs: 1,
    x: 0,
    y: 0,
    wires: [[`${name}-sink`]],
  },
  sink(name, `${name}-sink`, 0),
]
const flows = [
  { id: 'bench', type: 'tab', label: 'bench' },
  ssConfig('ssconf', 'bench', { broker: broker.urls[0], clientId: 'bench-node-red' }),
  ssConfig('echoconf', 'echo', { broker: echoBroker.urls[0], clientId: 'bench-node-red-echo' }),
  ...ssFlow('ss', 'ssconf'),
  ...ssFlow('echo', 'echoconf'),
  ssConfig('embconf', 'embedded', { embedded: true, broker: '', clientId: 'bench-node-red-embedded' }),
  ...ssFlow('emb', 'embconf'),
  // Node-RED's own part of a four-node flow: three change nodes (none touching the payload) and the sink.
  mark('hop-1', 'hop-2'),
  mark('hop-2', 'hop-3'),
  mark('hop-3', 'hop-sink'),
  sink('hops', 'hop-sink', 0),
  {
    id: 'rdconf',
    type: 'redis-config',
    name: 'bench',
    options: JSON.stringify({ host: '127.0.0.1', port: redis.port }),
    cluster: false,
    optionsType: 'json',
  },
  redisCommand('rd-set', 'set', 'rd-clear'),
  clearPayload('rd-clear', 'rd-get'),
  redisCommand('rd-get', 'get', 'rd-sink'),
  sink('redis', 'rd-sink', 0),
  {
    id: 'ss-watch',
    type: 'ss-watch',
    z: 'bench',
    name: '',
    store: 'ssconf',
    keys: Array.from({ length: WATCH_KEYS }, (_, i) => keyOf(i)).join('\n'),
    decode: 'buffer',
    initial: false,
    overrides: true,
    x: 0,
    y: 0,
    wires: [['watch-sink']],
  },
  sink('watch', 'watch-sink', 0),
]

const userDir = mkdtempSync(join(tmpdir(), 'bench-node-red-'))
writeFileSync(join(userDir, 'flows.json'), JSON.stringify(flows))
const host = fork(join(BENCH_DIR, 'nodered-host.mjs'), [userDir, echoBroker.urls[0], broker.urls[0]], {
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  execArgv: process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [],
})
const next = () => new Promise((resolve) => host.once('message', resolve))
const ask = (m) => {
  const reply = next()
  host.send(m)
  return reply
}
try {
  await next()
  // Until the config node is connected and the watch registered, requests would only wait.
  await sleep(2000)

  const r = await interleave({
    variants: ['ss', 'emubare', 'emb', 'embclient', 'embbare', 'hops', 'echo', 'bare', 'redis'],
    reference: 'redis',
    rounds,
    warmup: 1,
    measure: async (v) => {
      if (v === 'bare') return (await ask({ bare: true, count: COUNT, window: WINDOW })).msgsPerSec
      if (v === 'embclient') return (await ask({ client: 'embconf', count: COUNT, window: WINDOW })).msgsPerSec
      if (v === 'emubare') return (await ask({ bare: 'emulator', count: COUNT, window: WINDOW })).msgsPerSec
      if (v === 'embbare') return (await ask({ bare: 'embedded', count: COUNT, window: WINDOW })).msgsPerSec
      const entry = v === 'redis' ? 'rd-set' : v === 'hops' ? 'hop-1' : `${v}-set`
      const { msgsPerSec, errors } = await ask({ run: entry, sink: v, count: COUNT, window: WINDOW, prefix: `${v}-` })
      if (errors > 0) throw new Error(`${v}: ${errors} msgs came out with the wrong payload`)
      return msgsPerSec
    },
  })
  // ss against the echo limit, per round.
  const vsEcho = summarize(r.ss.value.samples.map((x, i) => x / r.echo.value.samples[i]))
  const toBare = (v) => pairRatio(r, v, 'bare')
  // The nodes' own cost: the flow against the bare requester on the same service, through the same broker.
  const ssToItsBare = pairRatio(r, 'ss', 'emubare')
  const embToItsBare = pairRatio(r, 'emb', 'embbare')
  // In one process the flow's costs add up: its floor is bare MQTT's time per msg plus Node-RED's own
  // time per msg through four nodes, per round. What the embedded flow loses beyond it is ours.
  const embFloor = r.embbare.value.samples.map((b, i) => 1 / (1 / b + 1 / r.hops.value.samples[i]))
  const embToFloor = summarize(r.emb.value.samples.map((x, i) => x / embFloor[i]))
  console.log(
    `node-red: ss ${fmtRange(r.ss.value)} msgs/s, ss embedded ${fmtRange(r.emb.value)}, ss on the echo responder ${fmtRange(r.echo.value)}, bare mqtt.js ${fmtRange(r.bare.value)}, redis ${fmtRange(r.redis.value)} msgs/s; ss / redis ${fmtRatio(r.ss.value.ratio)}, embedded / redis ${fmtRatio(r.emb.value.ratio)}, bare mqtt.js on the embedded emulator / redis ${fmtRatio(r.embbare.value.ratio)}, embedded / its bare ${fmtRatio(embToItsBare)}, embedded / its floor (bare + Node-RED's hops) ${fmtRatio(embToFloor)}, ss / echo ${fmtRatio(vsEcho)}, ss / its bare ${fmtRatio(ssToItsBare)}, ss on echo / bare on echo ${fmtRatio(toBare('echo'))}`,
  )

  // ss-watch latency, several rounds of the same load, each followed by a round of the one-hop
  // reference: the same bytes published at the same rate straight to a topic that a plain mqtt.js
  // subscriber in the Node-RED process receives.
  const startWriter = async (mode) => {
    const child = fork(
      join(BENCH_DIR, 'lib/watch-writer.mjs'),
      [broker.urls[0], mode, String(WATCH_RATE), String(WATCH_MS), String(WATCH_KEYS)],
      {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      },
    )
    const nextMessage = () => new Promise((resolve) => child.once('message', resolve))
    await nextMessage()
    return { child, nextMessage }
  }
  const writers = { statestore: await startWriter('statestore'), raw: await startWriter('raw') }
  /** One round of `mode`: its latencies once every acknowledged write has arrived (or 3 s have passed). */
  const watchRound = async (mode) => {
    const writer = writers[mode]
    host.send({ watch: 'start' })
    const w = writer.nextMessage()
    writer.child.send('go')
    const { acked } = await w
    const deadline = Date.now() + 3000
    for (;;) {
      const got = await ask({ watch: 'stop' })
      const lat = mode === 'raw' ? got.oneHop : got.latencies
      if (lat.length >= acked || Date.now() > deadline) return { lat, acked }
      await sleep(100)
    }
  }
  const watchRounds = []
  for (let i = -1; i < rounds; i++) {
    const ss = await watchRound('statestore')
    const raw = await watchRound('raw')
    const p = percentiles(ss.lat)
    const q = percentiles(raw.lat)
    if (i >= 0)
      watchRounds.push({
        p50: p.p50,
        p99: p.p99,
        max: p.max,
        lost: ss.acked - ss.lat.length,
        acked: ss.acked,
        oneHop: { p50: q.p50, p99: q.p99, max: q.max },
      })
    console.log(
      `node-red ss-watch: ${ss.acked} SETs, ${ss.lat.length} msgs, p50 ${p.p50.toFixed(2)} ms, p99 ${p.p99.toFixed(2)} ms; one hop: p50 ${q.p50.toFixed(2)} ms, p99 ${q.p99.toFixed(2)} ms`,
    )
  }
  for (const { child } of Object.values(writers)) child.send('stop')

  const wp50 = summarize(watchRounds.map((x) => x.p50))
  const wp99 = summarize(watchRounds.map((x) => x.p99))
  const wmax = summarize(watchRounds.map((x) => x.max))
  const lost = watchRounds.reduce((a, x) => a + x.lost, 0)
  const hop50 = summarize(watchRounds.map((x) => x.oneHop.p50))
  const hop99 = summarize(watchRounds.map((x) => x.oneHop.p99))
  const hopMax = summarize(watchRounds.map((x) => x.oneHop.max))
  const p99Ratio = summarize(watchRounds.map((x) => x.p99 / x.oneHop.p99))
  const t1 = table(
    `Node-RED flow: ${COUNT} msgs through set -> change -> get, ${WINDOW} in the flow, msgs/s median (min–max) over ${rounds} interleaved rounds`,
    [
      'flow',
      'msgs/s',
      'ratio to redis',
      'ratio to the echo limit',
      'ratio to bare MQTT on the same service (target >= 0.9x)',
      "ratio to bare MQTT plus Node-RED's own four hops, time per msg added (one process)",
    ],
    [
      [
        'ss-set -> ss-get (emulator via mosquitto)',
        fmtRange(r.ss.value),
        fmtRatio(r.ss.value.ratio),
        fmtRatio(vsEcho),
        fmtRatio(ssToItsBare),
      ],
      [
        'bare mqtt.js SET then GET per msg (emulator via mosquitto, in the Node-RED process)',
        fmtRange(r.emubare.value),
        fmtRatio(r.emubare.value.ratio),
        '',
        '1 (reference)',
      ],
      [
        'ss-set -> ss-get (embedded emulator, in the Node-RED process, no TCP)',
        fmtRange(r.emb.value),
        fmtRatio(r.emb.value.ratio),
        '',
        fmtRatio(embToItsBare),
        fmtRatio(embToFloor),
      ],
      [
        "our client alone on the embedded emulator, SET then GET per msg (the config node's client, no palette node)",
        fmtRange(r.embclient.value),
        fmtRatio(r.embclient.value.ratio),
        '',
        fmtRatio(pairRatio(r, 'embclient', 'embbare')),
        '',
      ],
      [
        'bare mqtt.js SET then GET per msg on the embedded emulator (in-process stream, in the Node-RED process)',
        fmtRange(r.embbare.value),
        fmtRatio(r.embbare.value.ratio),
        '',
        '1 (reference)',
      ],
      [
        'ss-set -> ss-get (echo responder via mosquitto: the MQTT limit)',
        fmtRange(r.echo.value),
        fmtRatio(r.echo.value.ratio),
        '1 (reference)',
        fmtRatio(toBare('echo')),
      ],
      [
        'bare mqtt.js SET then GET per msg (echo responder via mosquitto, in the Node-RED process)',
        fmtRange(r.bare.value),
        fmtRatio(r.bare.value.ratio),
        '',
        '1 (reference)',
      ],
      [
        'change -> change -> change -> sink (Node-RED alone, no request)',
        fmtRange(r.hops.value),
        fmtRatio(r.hops.value.ratio),
        '',
        '',
        '',
      ],
      [
        'redis-command set -> get (node-red-contrib-redis, redis-server)',
        fmtRange(r.redis.value),
        '1 (reference)',
        '',
        '',
        '',
      ],
    ],
  )
  const t2 = table(
    `Node-RED ss-watch: ${WATCH_KEYS} keys, ${WATCH_RATE} SETs/s for ${WATCH_MS} ms from another process; SET sent -> msg after ss-watch, against the same bytes published straight to a topic (one broker hop, a plain mqtt.js subscriber in the Node-RED process), rounds alternated; median (min–max) over ${rounds} rounds`,
    ['path', 'p50', 'p99', 'max', 'lost (all rounds)'],
    [
      [
        'SET -> key notification -> msg after ss-watch',
        fmtRange(wp50, 2, ' ms'),
        fmtRange(wp99, 2, ' ms'),
        fmtRange(wmax, 1, ' ms'),
        lost,
      ],
      [
        'publish -> subscriber, one hop (reference)',
        fmtRange(hop50, 2, ' ms'),
        fmtRange(hop99, 2, ' ms'),
        fmtRange(hopMax, 1, ' ms'),
        '',
      ],
      ['ratio, per round', '', fmtRatio(p99Ratio), '', ''],
    ],
  )
  writeResult('nodered', {
    tables: [t1, t2],
    headline: [
      ratioFigure('Node-RED set->get flow: ss / node-red-contrib-redis', r.ss.value.ratio),
      ratioFigure(
        'Node-RED set->get flow: ss on the embedded emulator (in-process) / node-red-contrib-redis',
        r.emb.value.ratio,
        0.5,
      ),
      ratioFigure(
        'Node-RED set->get flow: bare mqtt.js on the embedded emulator (the embedded MQTT ceiling) / node-red-contrib-redis',
        r.embbare.value.ratio,
      ),
      ratioFigure(
        'Node-RED set->get flow: ss on the embedded emulator / bare mqtt.js on the embedded emulator',
        embToItsBare,
        0.9,
      ),
      ratioFigure(
        "Node-RED set->get flow: ss on the embedded emulator / its floor (bare mqtt.js on it plus Node-RED's own four hops)",
        embToFloor,
      ),
      ratioFigure('Node-RED set->get flow: ss / bare mqtt.js, both on the emulator via mosquitto', ssToItsBare, 0.9),
      ratioFigure(
        'Node-RED set->get flow: ss on the echo responder / bare mqtt.js on the echo responder',
        toBare('echo'),
      ),
      ratioFigure('Node-RED set->get flow: ss on the emulator / ss on the echo responder', vsEcho),
      {
        metric: 'ss-watch p99 (SET sent -> msg after ss-watch)',
        value: Number(wp99.median.toFixed(2)),
        unit: ' ms',
        min: wp99.min,
        max: wp99.max,
        target: '< 5 ms',
        pass: wp99.median < 5,
      },
      ratioFigure('ss-watch p99 / one-hop publish p99 in the Node-RED process, same run', p99Ratio),
      { metric: 'ss-watch msgs lost, all rounds', value: lost, unit: '', target: '0', pass: lost === 0 },
    ],
    data: { flow: r, watch: watchRounds },
    notes: [
      'Node-RED embedded in its own process (bench/nodered-host.mjs); messages pushed into the first node with node.receive(), counted by a bench-sink node at the end (bench/lib/sink-node)',
    ],
  })
} finally {
  host.send('stop')
  await new Promise((resolve) => host.once('exit', resolve))
  await Promise.all([emu.stop(), echo.stop()])
  await redis.stop()
  await Promise.all([broker.stop(), echoBroker.stop()])
  rmSync(userDir, { recursive: true, force: true })
}

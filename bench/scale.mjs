// Measurement 7: the scale curve.
//  a) connections: 1, 2, 4, 8, 16 clients, each its own MQTT connection with 16 GETs in flight,
//     against the echo limit with the same clients (ratio per round), through mosquitto.
//  b) keys: emulators holding 1k, 10k, 100k and 1M keys (16-byte keys, 100-byte values), each
//     with its own mosquitto, measured in turn every round (A B C D …), GETs of random existing keys
//     and SETs of 1000 random keys beside them, 64 in flight. The figure is throughput at n keys / throughput at 1k
//     keys in the same round: 1.0 means no degradation from the store's size. The keys are loaded
//     through the emulator's Store and Journal into a file it restores at start
//     (bench/lib/make-store-file.mjs); the requests then go through the whole service.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  BENCH_DIR,
  benchArgs,
  fmtNum,
  fmtRange,
  fmtRatio,
  interleave,
  pairRatio,
  table,
  writeResult,
} from './lib/harness.mjs'
import { connectClient, keyOf, VALUE_100 } from './lib/load.mjs'
import { startEchoProcess, startEmulatorProcess, startMosquitto } from './lib/procs.mjs'
import { connectBare } from './lib/bare-requester.mjs'

const { quick, rounds, argv } = benchArgs()
const MS = quick ? 300 : 500
const LEAD_IN_MS = 150
const CONNECTIONS = [1, 2, 4, 8, 16]
const PER_CLIENT_WINDOW = 16
const KEY_SIZES = quick ? [1_000, 10_000, 100_000] : [1_000, 10_000, 100_000, 1_000_000]
const KEY_WINDOW = 64

/** `window` loops per client, every client at once, for `ms`; ops/s over all of them. */
async function driveMany(clients, { op, window, ms, keys, spread = 'cycle', keyOffset = 0 }) {
  let done = 0
  const t0 = performance.now()
  const end = t0 + ms
  let counter = 0
  const loop = async (client) => {
    while (performance.now() < end) {
      const i = keyOffset + (spread === 'random' ? Math.floor(Math.random() * keys) : counter++ % keys)
      if (op === 'GET') await client.get(keyOf(i))
      else await client.set(keyOf(i), VALUE_100)
      done++
    }
  }
  await Promise.all(clients.flatMap((c) => Array.from({ length: window }, () => loop(c))))
  return (done / (performance.now() - t0)) * 1000
}

const tables = []
const headline = []
const data = {}

if (!argv.includes('--keys-only')) {
  const [m1, m2] = [await startMosquitto(), await startMosquitto()]
  const emu = await startEmulatorProcess({ brokerUrl: m1.urls[0] })
  const echo = await startEchoProcess({ brokerUrl: m2.urls[0] })
  const max = Math.max(...CONNECTIONS)
  const clients = { emulator: [], echo: [], bare: [] }
  for (let i = 0; i < max; i++) {
    clients.emulator.push(await connectClient(m1.urls[0]))
    clients.echo.push(await connectClient(m2.urls[0]))
    clients.bare.push(await connectBare(m2.urls[0]))
  }
  // The bare-MQTT reference: the same number of plain mqtt.js requesters on the echo responder.
  const driveBare = async (set, ms) =>
    (await Promise.all(set.map((b) => b.drive({ op: 'GET', window: PER_CLIENT_WINDOW, ms })))).reduce(
      (a, r) => a + r.opsPerSec,
      0,
    )
  await Promise.all(Array.from({ length: 1000 }, (_, i) => clients.emulator[0].set(keyOf(i), VALUE_100)))
  const rows = []
  data.connections = {}
  for (const n of CONNECTIONS) {
    const r = await interleave({
      variants: ['emulator', 'echo', 'bare'],
      reference: 'echo',
      rounds,
      warmup: 1,
      measure: async (target) => {
        const set = clients[target].slice(0, n)
        if (target === 'bare') {
          await driveBare(set, LEAD_IN_MS)
          return driveBare(set, MS)
        }
        await driveMany(set, { op: 'GET', window: PER_CLIENT_WINDOW, ms: LEAD_IN_MS, keys: 1000 })
        return driveMany(set, { op: 'GET', window: PER_CLIENT_WINDOW, ms: MS, keys: 1000 })
      },
    })
    data.connections[n] = r
    rows.push([
      n,
      n * PER_CLIENT_WINDOW,
      fmtRange(r.emulator.value),
      fmtRange(r.echo.value),
      fmtRange(r.bare.value),
      fmtRatio(r.emulator.value.ratio),
      fmtRatio(pairRatio(r, 'emulator', 'bare')),
    ])
    console.log(
      `scale: ${n} connection(s): emulator ${fmtRange(r.emulator.value)} ops/s, echo ${fmtRange(r.echo.value)}, ratio ${fmtRatio(r.emulator.value.ratio)}`,
    )
  }
  const first = data.connections[CONNECTIONS[0]].emulator.value.ratio.median
  const last = data.connections[max].emulator.value.ratio.median
  headline.push({
    metric: `${max} connections: emulator / echo, relative to 1 connection`,
    value: Number((last / first).toFixed(3)),
    target: 'about 1 (scales as the echo limit does)',
    pass: last / first >= 0.8,
  })
  tables.push(
    table(
      `Connections: GET ops/s over all clients, ${PER_CLIENT_WINDOW} in flight per client, median (min–max) over ${rounds} interleaved rounds; ratios per round: emulator / echo limit (both through StateStoreClient), ours / bare (StateStoreClient + emulator against bare mqtt.js requesters + echo)`,
      ['connections', 'in flight', 'emulator', 'echo limit', 'bare mqtt.js on echo', 'emulator / echo', 'ours / bare'],
      rows,
    ),
  )
  await Promise.all([...clients.emulator, ...clients.echo, ...clients.bare].map((c) => c.close()))
  await Promise.all([emu.stop(), echo.stop(), m1.stop(), m2.stop()])
}

if (!argv.includes('--connections-only')) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-scale-'))
  const envs = {}
  try {
    for (const n of KEY_SIZES) {
      const file = join(dir, `store-${n}.log`)
      const t0 = Date.now()
      execFileSync(process.execPath, [join(BENCH_DIR, 'lib/make-store-file.mjs'), file, String(n)], {
        stdio: 'inherit',
      })
      const broker = await startMosquitto()
      const emu = await startEmulatorProcess({ brokerUrl: broker.urls[0], persistFile: file })
      const client = await connectClient(broker.urls[0])
      const probe = await client.get(keyOf(n - 1))
      if (!probe.value || probe.value.length !== 100)
        throw new Error(`the emulator restored from ${file} does not hold key ${n - 1}`)
      envs[n] = { broker, emu, client }
      console.log(`scale: emulator with ${fmtNum(n)} keys ready in ${((Date.now() - t0) / 1000).toFixed(1)} s`)
    }
    const variants = KEY_SIZES.map(String)
    const rows = []
    data.keys = {}
    for (const op of ['GET', 'SET']) {
      const r = await interleave({
        variants,
        reference: variants[0],
        rounds,
        warmup: 1,
        measure: async (v) => {
          const n = Number(v)
          const { client } = envs[n]
          // GETs read any of the n keys. SETs write 1000 keys of their own next to them: the n
          // restored keys are persistent, and overwriting those would measure the log, not the store.
          const spec = op === 'GET' ? { keys: n } : { keys: 1000, keyOffset: n }
          await driveMany([client], { op, window: KEY_WINDOW, ms: LEAD_IN_MS, spread: 'random', ...spec })
          return driveMany([client], { op, window: KEY_WINDOW, ms: MS, spread: 'random', ...spec })
        },
      })
      data.keys[op] = r
      for (const v of variants) {
        rows.push([
          op,
          fmtNum(Number(v)),
          fmtRange(r[v].value),
          v === variants[0] ? '1 (reference)' : fmtRatio(r[v].value.ratio),
        ])
      }
      const biggest = variants[variants.length - 1]
      const ratio = r[biggest].value.ratio
      headline.push({
        metric: `${op} at ${fmtNum(Number(biggest))} keys / at 1k keys`,
        value: Number(ratio.median.toFixed(3)),
        min: ratio.min,
        max: ratio.max,
        target: '>= 0.9x (no degradation)',
        pass: ratio.median >= 0.9,
      })
      console.log(`scale: ${op} at ${fmtNum(Number(biggest))} keys / 1k keys: ${fmtRatio(ratio)}`)
    }
    tables.push(
      table(
        `Store size: ops/s, ${KEY_WINDOW} in flight, random keys, median (min–max) over ${rounds} interleaved rounds; ratio = n keys / 1k keys per round`,
        ['op', 'keys', 'emulator', 'ratio to 1k keys'],
        rows,
      ),
    )
  } finally {
    for (const { client, emu, broker } of Object.values(envs)) {
      await client.close()
      await emu.stop()
      await broker.stop()
    }
    rmSync(dir, { recursive: true, force: true })
  }
}

writeResult('scale', {
  tables,
  headline,
  data,
  notes: [
    'connections: one StateStoreClient per connection, all in the bench process; emulator and echo responder in their own processes, each with its own mosquitto',
    'keys: one emulator per store size, each with its own mosquitto, loaded from a persistence file at start; GETs read random keys of the n, SETs (not persistent) write 1000 other keys in the same store',
  ],
})

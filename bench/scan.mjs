// Issue 24: SCAN over 1M keys, 1 % of them matching.
//  a) A whole scan (every page, following the continuation tokens) through the client, the emulator
//     in its own process behind mosquitto, against redis-server's `SCAN <cursor> MATCH … COUNT …`
//     over the same keys with @redis/client, alternated round by round. The figure is redis time /
//     emulator time (throughput ratio): >= 0.5 is the target. COUNT is the number of keys the
//     emulator looks at for one page (20,000), so both do the same work per round trip; COUNT 10,
//     redis's default, is shown too.
//  b) The emulator's longest event-loop block per page: every page of the same scan executed by the
//     emulator's own Executor (parse, walk, reply encoding) on a Keyspace of 1M keys in this process, each
//     call timed. A SCAN page is one synchronous call, so its duration is the block. Target <= 20 ms.
//     Measured as CPU time (process.cpuUsage around the call) and as wall time: on a machine with more
//     runnable processes than cores the wall time also counts the time the process waited for a core
//     in the middle of a page, which no code of ours can shorten; the CPU time is what the page costs.
import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient } from '@redis/client'
import {
  benchArgs,
  fmtNum,
  fmtRange,
  fmtRatio,
  interleave,
  ROOT,
  summarize,
  table,
  writeResult,
} from './lib/harness.mjs'
import { connectClient, keyOf, VALUE_100 } from './lib/load.mjs'
import { startEmulatorProcess, startMosquitto, startRedis } from './lib/procs.mjs'

const require = createRequire(import.meta.url)
const { Keyspace } = require(join(ROOT, 'dist/src/emulator/core/keyspace'))
const { Executor } = require(join(ROOT, 'dist/src/emulator/core/execute'))
const { DEFAULT_SCAN_LIMITS } = require(join(ROOT, 'dist/src/emulator/core/scan'))
const { Registrations } = require(join(ROOT, 'dist/src/emulator/core/registrations'))
const { HybridLogicalClock } = require(join(ROOT, 'dist/src/hlc'))
const { Request, parseScanResponse } = require(join(ROOT, 'dist/src/protocol'))

const { quick, rounds } = benchArgs()
const KEYS = quick ? 200_000 : 1_000_000
// keyOf(i) ends in i's last two digits: 1 % of the keys.
const PATTERN = 'key-*00'
const MATCHING = KEYS / 100
const COUNT = DEFAULT_SCAN_LIMITS.maxVisited

const tables = []
const headline = []
const data = { keys: KEYS, pattern: PATTERN, matching: MATCHING, count: COUNT }
const figure = (summary, unit, digits = 2) => ({
  value: Number(summary.median.toFixed(digits)),
  unit,
  min: summary.min,
  max: summary.max,
})

// ---------- a) a whole scan: emulator through MQTT vs redis-server ----------

const work = mkdtempSync(join(tmpdir(), 'aio-ss-bench-scan-'))
const storeFile = join(work, 'store.aof')
const made = spawnSync(process.execPath, [join(ROOT, 'bench/lib/make-store-file.mjs'), storeFile, String(KEYS)], {
  stdio: 'inherit',
})
if (made.status !== 0) throw new Error('make-store-file failed')
const mosquitto = await startMosquitto()
const emulator = await startEmulatorProcess({ brokerUrl: mosquitto.urls[0], persistFile: storeFile })
const client = await connectClient(mosquitto.urls[0])
const redis = await startRedis()
if (!redis) console.log('redis-server is not installed (apt-get install redis-server): emulator figures only')
let rc = null
if (redis) {
  const value = 'v'.repeat(100)
  const lines = []
  for (let i = 0; i < KEYS; i++) lines.push(`*3\r\n$3\r\nSET\r\n$16\r\n${keyOf(i)}\r\n$100\r\n${value}\r\n`)
  const piped = spawnSync('redis-cli', ['-p', String(redis.port), '--pipe'], {
    input: lines.join(''),
    encoding: 'utf8',
    maxBuffer: 1 << 26,
  })
  if (piped.status !== 0 || !/errors: 0/.test(piped.stdout))
    throw new Error(`redis-cli --pipe: ${piped.stdout}${piped.stderr}`)
  rc = createClient({ url: redis.url, socket: { noDelay: true } })
  rc.on('error', () => {})
  await rc.connect()
}

async function scanEmulator() {
  const t0 = performance.now()
  let found = 0
  let pages = 0
  for await (const page of client.scan(PATTERN, { timeoutMs: 30_000 })) {
    found += page.length
    pages++
  }
  const ms = performance.now() - t0
  if (found !== MATCHING) throw new Error(`the emulator's scan found ${found} keys, not ${MATCHING}`)
  return { ms, pages }
}

async function scanRedis(count) {
  const t0 = performance.now()
  // Redis may return a key twice (a rehash during the scan); a Set counts each once.
  const found = new Set()
  let cursor = '0'
  let pages = 0
  do {
    const reply = await rc.scan(cursor, { MATCH: PATTERN, COUNT: count })
    cursor = String(reply.cursor)
    for (const k of reply.keys) found.add(String(k))
    pages++
  } while (cursor !== '0')
  const ms = performance.now() - t0
  if (found.size !== MATCHING) throw new Error(`redis's scan found ${found.size} keys, not ${MATCHING}`)
  return { ms, pages }
}

try {
  const variants = redis ? ['emulator', 'redis', 'redis COUNT 10'] : ['emulator']
  const r = await interleave({
    variants,
    reference: variants[0],
    rounds,
    warmup: 1,
    measure: async (v) => (v === 'emulator' ? scanEmulator() : scanRedis(v === 'redis' ? COUNT : 10)),
  })
  data.wholeScan = r
  const rows = variants.map((v) => [
    v,
    fmtRange(r[v].ms, 0, ' ms'),
    fmtNum(r[v].pages.median),
    v === 'emulator' ? '–' : fmtRatio(summarize(r[v].ms.samples.map((ms, i) => ms / r.emulator.ms.samples[i]))),
  ])
  tables.push(
    table(
      `A whole SCAN of ${fmtNum(KEYS)} keys, ${fmtNum(MATCHING)} matching ${PATTERN} (median, min–max over ${rounds} rounds)`,
      ['target', 'time', 'round trips', 'its time / emulator time'],
      rows,
    ),
  )
  if (redis) {
    const ratio = summarize(r.redis.ms.samples.map((ms, i) => ms / r.emulator.ms.samples[i]))
    headline.push({
      metric: `SCAN of ${fmtNum(KEYS)} keys (1 % matching), emulator vs redis SCAN MATCH COUNT ${COUNT} (throughput ratio)`,
      ...figure(ratio, 'x'),
      target: '>= 0.5',
      pass: ratio.median >= 0.5,
    })
  }
} finally {
  await client.close()
  await rc?.quit().catch(() => {})
  await redis?.stop()
  await emulator.stop()
  await mosquitto.stop()
  rmSync(work, { recursive: true, force: true })
}

// ---------- b) the emulator's event-loop block per page ----------

{
  const clock = new HybridLogicalClock()
  const store = new Keyspace({ clock })
  for (let i = 0; i < KEYS; i++) store.set(Buffer.from(keyOf(i)), VALUE_100)
  const executor = new Executor({ store, clock, registrations: new Registrations() })
  const ctx = { prop: () => undefined, clientId: 'bench', dialect: undefined }
  const longest = []
  const longestCpu = []
  const perPage = []
  for (let round = 0; round < rounds; round++) {
    let token = null
    let found = 0
    const times = []
    const cpu = []
    do {
      const payload = Request.scan(PATTERN, token)
      const c0 = process.cpuUsage()
      const t0 = performance.now()
      const answer = executor.execute(payload, ctx)
      times.push(performance.now() - t0)
      const c = process.cpuUsage(c0)
      cpu.push((c.user + c.system) / 1000)
      const page = parseScanResponse(answer.payload)
      found += page.keys.length
      token = page.token
    } while (token)
    if (found !== MATCHING) throw new Error(`the executor's scan found ${found} keys, not ${MATCHING}`)
    longest.push(Math.max(...times))
    longestCpu.push(Math.max(...cpu))
    perPage.push(times.reduce((a, b) => a + b, 0) / times.length)
  }
  store.close()
  const l = summarize(longest)
  const lc = summarize(longestCpu)
  const p = summarize(perPage)
  data.block = { longestWall: l, longestCpu: lc, meanWall: p }
  tables.push(
    table(
      `The emulator's event-loop block per SCAN page at ${fmtNum(KEYS)} keys (${fmtNum(COUNT)} keys looked at per page; median, min–max over ${rounds} rounds)`,
      ['figure', 'value'],
      [
        ['longest page, CPU time', fmtRange(lc, 1, ' ms')],
        ['longest page, wall time (includes waiting for a core)', fmtRange(l, 1, ' ms')],
        ['mean page, wall time', fmtRange(p, 1, ' ms')],
      ],
    ),
  )
  headline.push({
    metric: `SCAN: the emulator's longest event-loop block per page at ${fmtNum(KEYS)} keys, CPU time (ms)`,
    ...figure(lc, ' ms', 1),
    target: '<= 20',
    pass: lc.median <= 20,
  })
}

writeResult('scan', { tables, headline, data })
for (const h of headline)
  console.log(`${h.pass ? 'met' : 'NOT MET'}: ${h.metric}: ${h.value}${h.unit} (target ${h.target})`)

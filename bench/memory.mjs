// Measurement 6: the emulator's memory per key at 10k, 100k and 1M keys (16-byte keys, 100-byte
// values), resident and heap, against redis-server's `used_memory` for the same data.
//
// Emulator, two ways:
//   - store API: bench/memory-worker.mjs puts n keys straight into the emulator's Store in a fresh
//     process and reports the growth of heap + external (Buffers) and of RSS after a full GC;
//     every size, every round.
//   - request path: the whole emulator (startEmulator, in a worker process) loaded through
//     StateStoreClient SETs over mosquitto; 10k and 100k keys, one run each (1M through MQTT would
//     take minutes here), to show the store API figures are what the service really holds.
// redis-server: `used_memory` (and RSS) growth after loading the same keys with `redis-cli --pipe`.
// Each round does every size for both, redis and emulator interleaved.
import { execFileSync, fork, spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { createConnection } from 'node:net'
import { BENCH_DIR, benchArgs, fmtNum, summarize, table, writeResult } from './lib/harness.mjs'
import { connectClient, keyOf, preload } from './lib/load.mjs'
import { startMosquitto, startRedis } from './lib/procs.mjs'

const { quick, rounds } = benchArgs()
const SIZES = quick ? [10_000, 100_000] : [10_000, 100_000, 1_000_000]
const REQUEST_PATH_SIZES = quick ? [10_000] : [100_000]
const MB = 2 ** 20

function storeRun(n) {
  const out = execFileSync(
    process.execPath,
    ['--expose-gc', join(BENCH_DIR, 'memory-worker.mjs'), 'store', String(n)],
    {
      encoding: 'utf8',
      maxBuffer: 1 << 20,
    },
  )
  const { before, after } = JSON.parse(out)
  return {
    heap: (after.heapUsed - before.heapUsed) / n,
    external: (after.external - before.external) / n,
    total: (after.heapUsed + after.external - before.heapUsed - before.external) / n,
    rss: (after.rss - before.rss) / n,
  }
}

/** One command to redis over a raw socket; the reply as text (INFO and FLUSHALL are all we need). */
function redisCommand(port, ...args) {
  return new Promise((resolve, reject) => {
    const socket = createConnection(port, '127.0.0.1')
    socket.setNoDelay(true)
    let text = ''
    socket.on('data', (d) => {
      text += d.toString('utf8')
      // A bulk reply is complete when its declared length has arrived; a simple reply at its CRLF.
      const m = /^\$(\d+)\r\n/.exec(text)
      if ((m && text.length >= m[0].length + Number(m[1]) + 2) || (!m && text.endsWith('\r\n'))) {
        socket.end()
        resolve(text)
      }
    })
    socket.on('error', reject)
    socket.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`)
  })
}

async function redisMemory(port) {
  const info = await redisCommand(port, 'INFO', 'memory')
  const field = (name) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)[1])
  return { used: field('used_memory') }
}

async function redisRun(redis, n) {
  await redisCommand(redis.port, 'FLUSHALL')
  const before = await redisMemory(redis.port)
  const value = 'v'.repeat(100)
  const lines = []
  for (let i = 0; i < n; i++) {
    const key = keyOf(i)
    lines.push(`*3\r\n$3\r\nSET\r\n$${key.length}\r\n${key}\r\n$100\r\n${value}\r\n`)
  }
  const r = spawnSync('redis-cli', ['-p', String(redis.port), '--pipe'], {
    input: lines.join(''),
    encoding: 'utf8',
    maxBuffer: 1 << 24,
  })
  if (r.status !== 0 || !/errors: 0, replies: (\d+)/.test(r.stdout))
    throw new Error(`redis-cli --pipe: ${r.stdout}${r.stderr}`)
  const after = await redisMemory(redis.port)
  return { used: (after.used - before.used) / n }
}

async function requestPathRun(brokerUrl, n) {
  const child = fork(join(BENCH_DIR, 'memory-worker.mjs'), ['serve', brokerUrl], {
    execArgv: ['--expose-gc'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const next = () => new Promise((resolve) => child.once('message', resolve))
  await next()
  child.send('measure')
  const before = (await next()).memory
  const client = await connectClient(brokerUrl)
  await preload(client, n)
  child.send('measure')
  const { memory: loaded, keys } = await next()
  // The service remembers every answer for its request's Message Expiry (10 s from this client) to
  // answer re-sends; entries leave as new requests arrive. Wait them out, send one request, measure
  // what the keys alone hold.
  await new Promise((resolve) => setTimeout(resolve, 11_000))
  await client.get(keyOf(0))
  await client.close()
  child.send('measure')
  const { memory: after } = await next()
  child.send('stop')
  await new Promise((resolve) => child.once('exit', resolve))
  if (keys !== n) throw new Error(`the emulator holds ${keys} keys, expected ${n}`)
  return {
    heap: (after.heapUsed - before.heapUsed) / n,
    external: (after.external - before.external) / n,
    total: (after.heapUsed + after.external - before.heapUsed - before.external) / n,
    rss: (after.rss - before.rss) / n,
    withDedup: (loaded.heapUsed + loaded.external - before.heapUsed - before.external) / n,
  }
}

const redis = await startRedis()
if (!redis) console.log('redis-server is not installed (apt-get install redis-server): emulator figures only')

const samples = Object.fromEntries(SIZES.map((n) => [n, { store: [], redis: [] }]))
for (let r = 0; r < rounds; r++) {
  for (const n of SIZES) {
    if (redis) samples[n].redis.push(await redisRun(redis, n))
    samples[n].store.push(storeRun(n))
  }
  console.log(`memory: round ${r + 1}/${rounds} done`)
}
if (redis) await redis.stop()

const mosquitto = await startMosquitto()
const requestPath = {}
for (const n of REQUEST_PATH_SIZES) requestPath[n] = await requestPathRun(mosquitto.urls[0], n)
await mosquitto.stop()

const pick = (list, f) => summarize(list.map(f))
const rows = []
const headline = []
const data = { sizes: {}, requestPath }
for (const n of SIZES) {
  const s = samples[n]
  const total = pick(s.store, (x) => x.total)
  const heap = pick(s.store, (x) => x.heap)
  const ext = pick(s.store, (x) => x.external)
  const rss = pick(s.store, (x) => x.rss)
  const used = redis ? pick(s.redis, (x) => x.used) : null
  const ratio = redis ? summarize(s.store.map((x, i) => x.total / s.redis[i].used)) : null
  const rssRatio = redis ? summarize(s.store.map((x, i) => x.rss / s.redis[i].used)) : null
  data.sizes[n] = { total, heap, external: ext, rss, redisUsed: used, ratio, rssRatio }
  const b = (x) => (x ? `${x.median.toFixed(0)} (${x.min.toFixed(0)}–${x.max.toFixed(0)})` : '–')
  rows.push([
    fmtNum(n),
    `${b(total)}`,
    // `|| 0`: a growth of -0.2 bytes is "0", not "-0".
    `${Math.round(heap.median) || 0} + ${Math.round(ext.median) || 0}`,
    b(rss),
    b(used),
    ratio ? `${ratio.median.toFixed(2)}x` : '–',
    rssRatio ? `${rssRatio.median.toFixed(2)}x` : '–',
    requestPath[n]
      ? `${requestPath[n].total.toFixed(0)} / ${requestPath[n].rss.toFixed(0)} (${requestPath[n].withDedup.toFixed(0)} with the dedup cache)`
      : '–',
  ])
  if (ratio)
    headline.push({
      metric: `memory at ${fmtNum(n)} keys: emulator heap+external / redis used_memory`,
      value: Number(ratio.median.toFixed(3)),
      min: ratio.min,
      max: ratio.max,
      target: '<= 1.5x',
      pass: ratio.median <= 1.5,
    })
}

// Linear: the cost of the last 900k keys per key against the average over the first 100k.
const big = SIZES[SIZES.length - 1]
const mid = SIZES[SIZES.length - 2]
const growth = (data.sizes[big].total.median * big - data.sizes[mid].total.median * mid) / (big - mid)
const linearity = growth / data.sizes[mid].total.median
headline.push({
  metric: `growth per key from ${fmtNum(mid)} to ${fmtNum(big)} / per key at ${fmtNum(mid)}`,
  value: Number(linearity.toFixed(3)),
  target: 'about 1 (linear)',
  pass: linearity > 0.8 && linearity < 1.2,
})
data.linearity = { growthPerKey: growth, perKeyAtMid: data.sizes[mid].total.median, ratio: linearity }

// Where the bytes go: each part a key is made of, a million of it alone in a fresh process. The
// Buffer is what a value of 4 KiB or more costs (and what every value cost before they became strings).
const PARTS = {
  map: 'Map entry + 16-char latin1 key string',
  record: 'record (value, version timestamp and counter, shared attributes)',
  string: '100-byte value as a latin1 string',
  buffer: 'for comparison, not in a key: 100-byte value Buffer with its own ArrayBuffer',
}
const partRows = []
data.parts = {}
for (const [part, label] of Object.entries(PARTS)) {
  const out = execFileSync(
    process.execPath,
    ['--expose-gc', join(BENCH_DIR, 'memory-worker.mjs'), 'part', part, String(quick ? 100_000 : 1_000_000)],
    {
      encoding: 'utf8',
    },
  )
  const m = JSON.parse(out)
  data.parts[part] = m
  partRows.push([label, m.heap.toFixed(0), m.external.toFixed(0), m.rss.toFixed(0)])
}
const sum = (f) => ['map', 'record', 'string'].reduce((a, part) => a + data.parts[part][f], 0)
partRows.push(["sum of a key's parts", sum('heap').toFixed(0), sum('external').toFixed(0), sum('rss').toFixed(0)])

const t = table(
  `Memory, bytes per key, median (min–max) over ${rounds} rounds; 16-byte keys, 100-byte values`,
  [
    'keys',
    'emulator heap+ext',
    'heap + ext',
    'emulator RSS',
    'redis used_memory',
    'heap+ext / used',
    'RSS / used',
    'request path heap+ext / RSS',
  ],
  rows,
)
const tParts = table(
  `Where an emulator key's bytes go (each part alone, ${quick ? '100k' : '1M'} of it, bytes each)`,
  ['part', 'heap', 'external', 'RSS'],
  partRows,
)
console.log(
  `linearity: from ${fmtNum(mid)} to ${fmtNum(big)} keys each key added ${growth.toFixed(0)} bytes; at ${fmtNum(mid)} the average was ${data.sizes[mid].total.median.toFixed(0)} (ratio ${linearity.toFixed(2)})`,
)
writeResult('memory', {
  tables: [t, tParts],
  headline,
  data,
  notes: [
    'emulator: Store API in a fresh process per size and round, values handed over as views into other buffers as the service gets them, after a full GC; heap = heapUsed growth, ext = external growth (value Buffers), RSS = resident growth',
    `request path: the whole emulator loaded by StateStoreClient SETs through mosquitto, one run at ${REQUEST_PATH_SIZES.map((n) => fmtNum(n)).join(' and ')} keys, measured after the dedup cache entries expired (and, in parentheses, right after the load)`,
    `redis-server ${redis ? spawnSync('redis-server', ['--version'], { encoding: 'utf8' }).stdout.trim().split(' ')[2] : 'absent'}: used_memory growth after redis-cli --pipe (jemalloc); nothing saved`,
    `1 MiB = ${MB} bytes`,
  ],
})

// The editor sidebar's cost:
//   1. live updates: a Node-RED runtime whose ss-watch nodes observe 100 keys while a client in this
//      process SETs them 2,000 times a second; the editor's websocket (as an open sidebar tab has
//      it) counts the messages pushed, and the runtime's CPU is read from /proc. Reference, same
//      run: the same runtime under the same load with the tab closed (no viewer), alternated.
//   2. the key browser's first page at 1M keys (emulator admin channel, in this process): time to
//      the page and the longest event-loop stall while it is computed. Reference, same run: the
//      obvious implementation, a sorted copy of every key (`[...keys].sort()`), then the slice.
// `npm run bench -- sidebar [--rounds N] [--quick]` (Node-RED 5 needs the Node.js 24 that npm puts on PATH).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { benchArgs, fmtNum, fmtRange, fmtRatio, interleave, ROOT, sleep, table, writeResult } from './lib/harness.mjs'
import { cpuMsOf, freePort, startEmulatorProcess } from './lib/procs.mjs'
import nodeRed from '../dev/node-red.js'

const { FROM_WORKING_TREE, runtimeSettings, startNodeRed, writeSettings } = nodeRed

const { StateStoreClient } = await import(join(ROOT, 'dist', 'src', 'client', 'index.js'))
const { EmulatorAdmin } = await import(join(ROOT, 'dist', 'src', 'emulator', 'admin', 'index.js'))
const { Keyspace } = await import(join(ROOT, 'dist', 'src', 'emulator', 'core', 'keyspace.js'))
const { HybridLogicalClock } = await import(join(ROOT, 'dist', 'src', 'hlc', 'index.js'))

const { quick, rounds } = benchArgs()
const WATCHED = 100
const RATE = 2000
const WINDOW_MS = quick ? 3000 : 6000
const KEYS = 1_000_000
const tables = []
const headline = []
/** A headline figure as bench/run.mjs shows it: the median (rounded) with its unit and the rounds' min–max. */
const figure = (summary, unit, digits = 2) => ({
  value: Number(summary.median.toFixed(digits)),
  unit,
  min: summary.min,
  max: summary.max,
})

// ---------- 1. live updates under 2,000 SETs/s ----------

async function startRuntime() {
  // The emulator with its own broker, in a process of its own: the writer below reaches it over TCP.
  const emulator = await startEmulatorProcess()
  const dir = mkdtempSync(join(tmpdir(), 'aio-ss-bench-sidebar-'))
  const settingsFile = join(dir, 'settings.js')
  writeSettings(
    settingsFile,
    runtimeSettings({
      ...FROM_WORKING_TREE,
      credentialSecret: 'bench',
      logging: { console: { level: 'warn', metrics: false, audit: false } },
    }),
  )
  const keys = Array.from({ length: WATCHED }, (_, i) => `bench/watched/${i}`)
  writeFileSync(
    join(dir, 'flows.json'),
    JSON.stringify([
      { id: 'tab1', type: 'tab', label: 'bench' },
      { id: 'cfg1', type: 'ss-config', name: 'bench', broker: emulator.url, clientId: 'bench-sidebar' },
      { id: 'watch1', type: 'ss-watch', z: 'tab1', store: 'cfg1', keys: keys.join('\n'), decode: 'auto', wires: [[]] },
    ]),
  )
  const child = await startNodeRed({
    userDir: dir,
    port: await freePort(),
    settingsFile,
    timeoutMs: 60000,
    ready: async (url) => {
      const res = await fetch(`${url}/aio-statestore/stores`)
      return (await res.json()).stores.some((s) => s.connection.state === 'connected' && s.watches.length === WATCHED)
    },
  })
  return {
    url: child.url,
    pid: child.pid,
    broker: emulator.url,
    stop: async () => {
      await child.stop()
      await emulator.stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

async function openComms(url) {
  const counts = { messages: 0, frames: 0, watchItems: 0, bytes: 0 }
  const ws = new WebSocket(url.replace('http://', 'ws://') + '/comms')
  await new Promise((resolve, reject) => {
    ws.onerror = reject
    ws.onopen = () => {
      ws.send(JSON.stringify({ subscribe: 'aio-statestore/#' }))
      resolve()
    }
  })
  ws.onmessage = (event) => {
    const batch = JSON.parse(String(event.data))
    if (!Array.isArray(batch)) return
    counts.frames += 1
    counts.bytes += String(event.data).length
    for (const m of batch) {
      if (m.topic !== 'aio-statestore/update') continue
      counts.messages += 1
      counts.watchItems += m.data.watches?.length ?? 0
    }
  }
  return { counts, close: () => ws.close() }
}

/** SETs at RATE per second over the watched keys, paced every 10 ms. */
function writer(client) {
  let n = 0
  let failed = 0
  const start = performance.now()
  const timer = setInterval(() => {
    const due = Math.floor(((performance.now() - start) * RATE) / 1000)
    for (; n < due; n++)
      client.set(`bench/watched/${n % WATCHED}`, JSON.stringify({ n, t: Date.now() })).catch(() => (failed += 1))
  }, 10)
  return { stop: () => clearInterval(timer), sent: () => n, failed: () => failed }
}

async function liveUpdates() {
  const rt = await startRuntime()
  const client = new StateStoreClient({
    brokerUrl: rt.broker,
    clientId: `bench-writer-${process.pid}`,
    maxInFlight: 5000,
    maxQueued: 5000,
  })
  await client.ready({ timeoutMs: 10000 })
  const comms = await openComms(rt.url)
  const w = writer(client)
  await sleep(2000) // warm-up at rate
  try {
    const results = await interleave({
      variants: ['tab closed', 'tab open'],
      rounds,
      warmup: 0,
      measure: async (variant) => {
        const viewer = 'bench'
        await fetch(`${rt.url}/aio-statestore/live`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ viewer, open: variant === 'tab open' }),
        })
        await sleep(500)
        const c0 = cpuMsOf(rt.pid)
        const m0 = { ...comms.counts }
        const s0 = w.sent()
        const t0 = performance.now()
        await sleep(WINDOW_MS)
        const seconds = (performance.now() - t0) / 1000
        return {
          cpu: (cpuMsOf(rt.pid) - c0) / 10 / seconds, // percent of one core
          messages: (comms.counts.messages - m0.messages) / seconds,
          watchItems: (comms.counts.watchItems - m0.watchItems) / seconds,
          kbytes: (comms.counts.bytes - m0.bytes) / 1024 / seconds,
          sets: (w.sent() - s0) / seconds,
        }
      },
    })
    const closed = results['tab closed']
    const open = results['tab open']
    tables.push(
      table(
        `Sidebar live updates: ${WATCHED} watched keys, ${RATE} SETs/s, ${rounds} rounds of ${WINDOW_MS / 1000} s (median, min–max)`,
        ['', 'tab closed (reference)', 'tab open', 'open / closed'],
        [
          ['SETs/s sent', fmtRange(closed.sets), fmtRange(open.sets), ''],
          ['runtime CPU, % of a core', fmtRange(closed.cpu, 1), fmtRange(open.cpu, 1), fmtRatio(open.cpu.ratio)],
          ['editor messages/s', fmtRange(closed.messages, 1), fmtRange(open.messages, 1), ''],
          ['watch rows pushed/s', fmtRange(closed.watchItems, 1), fmtRange(open.watchItems, 1), ''],
          ['editor KiB/s', fmtRange(closed.kbytes, 1), fmtRange(open.kbytes, 1), ''],
        ],
      ),
    )
    // The bound by construction: one message per 250 ms per store for changes, plus one a second for
    // figures; each key in at most 4 of them. A window of W seconds can hold one more of each period
    // at its edges than W times the rate: the bound is checked with that allowance, never more.
    const windowS = WINDOW_MS / 1000
    headline.push({
      metric: 'sidebar editor messages/s at 2,000 SETs/s (tab open)',
      ...figure(open.messages, ''),
      target: `<= 5 (+ 2 at the window's edges: ${(5 + 2 / windowS).toFixed(2)})`,
      pass: open.messages.median <= 5 + 2 / windowS,
    })
    headline.push({
      metric: 'sidebar watch rows/s pushed for 100 keys (tab open)',
      ...figure(open.watchItems, ''),
      target: `<= ${WATCHED * 4} (+ ${WATCHED} at the window's edges: ${(WATCHED * 4 + WATCHED / windowS).toFixed(0)})`,
      pass: open.watchItems.median <= WATCHED * 4 + WATCHED / windowS,
    })
    headline.push({
      metric: 'sidebar runtime CPU, tab open / tab closed',
      ...figure(open.cpu.ratio, 'x'),
      target: '<= 1.2',
      pass: open.cpu.ratio.median <= 1.2,
    })
    headline.push({
      metric: 'sidebar editor messages/s with the tab closed',
      ...figure(closed.messages, ''),
      target: '0',
      pass: closed.messages.max === 0,
    })
    return { closed, open, failedSets: w.failed() }
  } finally {
    w.stop()
    comms.close()
    await client.close()
    await rt.stop()
  }
}

// ---------- 2. the key browser's first page at 1M keys ----------

/** Time to the result, and the longest gap between ticks of a 1 ms timer meanwhile (how long the event loop was held). */
async function stall(fn) {
  let last = performance.now()
  let longest = 0
  const ticker = setInterval(() => {
    const now = performance.now()
    longest = Math.max(longest, now - last)
    last = now
  }, 1)
  await sleep(5)
  const t0 = performance.now()
  const result = await fn()
  const ms = performance.now() - t0
  await sleep(5) // the tick after a synchronous block records it
  clearInterval(ticker)
  return { ms, stallMs: longest, result }
}

async function keyBrowser() {
  const store = new Keyspace({ clock: new HybridLogicalClock() })
  const value = Buffer.alloc(100, 'v')
  for (let i = 0; i < KEYS; i++) store.set(Buffer.from(`sensor/${(i * 7919) % KEYS}/reading`), value)
  const admin = new EmulatorAdmin(store)
  const naive = (pattern) => {
    const re = pattern
      ? new RegExp(
          `^${pattern
            .replace(/[.+^${}()|[\]\\]/g, '\\$&')
            .replace(/\*/g, '.*')
            .replace(/\?/g, '.')}$`,
        )
      : null
    const ids = []
    for (const [id] of store.scan()) if (!re || re.test(id)) ids.push(id)
    ids.sort()
    return ids.slice(0, 100)
  }
  const cases = [
    ['all keys', ''],
    ['pattern sensor/12*', 'sensor/12*'],
  ]
  const rows = []
  const data = {}
  for (const [label, pattern] of cases) {
    const results = await interleave({
      variants: ['sorted copy', 'admin channel', 'idle'],
      rounds,
      measure: async (variant) => {
        // 'idle': the same timer with nothing to do for 300 ms, the machine's own stalls (GC, other processes).
        const r = await stall(async () =>
          variant === 'idle'
            ? sleep(300)
            : variant === 'sorted copy'
              ? naive(pattern)
              : (await admin.listKeys({ pattern, limit: 100 })).keys.map((k) => k.key),
        )
        return { ms: r.ms, stallMs: r.stallMs }
      },
    })
    // Same page from both.
    const ours = (await admin.listKeys({ pattern, limit: 100 })).keys.map((k) =>
      Buffer.from(k.keyHex, 'hex').toString('latin1'),
    )
    if (JSON.stringify(ours) !== JSON.stringify(naive(pattern))) throw new Error(`${label}: the pages differ`)
    const ref = results['sorted copy']
    const adm = results['admin channel']
    rows.push([
      label,
      fmtRange(ref.ms, 0, ' ms'),
      fmtRange(adm.ms, 0, ' ms'),
      fmtRatio(adm.ms.ratio),
      fmtRange(ref.stallMs, 0, ' ms'),
      fmtRange(adm.stallMs, 0, ' ms'),
      fmtRange(results.idle.stallMs, 0, ' ms'),
    ])
    data[label] = results
    if (!pattern) {
      headline.push({
        metric: 'key browser first page at 1M keys (ms)',
        ...figure(adm.ms, ' ms', 0),
        target: '<= 2000',
        pass: adm.ms.median <= 2000,
      })
      headline.push({
        metric: 'key browser longest event-loop stall at 1M keys (ms)',
        ...figure(adm.stallMs, ' ms', 0),
        target: '<= 50',
        pass: adm.stallMs.median <= 50,
      })
    }
  }
  tables.push(
    table(
      `Key browser, first page of 100 at ${fmtNum(KEYS)} keys (median, min–max over ${rounds} rounds)`,
      [
        'query',
        'sorted copy (reference)',
        'admin channel',
        'time ratio',
        'stall, sorted copy',
        'stall, admin channel',
        'stall, idle',
      ],
      rows,
    ),
  )
  return data
}

const live = await liveUpdates()
const browser = await keyBrowser()
for (const h of headline)
  console.log(
    `${h.pass ? 'PASS' : 'FAIL'}  ${h.metric}: ${typeof h.value === 'number' ? h.value.toFixed(2) : h.value} (target ${h.target})`,
  )
writeResult('sidebar', { tables, headline, data: { live, browser } })

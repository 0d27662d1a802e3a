#!/usr/bin/env node
// Soak: 16 clients mixing GET, SET (plain and NX), DEL and KEYNOTIFY on a shared key space for a
// fixed time, against the emulator served through mosquitto (or its embedded broker when mosquitto
// is not installed). It checks that no request fails, that the final store equals a model computed
// from the acknowledged operations (the write with the greatest version wins; versions are minted in
// execution order), that every watcher's last notification matches the final state, and how memory
// moves: the emulator runs in a child process that reports its heap and RSS after a full GC.
//
//   npm run soak                      60 s
//   npm run soak -- --seconds 600     10 min
//   options: --clients 16 --keys 256 --inflight 8 --embedded (the emulator's own broker) --json
import { spawn, spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { sleep } from './lib/harness.mjs'
import { startMosquitto } from './lib/procs.mjs'

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)))
const require = createRequire(import.meta.url)

const mosquittoInstalled = () =>
  ['/usr/sbin/mosquitto', '/usr/bin/mosquitto'].some((b) => spawnSync(b, ['-h']).error === undefined)
const MB = (bytes) => Math.round((bytes / 1048576) * 10) / 10

const { values: opts } = parseArgs({
  options: {
    seconds: { type: 'string', default: '60' },
    clients: { type: 'string', default: '16' },
    keys: { type: 'string', default: '256' },
    inflight: { type: 'string', default: '8' },
    json: { type: 'boolean', default: false },
    embedded: { type: 'boolean', default: false },
    role: { type: 'string' },
    broker: { type: 'string' },
  },
})

if (opts.role === 'emulator') await emulatorChild()
else await main()

// ---------------------------------------------------------------- the emulator, in its own process

async function emulatorChild() {
  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc')
  const { startEmulator } = require(join(ROOT, 'dist', 'src', 'emulator'))
  const emulator = await startEmulator(
    opts.broker
      ? { brokerUrl: opts.broker, logLevel: 'error' }
      : { listen: { host: '127.0.0.1', port: 0 }, logLevel: 'error' },
  )
  const report = (extra = {}) => {
    gc()
    gc()
    const m = process.memoryUsage()
    process.stdout.write(
      `${JSON.stringify({ url: emulator.brokerUrl, keys: emulator.keyCount, rss: m.rss, heapUsed: m.heapUsed, arrayBuffers: m.arrayBuffers, ...extra })}\n`,
    )
  }
  report({ ready: true })
  process.stdin.setEncoding('utf8')
  process.stdin.on('data', async (line) => {
    if (line.includes('sample')) report()
    if (line.includes('stop')) {
      await emulator.stop()
      process.exit(0)
    }
  })
}

// ---------------------------------------------------------------- the load

async function main() {
  const seconds = Number(opts.seconds)
  const clientCount = Number(opts.clients)
  const keyCount = Number(opts.keys)
  const inflight = Number(opts.inflight)
  if (![seconds, clientCount, keyCount, inflight].every((n) => Number.isFinite(n) && n > 0))
    throw new Error('--seconds, --clients, --keys and --inflight take positive numbers')
  const { StateStoreClient, Hlc } = require(join(ROOT, 'dist', 'src'))

  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc')
  const selfMemory = () => {
    gc()
    gc()
    const m = process.memoryUsage()
    return { rss: m.rss, heapUsed: m.heapUsed, arrayBuffers: m.arrayBuffers }
  }

  // Without mosquitto installed the soak runs through the emulator's embedded broker (the log line says which).
  const mosquitto = opts.embedded || !mosquittoInstalled() ? null : await startMosquitto()
  const broker = mosquitto && { url: mosquitto.urls[0], stop: mosquitto.stop }
  const emulator = await startEmulatorChild(broker?.url)
  const url = broker?.url ?? emulator.url
  const log = (text) => !opts.json && process.stdout.write(`${text}\n`)
  log(
    `soak: ${clientCount} clients, ${keyCount} keys, ${inflight} requests in flight each, ${seconds} s, through ${broker ? `mosquitto ${url}` : `the embedded broker ${url}`}`,
  )

  const keys = Array.from({ length: keyCount }, (_, i) => `soak/${i}`)
  /**
   * key → { version: Hlc, value: string | null } of the acknowledged write with the greatest version.
   * Values are kept as strings: a small Buffer is a view into a 64 KiB slab that it keeps alive, and
   * the harness must not be what makes memory grow.
   */
  const model = new Map()
  const apply = (key, version, value) => {
    const current = model.get(key)
    if (!current || Hlc.compare(version, current.version) > 0) model.set(key, { version, value })
  }
  const counts = { GET: 0, SET: 0, 'SET NX': 0, DEL: 0, KEYNOTIFY: 0, 'KEYNOTIFY STOP': 0, notifications: 0 }
  const errors = []
  // Latency histogram in 0.1 ms buckets up to 10 s: memory that does not grow with the run.
  const histogram = new Uint32Array(100_001)
  let totalOps = 0

  const clients = []
  for (let i = 0; i < clientCount; i++) {
    const c = new StateStoreClient({ brokerUrl: url, clientId: `soak-${process.pid}-${i}`, requestTimeoutMs: 10_000 })
    clients.push(c)
  }
  await Promise.all(clients.map((c) => c.ready({ timeoutMs: 10_000 })))

  /** Per client: key → { observation, last notification } */
  const watches = clients.map(() => new Map())
  const watch = async (ci, key) => {
    const entry = { observation: null, last: null }
    watches[ci].set(key, entry)
    entry.observation = clients[ci].observe(key, (n) => {
      counts.notifications += 1
      entry.last = { operation: n.operation, value: n.value?.toString() ?? null, version: n.version }
    })
    await entry.observation
    counts.KEYNOTIFY += 1
  }
  const unwatch = async (ci, key) => {
    const entry = watches[ci].get(key)
    watches[ci].delete(key)
    // Another worker of this client may still be waiting for the KEYNOTIFY answer.
    await (await entry.observation).close()
    counts['KEYNOTIFY STOP'] += 1
  }
  for (let ci = 0; ci < clientCount; ci++)
    for (let j = 0; j < 4; j++) await watch(ci, keys[(ci * 7 + j * 61) % keyCount])

  const baseline = { emulator: await emulator.sample(), self: selfMemory() }

  let seq = 0
  const pick = (list) => list[Math.floor(Math.random() * list.length)]
  async function operation(ci) {
    const c = clients[ci]
    const key = pick(keys)
    const r = Math.random()
    const started = performance.now()
    if (r < 0.4) {
      await c.get(key)
      counts.GET += 1
    } else if (r < 0.75) {
      const value = `${ci}:${++seq}:${'x'.repeat(Math.floor(Math.random() * 200))}`
      const result = await c.set(key, value)
      apply(key, result.version, value)
      counts.SET += 1
    } else if (r < 0.85) {
      const value = `${ci}:${++seq}:nx`
      const result = await c.set(key, value, { condition: 'NX' })
      if (result.applied) apply(key, result.version, value)
      counts['SET NX'] += 1
    } else if (r < 0.98) {
      const result = await c.del(key)
      if (result.deleted === 1) apply(key, result.version, null)
      counts.DEL += 1
    } else {
      // Move one watch to another key: KEYNOTIFY STOP, then KEYNOTIFY.
      const watched = [...watches[ci].keys()]
      const next =
        keys.find((k) => !watches[ci].has(k) && Math.random() < 0.05) ?? keys.find((k) => !watches[ci].has(k))
      if (watched.length > 0) await unwatch(ci, pick(watched))
      if (next) await watch(ci, next)
    }
    histogram[Math.min(histogram.length - 1, Math.round((performance.now() - started) * 10))] += 1
    totalOps += 1
  }

  const deadline = Date.now() + seconds * 1000
  const workers = clients.flatMap((_, ci) =>
    Array.from({ length: inflight }, async () => {
      while (Date.now() < deadline) {
        try {
          await operation(ci)
        } catch (err) {
          errors.push(`${err.name}: ${err.message}`)
        }
      }
    }),
  )

  // Memory: after a warm-up of a sixth of the run (at most 10 s), then every few seconds.
  const samples = []
  const warmupMs = Math.min(10_000, (seconds * 1000) / 6)
  const sampler = (async () => {
    await sleep(warmupMs)
    while (Date.now() < deadline) {
      samples.push({
        t: Math.round((Date.now() - (deadline - seconds * 1000)) / 1000),
        emulator: await emulator.sample(),
        self: selfMemory(),
        ops: totalOps,
      })
      const s = samples.at(-1)
      log(
        `  ${s.t}s  ops ${s.ops}  errors ${errors.length}  emulator: rss ${MB(s.emulator.rss)} MB, heap ${MB(s.emulator.heapUsed)} MB, buffers ${MB(s.emulator.arrayBuffers)} MB  clients: rss ${MB(s.self.rss)} MB, heap ${MB(s.self.heapUsed)} MB, buffers ${MB(s.self.arrayBuffers)} MB`,
      )
      await sleep(Math.max(2000, (seconds * 1000) / 12))
    }
  })()
  await Promise.all(workers)
  await sampler

  // Let the last notifications arrive, then compare everything with the model.
  await sleep(1000)
  const mismatches = []
  for (const key of keys) {
    const expected = model.get(key)
    const got = await clients[0].get(key)
    const want = expected?.value ?? null
    if ((got.value?.toString() ?? null) !== want)
      mismatches.push(`${key}: store has ${got.value?.toString() ?? 'nothing'}, model ${want ?? 'nothing'}`)
    else if (want !== null && !got.version?.equals(expected.version))
      mismatches.push(`${key}: version ${got.version} in the store, ${expected.version} acknowledged`)
  }
  const watchMismatches = []
  let watchChecked = 0
  for (const [ci, map] of watches.entries()) {
    for (const [key, entry] of map) {
      if (!entry.last) continue
      watchChecked += 1
      const expected = model.get(key)
      const exists = expected?.value != null
      const n = entry.last
      const ok = exists
        ? n.operation === 'SET' && n.value === expected.value && n.version?.equals(expected.version)
        : n.operation === 'DELETE'
      if (!ok)
        watchMismatches.push(
          `client ${ci} ${key}: last notification ${n.operation} ${n.version}, final ${exists ? `SET ${expected.version}` : 'absent'}`,
        )
    }
  }
  const finalEmulator = await emulator.sample()
  const modelKeys = [...model.values()].filter((e) => e.value !== null).length

  // The emulator keeps each answer for its request's Message Expiry (10 s here) to answer re-sends;
  // a new request evicts what has expired. After that, what is left is the store and any leak.
  await sleep(11_000)
  await clients[0].get(keys[0])
  const settled = { emulator: await emulator.sample(), self: selfMemory() }

  await Promise.all(clients.map((c) => c.close()))
  await emulator.stop()
  await broker?.stop()

  const first = samples[0]
  const last = samples.at(-1) ?? first
  const q = (p) => {
    let seen = 0
    for (let i = 0; i < histogram.length; i++) {
      seen += histogram[i]
      if (seen > 0 && seen >= p * totalOps) return i / 10
    }
    return NaN
  }
  const result = {
    seconds,
    clients: clientCount,
    keys: keyCount,
    broker: broker ? 'mosquitto' : 'embedded',
    node: process.version,
    operations: totalOps,
    opsPerSecond: Math.round(totalOps / seconds),
    counts,
    latencyMs: { p50: q(0.5), p99: q(0.99), max: q(1) },
    errors: errors.length,
    firstErrors: errors.slice(0, 5),
    finalState: {
      keysInStore: finalEmulator.keys,
      keysInModel: modelKeys,
      mismatches: mismatches.length,
      firstMismatches: mismatches.slice(0, 5),
    },
    watches: {
      checked: watchChecked,
      mismatches: watchMismatches.length,
      firstMismatches: watchMismatches.slice(0, 5),
    },
    memory: first
      ? {
          sampledFromSecond: first.t,
          toSecond: last.t,
          emulator: {
            rssMB: [MB(first.emulator.rss), MB(last.emulator.rss)],
            heapMB: [MB(first.emulator.heapUsed), MB(last.emulator.heapUsed)],
            heapRangeMB: [
              MB(Math.min(...samples.map((x) => x.emulator.heapUsed))),
              MB(Math.max(...samples.map((x) => x.emulator.heapUsed))),
            ],
            rssDriftMB: MB(last.emulator.rss - first.emulator.rss),
            heapDriftMB: MB(last.emulator.heapUsed - first.emulator.heapUsed),
          },
          clientsProcess: {
            rssMB: [MB(first.self.rss), MB(last.self.rss)],
            heapMB: [MB(first.self.heapUsed), MB(last.self.heapUsed)],
            rssDriftMB: MB(last.self.rss - first.self.rss),
            heapDriftMB: MB(last.self.heapUsed - first.self.heapUsed),
          },
        }
      : null,
    beforeAndAfter: {
      emulator: {
        heapMB: [MB(baseline.emulator.heapUsed), MB(settled.emulator.heapUsed)],
        buffersMB: [MB(baseline.emulator.arrayBuffers), MB(settled.emulator.arrayBuffers)],
        rssMB: [MB(baseline.emulator.rss), MB(settled.emulator.rss)],
      },
      clientsProcess: {
        heapMB: [MB(baseline.self.heapUsed), MB(settled.self.heapUsed)],
        buffersMB: [MB(baseline.self.arrayBuffers), MB(settled.self.arrayBuffers)],
        rssMB: [MB(baseline.self.rss), MB(settled.self.rss)],
      },
    },
  }
  const ok =
    errors.length === 0 && mismatches.length === 0 && watchMismatches.length === 0 && finalEmulator.keys === modelKeys
  if (opts.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
  else {
    log(
      `\n${totalOps} operations in ${seconds} s (${result.opsPerSecond}/s), latency p50 ${result.latencyMs.p50} ms p99 ${result.latencyMs.p99} ms`,
    )
    log(`  ${JSON.stringify(counts)}`)
    log(`errors: ${errors.length}${errors.length ? ` (${errors.slice(0, 3).join('; ')})` : ''}`)
    log(
      `final state: ${keyCount} keys compared with the model, ${mismatches.length} mismatches; ${finalEmulator.keys} keys in the store, ${modelKeys} in the model`,
    )
    log(
      `watches: ${watchChecked} last notifications compared with the final state, ${watchMismatches.length} mismatches`,
    )
    if (result.memory) {
      const m = result.memory
      log(
        `memory from ${m.sampledFromSecond} s to ${m.toSecond} s (after GC): emulator RSS ${m.emulator.rssMB[0]} → ${m.emulator.rssMB[1]} MB (${m.emulator.rssDriftMB >= 0 ? '+' : ''}${m.emulator.rssDriftMB}), heap ${m.emulator.heapMB[0]} → ${m.emulator.heapMB[1]} MB (${m.emulator.heapDriftMB >= 0 ? '+' : ''}${m.emulator.heapDriftMB}); clients RSS ${m.clientsProcess.rssMB[0]} → ${m.clientsProcess.rssMB[1]} MB, heap ${m.clientsProcess.heapMB[0]} → ${m.clientsProcess.heapMB[1]} MB`,
      )
    }
    const b = result.beforeAndAfter
    log(
      `before the load → after it, once the 10 s re-send window passed (after GC): emulator heap ${b.emulator.heapMB[0]} → ${b.emulator.heapMB[1]} MB, buffers ${b.emulator.buffersMB[0]} → ${b.emulator.buffersMB[1]} MB, RSS ${b.emulator.rssMB[0]} → ${b.emulator.rssMB[1]} MB; clients heap ${b.clientsProcess.heapMB[0]} → ${b.clientsProcess.heapMB[1]} MB, RSS ${b.clientsProcess.rssMB[0]} → ${b.clientsProcess.rssMB[1]} MB`,
    )
    log(ok ? 'PASS' : 'FAIL')
  }
  process.exitCode = ok ? 0 : 1
}

// ---------------------------------------------------------------- processes

/** The emulator in a child process that reports its own memory after a full GC on request. */
async function startEmulatorChild(brokerUrl) {
  const child = spawn(
    process.execPath,
    [fileURLToPath(import.meta.url), '--role', 'emulator', ...(brokerUrl ? ['--broker', brokerUrl] : [])],
    {
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  )
  process.on('exit', () => child.kill('SIGKILL'))
  const waiting = []
  let buffered = ''
  child.stdout.setEncoding('utf8')
  child.stdout.on('data', (d) => {
    buffered += d
    let i
    while ((i = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, i)
      buffered = buffered.slice(i + 1)
      waiting.shift()?.(JSON.parse(line))
    }
  })
  const next = () => new Promise((resolve) => waiting.push(resolve))
  const ready = await next()
  return {
    url: ready.url,
    sample() {
      const reply = next()
      child.stdin.write('sample\n')
      return reply
    },
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.stdin.write('stop\n')
      await exited
    },
  }
}

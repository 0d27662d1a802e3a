// The emulator's memory, measured inside the process that holds the keys (run with --expose-gc):
//   node --expose-gc bench/memory-worker.mjs store <n>     n keys straight through the Keyspace API;
//                                                          prints the memory delta as JSON
//   node --expose-gc bench/memory-worker.mjs part <p> <n>  n of one part a key is made of (map,
//                                                          record, string, buffer), alone
//   node --expose-gc bench/memory-worker.mjs serve <url>   the whole emulator (startEmulator) serving
//                                                          through a broker; answers IPC 'measure'
//                                                          with its memory after a full GC
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { ROOT } from './lib/harness.mjs'

const require = createRequire(import.meta.url)

async function settled() {
  // Twice, with a turn of the event loop between, so finalizers and weak callbacks have run.
  for (let i = 0; i < 2; i++) {
    globalThis.gc()
    await new Promise((resolve) => setImmediate(resolve))
  }
  const m = process.memoryUsage()
  return { rss: m.rss, heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers }
}

const [mode, arg] = process.argv.slice(2)
if (mode === 'store') {
  const { Keyspace } = require(join(ROOT, 'dist/src/emulator/core/keyspace'))
  const { HybridLogicalClock } = require(join(ROOT, 'dist/src/hlc'))
  const n = Number(arg)
  const store = new Keyspace({ clock: new HybridLogicalClock() })
  const value = Buffer.alloc(100, 0x76)
  // Keys and values are handed over as the service gets them: views into larger buffers (socket
  // reads), which the store copies what it keeps from. (One Buffer shared by every SET would be
  // kept as it is, once, and hide the cost of the values.)
  const before = await settled()
  for (let i = 0; i < n; i++) {
    const payload = Buffer.allocUnsafe(100)
    value.copy(payload)
    store.set(Buffer.from(`key-${String(i).padStart(12, '0')}`), payload)
  }
  const after = await settled()
  if (store.size !== n) throw new Error(`store holds ${store.size} keys, expected ${n}`)
  process.stdout.write(JSON.stringify({ before, after, keys: store.size }))
  store.close()
} else if (mode === 'part') {
  // Where a key's bytes go: n of one part the store keeps per key, alone in this process. The array
  // holding them exists before the first measurement, so only the parts are counted.
  const { HybridLogicalClock } = require(join(ROOT, 'dist/src/hlc'))
  const [, , name, nText] = process.argv.slice(1)
  const n = Number(nText)
  const clock = new HybridLogicalClock()
  const keep = new Array(n).fill(0)
  let map = null
  const before = await settled()
  // Each part in the shape src/emulator/core/keyspace.ts gives it. Key strings come from Buffers as the
  // store makes them (flat strings; a template literal of 13+ characters would be a cons string,
  // some 30 bytes more).
  if (name === 'map') {
    map = new Map()
    for (let i = 0; i < n; i++) map.set(Buffer.from(`key-${String(i).padStart(12, '0')}`).toString('latin1'), 0)
  } else {
    const value = Buffer.alloc(100, 0x76)
    const shared = { nodeId: clock.nodeId, version: null, fencingToken: null, expiresAt: 0, persisted: false }
    for (let i = 0; i < n; i++) {
      // A Slot: value, version timestamp (a ms count, so a boxed double) and counter, shared attributes.
      if (name === 'record')
        keep[i] = { data: null, timestamp: clock.tick().timestamp + i, counter: 0, attributes: shared }
      else if (name === 'string') keep[i] = Buffer.from(value).toString('latin1')
      else if (name === 'buffer') keep[i] = Buffer.allocUnsafeSlow(100)
      else throw new Error(`unknown part ${name}`)
    }
  }
  const after = await settled()
  process.stdout.write(
    JSON.stringify({
      heap: (after.heapUsed - before.heapUsed) / n,
      external: (after.external - before.external) / n,
      rss: (after.rss - before.rss) / n,
      kept: map ? map.size : keep.length,
    }),
  )
} else if (mode === 'serve') {
  const { startEmulator } = require(join(ROOT, 'dist/src/emulator'))
  const emulator = await startEmulator({ brokerUrl: arg, logLevel: 'warn' })
  process.on('message', async (m) => {
    if (m === 'measure') process.send({ memory: await settled(), keys: emulator.keyCount })
    if (m === 'stop') {
      await emulator.stop()
      process.exit(0)
    }
  })
  process.send({ ready: true })
} else {
  console.error('usage: memory-worker.mjs store <n> | serve <broker url>')
  process.exit(2)
}

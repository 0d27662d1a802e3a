// The context store (src/context), against references measured in the same run:
//  - cached synchronous get (a plain key and a nested path) vs Node-RED's memory store: ops/s,
//    interleaved in slices;
//  - set throughput, 2,000 distinct keys with a callback each, 100 outstanding, until every one has
//    landed in the emulator (its own process, through mosquitto), vs the localfilesystem store
//    (cached, as Node-RED configures it: sets into memory, then close() writes the files) and vs the
//    ss-set node (Node-RED test helper) on the same emulator, same keys and window;
//  - a write-through burst of 10,000 synchronous sets, then close(): every key counted in the
//    store afterwards with a plain client (nothing may be lost);
//  - scale: with 1,000, 10,000 and 100,000 keys under one prefix (loaded in the store's cache),
//    the cost of a set of a new key beside a set of an existing key, interleaved by round, each
//    round's new keys deleted again so the count stays put;
//  - open: a store of 100,000 keys (seeded with a plain client) opened by a second store, vs a bare
//    client's KEYNOTIFY + GET of the same keys, pipelined with the client's window, alternated by
//    round (bench/lib/context-open.mjs);
//  - keys() across runtimes: two stores on one prefix each set 100 new keys at once; for every key,
//    the time from its writer's set callback until the other runtime's keys() lists it (p50, p99).
//    `--cross` runs this part alone; `--load N` runs N busy processes beside the whole benchmark
//    (scripts/cpu-load.mjs) and the load average is printed with the figures.
import { createRequire } from 'node:module'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  ROOT,
  benchArgs,
  fmtRange,
  fmtRatio,
  interleave,
  interleaveOps,
  summarize,
  table,
  windowed,
  writeResult,
} from './lib/harness.mjs'
import { startEmulatorProcess, startMosquitto } from './lib/procs.mjs'
import { measureOpen } from './lib/context-open.mjs'
import { formatLoad, startCpuLoad } from '../scripts/cpu-load.mjs'

const require = createRequire(import.meta.url)
const { quick, rounds, argv } = benchArgs()
const SETS = quick ? 1000 : 2000
const WINDOW = 100
const BURST = 10_000
// --keys 1000,10000 to stop earlier (filling 100,000 keys through a store takes minutes; --quick stops at 10,000)
const SCALES = (argv.includes('--keys') ? argv[argv.indexOf('--keys') + 1] : quick ? '1000,10000' : '1000,10000,100000')
  .split(',')
  .map(Number)
// --open-keys N: the keys a store opens against the bare client's KEYNOTIFY + GET pairs
const OPEN_KEYS = Number(argv.includes('--open-keys') ? argv[argv.indexOf('--open-keys') + 1] : 100_000)
const OPEN_ROUNDS = quick ? 1 : 3
const SCALE_SETS = 500
const CROSS_ONLY = argv.includes('--cross')
const LOAD = Number(argv.includes('--load') ? argv[argv.indexOf('--load') + 1] : 0)
const CROSS_ROUNDS = quick ? 5 : 10
const CROSS_KEYS = 200

const contextStore = require(join(ROOT, 'dist/src/context/index.js'))
const { StateStoreClient } = require(join(ROOT, 'dist/src/client/index.js'))
const memoryStore = require('@node-red/runtime/lib/nodes/context/memory')
const localFileSystem = require('@node-red/runtime/lib/nodes/context/localfilesystem')

const broker = await startMosquitto()
const emu = await startEmulatorProcess({ brokerUrl: broker.urls[0] })
const quiet = (level, message) => level === 'error' && console.error(message)
let run = 0
const open = async (extra = {}) => {
  const store = contextStore({
    broker: broker.urls[0],
    prefix: `bench/${process.pid}/${run++}/`,
    logger: quiet,
    ...extra,
  })
  await store.open()
  return store
}
const dirs = []
const busy = startCpuLoad(LOAD)

/**
 * Two runtimes on one prefix each set CROSS_KEYS / 2 new keys at once, with a callback each; for
 * every key, how long after its writer's callback the other runtime's keys() lists it. Polled every
 * 2 ms (a key listed before its writer heard counts 0). Each round's keys are deleted again.
 */
async function crossRuntimeKeys() {
  const prefix = `bench/${process.pid}/cross/`
  const stores = [
    await open({ prefix, clientId: `bench-cross-a-${process.pid}` }),
    await open({ prefix, clientId: `bench-cross-b-${process.pid}` }),
  ]
  const lags = []
  let missing = 0
  for (let r = 0; r < CROSS_ROUNDS; r++) {
    const written = new Map() // key -> { reader, at }
    const seen = new Map()
    const keys = Array.from({ length: CROSS_KEYS }, (_, i) => `r${r}-${i}`)
    const poll = setInterval(() => {
      const now = performance.now()
      const listed = stores.map((s) => new Set(s.keys('global')))
      for (const key of keys) {
        if (seen.has(key)) continue
        const w = written.get(key)
        const reader = w ? w.reader : Number(key.split('-')[1]) % 2 === 0 ? 1 : 0
        if (listed[reader].has(key)) seen.set(key, w ? now - w.at : 0)
      }
    }, 2)
    await Promise.all(
      keys.map(
        (key, i) =>
          new Promise((resolve, reject) =>
            stores[i % 2].set('global', key, { i }, (err) => {
              if (err) return reject(err)
              written.set(key, { reader: (i + 1) % 2, at: performance.now() })
              resolve()
            }),
          ),
      ),
    )
    const deadline = performance.now() + 30_000
    while (seen.size < keys.length && performance.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 10))
    clearInterval(poll)
    for (const key of keys) {
      if (seen.has(key)) lags.push(Math.max(0, seen.get(key)))
      else missing += 1
    }
    await Promise.all(
      keys.map((key, i) => new Promise((resolve) => stores[i % 2].set('global', key, undefined, () => resolve()))),
    )
    while (stores.some((s) => s.keys('global').length > 0) && performance.now() < deadline + 30_000)
      await new Promise((resolve) => setTimeout(resolve, 10))
  }
  await Promise.all(stores.map((s) => s.close()))
  lags.sort((a, b) => a - b)
  const at = (q) => lags[Math.min(lags.length - 1, Math.floor(q * lags.length))] ?? Infinity
  return {
    samples: lags.length,
    missing,
    p50: at(0.5),
    p99: at(0.99),
    max: lags.at(-1) ?? Infinity,
    load: busy.loadAverage(),
  }
}

/** The keys of `scope` in the store's index, as any client reads it: every bucket merged, the delta applied. */
async function indexed(client, prefix, scope) {
  const { BUCKETS } = require(join(ROOT, 'dist/src/context/index-format.js'))
  const answers = await Promise.all(
    Array.from({ length: BUCKETS }, (_, i) => client.get(`${prefix}#keys/${i.toString(16).padStart(2, '0')}`)),
  )
  const keys = new Set(answers.flatMap((a) => (a.value === null ? [] : (JSON.parse(a.value.toString())[scope] ?? []))))
  const delta = (await client.get(`${prefix}#keys/delta`)).value
  for (const [top, exists] of Object.entries(delta === null ? {} : (JSON.parse(delta.toString())[scope] ?? {}))) {
    if (exists) keys.add(top)
    else keys.delete(top)
  }
  return [...keys]
}

try {
  // ---- keys() across runtimes ----
  const cross = await crossRuntimeKeys()
  const crossSeen = await (CROSS_ONLY ? busy.stop() : Promise.resolve(null))
  const crossLoad = crossSeen ? formatLoad(crossSeen) : `load ${cross.load.toFixed(2)}`
  const crossTable = table(
    `keys() across runtimes: ${CROSS_ROUNDS} rounds of ${CROSS_KEYS} new keys set at once, half in each of two runtimes (${busy.count} busy processes, ${crossLoad})`,
    ['samples', 'not listed within 30 s', 'p50', 'p99', 'max'],
    [
      [
        String(cross.samples),
        String(cross.missing),
        `${cross.p50.toFixed(0)} ms`,
        `${cross.p99.toFixed(0)} ms`,
        `${cross.max.toFixed(0)} ms`,
      ],
    ],
  )
  const crossHeadline = {
    metric: `context: a key set in one runtime is in the other's keys() (p99, ${busy.count} busy processes, ${crossLoad})`,
    value: `${cross.p99.toFixed(0)} ms`,
    target: '<= 1000 ms',
    pass: cross.p99 <= 1000 && cross.missing === 0,
  }
  if (CROSS_ONLY) {
    writeResult('context-cross', { tables: [crossTable], headline: [crossHeadline], data: { cross, load: crossSeen } })
  } else {
    // ---- cached sync get ----
    const ours = await open()
    const memory = memoryStore({})
    const value = { a: { b: [1, 2, 3] }, text: 'x'.repeat(64) }
    for (const s of [ours, memory]) {
      for (let i = 0; i < 100; i++) s.set('global', `key${i}`, { ...value, i })
    }
    let k = 0
    const gets = await interleaveOps({
      fns: {
        memory: () => memory.get('global', `key${k++ % 100}`),
        statestore: () => ours.get('global', `key${k++ % 100}`),
        'memory nested': () => memory.get('global', `key${k++ % 100}.a.b[1]`),
        'statestore nested': () => ours.get('global', `key${k++ % 100}.a.b[1]`),
      },
      reference: 'memory',
      rounds,
    })
    await ours.close()
    const getRows = [
      ['memory store, plain key (reference)', fmtRange(gets.memory.value, 0, ' ops/s'), '1.00x'],
      [
        'state store context, plain key',
        fmtRange(gets.statestore.value, 0, ' ops/s'),
        fmtRatio(gets.statestore.value.ratio),
      ],
      [
        'memory store, nested path',
        fmtRange(gets['memory nested'].value, 0, ' ops/s'),
        fmtRatio(gets['memory nested'].value.ratio),
      ],
      [
        'state store context, nested path',
        fmtRange(gets['statestore nested'].value, 0, ' ops/s'),
        fmtRatio(gets['statestore nested'].value.ratio),
      ],
    ]
    const nestedRatio = gets['statestore nested'].value.median / gets['memory nested'].value.median

    // ---- set throughput ----
    const helper = require('node-red-node-test-helper')
    helper.init(require.resolve('node-red'))
    const configNode = require(join(ROOT, 'dist/nodes/ss-config.js'))
    const setNode = require(join(ROOT, 'dist/nodes/ss-set.js'))
    await helper.load(
      [configNode, setNode],
      [
        { id: 'tab', type: 'tab' },
        {
          id: 'cfg',
          type: 'ss-config',
          broker: broker.urls[0],
          clientId: 'bench-context-ss-set',
          requestTimeout: '10000',
          maxInFlight: '1000',
        },
        {
          id: 'set',
          type: 'ss-set',
          z: 'tab',
          store: 'cfg',
          key: 'topic',
          keyType: 'msg',
          value: 'payload',
          valueType: 'msg',
          condition: 'always',
          persist: true,
          overrides: true,
          wires: [['out']],
        },
        { id: 'out', type: 'helper', z: 'tab' },
      ],
    )
    const setNodeInstance = helper.getNode('set')
    const out = helper.getNode('out')
    let onOut = null
    out.on('input', () => onOut?.())
    await new Promise((r) => setTimeout(r, 1000)) // the config node connects

    const sets = await interleave({
      variants: ['localfilesystem', 'statestore', 'statestore rewrite', 'ss-set'],
      reference: 'ss-set',
      rounds,
      warmup: 1,
      measure: async (v, r) => {
        const payload = (i) => ({ i, text: 'x'.repeat(64) })
        if (v === 'statestore' || v === 'statestore rewrite') {
          const store = await open()
          // a rewrite finds the keys known (observed, indexed): only the SET and its notification remain
          if (v === 'statestore rewrite')
            await windowed(SETS, WINDOW, (i, done) => store.set(`f${r}`, `k${i}`, payload(-i), done))
          const rate = await windowed(SETS, WINDOW, (i, done) => store.set(`f${r}`, `k${i}`, payload(i), done))
          await store.close()
          return rate
        }
        if (v === 'localfilesystem') {
          const dir = mkdtempSync(join(tmpdir(), 'bench-lfs-'))
          dirs.push(dir)
          const store = localFileSystem({ dir, base: 'context', settings: { userDir: dir } })
          await store.open()
          const started = performance.now()
          await windowed(SETS, WINDOW, (i, done) => store.set(`f${r}`, `k${i}`, payload(i), done))
          await store.close() // writes the files: durable from here
          return (SETS / (performance.now() - started)) * 1000
        }
        // ss-set: one msg per key, the next sent when one comes out
        // which msg came out does not matter, only how many: each output completes one outstanding send
        const outstanding = []
        onOut = () => outstanding.shift()?.()
        return windowed(SETS, WINDOW, (i, done) => {
          outstanding.push(done)
          setNodeInstance.receive({ topic: `bench/ss-set/${r}/k${i}`, payload: payload(i) })
        })
      },
    })
    await helper.unload()
    const vsLfs = (v) => `${(sets[v].value.median / sets.localfilesystem.value.median).toFixed(3)}x`
    const setRows = [
      [
        'ss-set node, same emulator (reference)',
        fmtRange(sets['ss-set'].value, 0, ' msgs/s'),
        '1.00x',
        vsLfs('ss-set'),
      ],
      [
        'state store context, new keys (KEYNOTIFY + SET + index)',
        fmtRange(sets.statestore.value, 0, ' sets/s'),
        fmtRatio(sets.statestore.value.ratio),
        vsLfs('statestore'),
      ],
      [
        'state store context, existing keys (SET)',
        fmtRange(sets['statestore rewrite'].value, 0, ' sets/s'),
        fmtRatio(sets['statestore rewrite'].value.ratio),
        vsLfs('statestore rewrite'),
      ],
      [
        'localfilesystem (cached; close() writes the files)',
        fmtRange(sets.localfilesystem.value, 0, ' sets/s'),
        fmtRatio(sets.localfilesystem.value.ratio),
        '1.00x',
      ],
    ]

    // ---- write-through burst ----
    const burstPrefix = `bench/${process.pid}/burst/`
    const burstStore = contextStore({ broker: broker.urls[0], prefix: burstPrefix, logger: quiet })
    await burstStore.open()
    const started = performance.now()
    for (let i = 0; i < BURST; i++) burstStore.set('global', `b${i}`, i)
    await burstStore.close()
    const burstMs = performance.now() - started
    const reader = new StateStoreClient({ brokerUrl: broker.urls[0], clientId: `bench-context-reader-${process.pid}` })
    let found = 0
    let wrong = 0
    for (let from = 0; from < BURST; from += 500) {
      const answers = await Promise.all(
        Array.from({ length: Math.min(500, BURST - from) }, (_, j) => reader.get(`${burstPrefix}global/b${from + j}`)),
      )
      answers.forEach((a, j) => {
        if (a.value === null) return
        found += 1
        if (a.value.toString() !== String(from + j)) wrong += 1
      })
    }
    const index = { global: await indexed(reader, burstPrefix, 'global') }
    await reader.close()
    const burstRows = [
      [
        `${BURST} synchronous sets, then close()`,
        `${burstMs.toFixed(0)} ms (${((BURST / burstMs) * 1000).toFixed(0)} sets/s)`,
        `${found} found, ${wrong} wrong, ${index.global?.length ?? 0} in the index`,
      ],
    ]

    // ---- scale: new key vs existing key at 1,000 / 10,000 / 100,000 keys ----
    // One runtime holds the keys (a second one on the prefix would load every new key too, measuring
    // two runtimes); it grows the key count between levels. Opening a store at each level is timed
    // with a second store, opened and closed before the measuring starts.
    const scalePrefix = `bench/${process.pid}/scale/`
    const store = await open({ prefix: scalePrefix, clientId: `bench-scale-${process.pid}` })
    const scaleRows = []
    const scale = {}
    let held = 0
    for (const n of SCALES) {
      await windowed(n - held, 200, (i, done) =>
        store.set(`f${(held + i) % 10}`, `k${held + i}`, { i: held + i }, done),
      )
      held = n
      const openStarted = performance.now()
      const opened = await open({ prefix: scalePrefix, clientId: `bench-scale-open-${n}-${process.pid}` })
      const openMs = performance.now() - openStarted
      await opened.close()
      // The floor: what the protocol makes any cached new key cost, with no index and no context
      // store on the path: a bare client's KEYNOTIFY then SET of a fresh key, on the same broker.
      const floorClient = new StateStoreClient({
        brokerUrl: broker.urls[0],
        clientId: `bench-floor-${n}-${process.pid}`,
      })
      await floorClient.ready({ timeoutMs: 10_000 })
      const result = await interleave({
        variants: ['existing', 'new', 'floor'],
        reference: 'existing',
        rounds,
        warmup: 1,
        measure: async (v, r) => {
          if (v === 'existing')
            return windowed(SCALE_SETS, WINDOW, (i, done) => store.set(`f${i % 10}`, `k${i}`, { i, r }, done))
          if (v === 'floor') {
            return windowed(SCALE_SETS, WINDOW, (i, done) =>
              floorClient
                .observe(`bench/${process.pid}/floor/${n}-${r}-${i}`, () => {})
                .then(() => floorClient.set(`bench/${process.pid}/floor/${n}-${r}-${i}`, JSON.stringify({ i })))
                .then(() => done(), done),
            )
          }
          // names never used before at any level: a new key is registered for notifications too
          const rate = await windowed(SCALE_SETS, WINDOW, (i, done) =>
            store.set(`f${i % 10}`, `new${n}-${r}-${i}`, { i }, done),
          )
          await windowed(SCALE_SETS, WINDOW, (i, done) => store.set(`f${i % 10}`, `new${n}-${r}-${i}`, undefined, done))
          return rate
        },
      })
      await floorClient.close()
      // cost = 1 / rate: how many existing-key sets one new-key set costs
      const cost = {
        median: 1 / result.new.value.ratio.median,
        min: 1 / result.new.value.ratio.max,
        max: 1 / result.new.value.ratio.min,
      }
      const floor = {
        median: 1 / result.floor.value.ratio.median,
        min: 1 / result.floor.value.ratio.max,
        max: 1 / result.floor.value.ratio.min,
      }
      // paired by round: what the context store adds to the floor (the index, the cache)
      const overFloor = summarize(result.floor.value.samples.map((f, i) => f / result.new.value.samples[i]))
      scale[n] = { openMs, result, cost, floor, overFloor }
      scaleRows.push([
        n.toLocaleString('en'),
        fmtRange(result.existing.value, 0, ' sets/s'),
        fmtRange(result.new.value, 0, ' sets/s'),
        `${cost.median.toFixed(2)}x (${cost.min.toFixed(2)}–${cost.max.toFixed(2)})`,
        `${floor.median.toFixed(2)}x (${floor.min.toFixed(2)}–${floor.max.toFixed(2)})`,
        `${overFloor.median.toFixed(2)}x (${overFloor.min.toFixed(2)}–${overFloor.max.toFixed(2)})`,
        `${(openMs / 1000).toFixed(1)} s`,
      ])
    }
    await store.close()

    // ---- open: the store's load vs the bare client's KEYNOTIFY + GET pairs ----
    // Last: in a process that has just handled 100,000 keys, the cached get above measured 0.78x
    // instead of 0.93x (its property reads had seen the big store's objects; the memory store's had not).
    const opening = await measureOpen({
      StateStoreClient,
      contextStore,
      brokerUrl: broker.urls[0],
      count: OPEN_KEYS,
      rounds: OPEN_ROUNDS,
      logger: quiet,
    })
    const openRows = [
      [
        `bare client: KEYNOTIFY + GET of every key and index key, 1,000 outstanding (reference)`,
        `${opening.bare.median.toFixed(1)} s (${opening.bare.min.toFixed(1)}–${opening.bare.max.toFixed(1)})`,
        '1.00x',
      ],
      [
        `context store open(): the index, then every key`,
        `${opening.store.median.toFixed(1)} s (${opening.store.min.toFixed(1)}–${opening.store.max.toFixed(1)})`,
        fmtRatio(opening.ratio),
      ],
    ]

    const tables = [
      table(
        `open: ${OPEN_KEYS.toLocaleString('en')} keys, ${OPEN_ROUNDS} rounds alternated, load ${opening.load.map((l) => l.toFixed(2)).join(' ')} after`,
        ['variant', 'time', 'vs bare'],
        openRows,
      ),
      table(
        'cached synchronous get vs the memory store (interleaved slices)',
        ['variant', 'ops/s', 'vs memory'],
        getRows,
      ),
      table(
        `set throughput, ${SETS} keys, ${WINDOW} outstanding, until acknowledged (localfilesystem: until written)`,
        ['variant', 'rate', 'vs ss-set', 'vs localfilesystem'],
        setRows,
      ),
      table('write-through burst', ['what', 'time', 'in the store afterwards'], burstRows),
      table(
        `scale: ${SCALE_SETS} sets with a callback, ${WINDOW} outstanding, at each number of keys under one prefix`,
        [
          'keys',
          'existing key',
          'new key',
          'a new key costs',
          'floor: KEYNOTIFY + SET, bare client',
          'new key / floor',
          'open (load every key)',
        ],
        scaleRows,
      ),
    ]
    const headline = [
      {
        metric: 'context: cached sync get vs memory store (plain key)',
        value: `${gets.statestore.value.ratio.median.toFixed(2)}x`,
        target: '>= 0.9x',
        pass: gets.statestore.value.ratio.median >= 0.9,
      },
      {
        metric: 'context: cached sync get vs memory store (nested path)',
        value: `${nestedRatio.toFixed(2)}x`,
        target: '>= 0.9x',
        pass: nestedRatio >= 0.9,
      },
      {
        metric: `context: ${BURST} write-through sets, none lost`,
        value: `${found}/${BURST}`,
        target: `${BURST}`,
        pass: found === BURST && wrong === 0 && (index.global?.length ?? 0) === BURST,
      },
    ]
    headline.push({
      metric: `context: open ${OPEN_KEYS.toLocaleString('en')} keys vs a bare client's KEYNOTIFY + GET pairs (load ${opening.load[0].toFixed(2)})`,
      value: `${opening.ratio.median.toFixed(2)}x (${opening.store.median.toFixed(1)} s vs ${opening.bare.median.toFixed(1)} s)`,
      target: '<= 3x',
      pass: opening.ratio.median <= 3,
    })
    for (const n of SCALES) {
      // A new key needs a KEYNOTIFY before its SET (the cache must hear of others' changes): that floor
      // alone costs about 2x an existing key's SET, so the index is judged against the floor.
      headline.push({
        metric: `context: a new-key set vs an existing-key set at ${n.toLocaleString('en')} keys`,
        value: `${scale[n].cost.median.toFixed(2)}x`,
        target: `report (floor ${scale[n].floor.median.toFixed(2)}x)`,
        pass: true,
      })
      headline.push({
        metric: `context: a new-key set vs the floor (KEYNOTIFY + SET, bare client) at ${n.toLocaleString('en')} keys`,
        value: `${scale[n].overFloor.median.toFixed(2)}x`,
        target: '<= 1.5x',
        pass: scale[n].overFloor.median <= 1.5,
      })
    }
    tables.push(crossTable)
    headline.push(crossHeadline)
    const seen = await busy.stop()
    writeResult('context', {
      tables,
      headline,
      data: {
        opening,
        gets,
        sets,
        burst: { ms: burstMs, found, wrong, indexed: index.global?.length ?? 0 },
        scale,
        cross,
        load: seen,
      },
    })
    console.log(`context: ${busy.count} busy processes beside it, ${formatLoad(seen)}`)
    if (found !== BURST || wrong !== 0) process.exitCode = 1
  }
} finally {
  await busy.stop()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
  await emu.stop()
  await broker.stop()
}

import assert from 'node:assert/strict'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { tmpdir } from 'node:os'
import { StateStoreClient } from '../../../src/client'
import { startEmulator } from '../../../src/emulator'
import { ALL, helper, lastStatus, listen, nextMessage, noMessage, redModule, useStore, withClient } from './support'
import { until } from '../../support/wait'
import { firesByItself } from '../../../dev/flows'

const CORE = [
  redModule('@node-red/nodes/core/common/20-inject.js'),
  redModule('@node-red/nodes/core/common/90-comment.js'),
  redModule('@node-red/nodes/core/function/10-function.js'),
  redModule('@node-red/nodes/core/function/15-change.js'),
  redModule('@node-red/nodes/core/function/89-delay.js'),
]

type FlowNode = Record<string, unknown> & { id: string; type: string; name?: string }
const dir = join(__dirname, '..', '..', '..', 'examples')
const ALLOWED = new Set([
  'tab',
  'comment',
  'inject',
  'debug',
  'function',
  'change',
  'delay',
  'catch',
  'ss-config',
  'ss-get',
  'ss-set',
  'ss-del',
  'ss-lock',
  'ss-update',
  'ss-watch',
])

function load(name: string): FlowNode[] {
  return JSON.parse(readFileSync(join(dir, `${name}.json`), 'utf8')) as FlowNode[]
}

/** The example as shipped, pointed at the test broker, with each debug node replaced by a helper sink of the same id. */
function runnable(nodes: FlowNode[], url: string): FlowNode[] {
  return nodes.map((n) => {
    if (n.type === 'ss-config') return { ...n, broker: url }
    if (n.type === 'debug') return { id: n.id, type: 'helper', z: n.z, name: n.name, x: n.x, y: n.y, wires: [] }
    return n
  })
}

let nodes: FlowNode[] = []
const byName = (type: string, name: string) => {
  const found = nodes.find((n) => n.type === type && n.name === name)
  assert.ok(found, `no ${type} named "${name}"`)
  return helper.getNode(found.id)
}
const debug = (name: string) => byName('helper', name)
const press = (name: string) => byName('inject', name).receive({})
/** The property the debug node shows (its `complete` setting). */
async function shows(name: string, ms = 5000): Promise<unknown> {
  const example = nodes.find((n) => n.type === 'helper' && n.name === name)!
  const shown = exampleDebug.get(example.id)
  const msg = await nextMessage(debug(name), ms)
  return shown === 'true' ? msg : msg[shown ?? 'payload']
}
const exampleDebug = new Map<string, string>()
/** `count` pressed n times at once: every press counts once, `from` up to `from + n - 1`. */
async function pressedAtOnce(n: number, next: () => Promise<unknown>, from: number): Promise<void> {
  for (let i = 0; i < n; i++) press('count')
  const seen: number[] = []
  for (let i = 0; i < n; i++) seen.push(Number(await next()))
  assert.deepEqual(
    seen.sort((a, b) => a - b),
    Array.from({ length: n }, (_, i) => from + i),
  )
}
/** The test store's URL while an example runs: the scenarios where another client plays AIO's producer write through it. */
let storeUrl = ''

/** A client of the test store, as the producer the example follows (a connector, a Dapr app). */
function producer<T>(work: (c: StateStoreClient) => Promise<T>, url = storeUrl): Promise<T> {
  return withClient(url, work, 'example-producer')
}

/** The samples debug `latest sample` shows until it shows `last`: the rate limit lets few through. */
async function samplesUntil(last: number): Promise<number[]> {
  const seen: number[] = []
  while (seen.at(-1) !== last) seen.push(((await shows('latest sample')) as { sample: number }).sample)
  return seen
}

const scenarios: Record<string, () => Promise<void>> = {
  'counter-with-versions': async () => {
    const first = (await shows('counter')) as Record<string, unknown>
    assert.deepEqual(
      { payload: first.payload, applied: first.applied, released: first.released },
      { payload: 1, applied: true, released: true },
    )
    assert.match(String(first.version), /^\d{15}:\d{5}:/)
    press('count')
    const second = (await shows('counter')) as Record<string, unknown>
    assert.equal(second.payload, 2)
    assert.ok(String(second.version) > String(first.version), 'versions increase')
    await pressedAtOnce(20, async () => ((await shows('counter')) as Record<string, unknown>).payload, 3)
    press('reset')
    assert.equal(await shows('reset'), 1)
  },
  'counter-update-key': async () => {
    assert.equal(await shows('counter'), 1)
    press('count')
    assert.equal(await shows('counter'), 2)
    await pressedAtOnce(20, () => shows('counter'), 3)
  },
  'conditional-set': async () => {
    assert.equal(await shows('NX as A'), true)
    assert.equal(await shows('NX as B'), false)
    assert.equal(await shows('NEX as A'), true)
    assert.equal(await shows('NEX as B'), false)
  },
  'expiring-keys': async () => {
    assert.equal(await shows('stored'), true)
    assert.equal(await shows('right away'), true)
    assert.equal(await shows('after expiry', 6000), false)
    press('store for 500 ms')
    assert.equal(((await shows('stored briefly')) as { expiry: number }).expiry, 500)
  },
  'active-standby-lease': async () => {
    assert.equal(await shows('A active'), true)
    assert.equal(await shows('B standby'), 'A')
    press('A steps down')
    assert.equal(await shows('A released'), true)
    press('B tries again')
    assert.equal(await shows('B active'), true)
    press('late write from A')
    const error = (await shows('refused write')) as { code: string }
    assert.equal(error.code, 'FencingTokenLowerVersion')
    await noMessage(debug('late write applied'), 100)
  },
  'leader-election': async () => {
    assert.equal(await shows('leader'), 'one leads')
    await noMessage(debug('leader'), 1800)
    press('who leads?')
    assert.equal(await shows('current leader'), 'one')
    press('one resigns')
    assert.equal(await shows('leadership lost'), 'one stepped down (resigned)')
    assert.equal(await shows('leader'), 'two leads')
  },
  // The helper runtime has no "statestore" context store: Node-RED falls back to its default store,
  // which is what a user who imports the example without configuring the store gets.
  'context-store-counter': async () => {
    assert.equal(await shows('counter (A)'), 1)
    press('count in B')
    assert.equal(await shows('counter (B)'), 2)
    press('count in A')
    assert.equal(await shows('counter (A)'), 3)
    press('show')
    assert.equal(await shows('shown'), 3)
  },
  'dataflow-dataset': async () => {
    assert.equal(await shows('stored'), true)
    const records = [
      { asset: 'thermostat-1', site: 'Line 1', maxTemperature: 24.5 },
      { asset: 'thermostat-2', site: 'Line 2', maxTemperature: 22 },
      { asset: 'thermostat-3', site: 'Line 2', maxTemperature: 23 },
    ]
    assert.deepEqual(await shows('dataset'), records)
    press('look up thermostat-2')
    assert.deepEqual(await shows('first match'), records[1])
  },
  'connector-dataset-watch': async () => {
    await until(
      () => String(lastStatus(byName('ss-watch', '')).text).endsWith('watching 1'),
      'watching the dataset key',
    )
    // The emulator's client plays the connector: a write of the dataset key on every sample.
    await producer(async (c) => {
      for (let i = 1; i <= 20; i++)
        await c.set('examples/connector/thermostat-1', JSON.stringify({ sample: i, temperature: 20 + i / 10 }))
    })
    const seen = await samplesUntil(20)
    assert.ok(seen.length <= 3, `the rate limit lets the latest through, not every sample: ${seen.join(', ')}`)
    assert.deepEqual(
      [...seen].sort((a, b) => a - b),
      seen,
      'in order',
    )
    // The example's own simulated connector does the same.
    press('simulate 20 samples')
    const again = await samplesUntil(20)
    assert.ok(again.length <= 3, `again: ${again.join(', ')}`)
  },
  'dapr-app-keys': async () => {
    // The Dapr app, as its state store component writes: <app id>||<key>, JSON values.
    await producer(async (c) => {
      await c.set('examples/order-processor||order-1', JSON.stringify({ item: 'bolts', quantity: 3 }))
      await c.set('examples/order-processor||order-2', JSON.stringify({ item: 'nuts', quantity: 12 }))
      await c.set('examples/other-app||order-1', JSON.stringify({ item: 'not this app' }))
    })
    press('read order-1')
    assert.deepEqual(await shows('order'), { item: 'bolts', quantity: 3 })
    press("all of the app's state")
    // Made in the Function node's sandbox: an object of another realm, compared as JSON.
    assert.deepEqual(JSON.parse(JSON.stringify(await shows('app state'))), {
      'order-1': { item: 'bolts', quantity: 3 },
      'order-2': { item: 'nuts', quantity: 12 },
    })
    press('simulate the Dapr app')
    assert.deepEqual(await shows('written'), {
      'examples/order-processor||order-1': true,
      'examples/order-processor||order-2': true,
    })
  },
  'wasm-enrichment-keys': async () => {
    const statestoreJson = String(nodes.find((n) => n.type === 'inject' && n.name === 'load statestore.json')!.payload)
    const keys = (JSON.parse(statestoreJson) as Array<Record<string, unknown>>).flatMap((entry) => Object.keys(entry))
    assert.deepEqual(await shows('seeded'), Object.fromEntries(keys.map((k) => [k, true])))
    press('read the keys')
    assert.deepEqual(await shows('enrichment'), {
      'examples/wasm/factoryId': 'factoryA',
      'examples/wasm/lineId': 'line-3',
      'examples/wasm/limits': { maxTemperature: 24.5, maxSpeed: 12 },
    })
    // The flow writes what the development environment's seed gives: byte for byte.
    const dir = mkdtempSync(join(tmpdir(), 'aio-wasm-seed-'))
    writeFileSync(join(dir, 'statestore.json'), statestoreJson)
    const seeded = await startEmulator({
      listen: { host: '127.0.0.1', port: 0 },
      logLevel: 'error',
      seedFile: join(dir, 'statestore.json'),
    })
    try {
      const fromSeed = await producer(
        async (c) => Promise.all(keys.map(async (k) => (await c.get(k)).value)),
        seeded.brokerUrl,
      )
      const fromFlow = await producer(async (c) => Promise.all(keys.map(async (k) => (await c.get(k)).value)))
      assert.deepEqual(fromFlow, fromSeed)
    } finally {
      await seeded.stop()
      rmSync(dir, { recursive: true, force: true })
    }
    press('new line')
    assert.equal(await shows('line changed'), true)
  },
  'leader-gated-tick': async () => {
    const gate = byName('ss-lock', 'one replica leads')
    const log: Array<{ at: string; holder: unknown }> = []
    for (const name of ['tick ran', 'skipped'])
      debug(name).on('input', (msg: { holder: unknown }) => log.push({ at: name, holder: msg.holder }))
    // A tick before the gate is elected leaves by "skipped"; each press is one tick, one way or the other.
    while (!log.some((e) => e.at === 'tick ran')) {
      const before = log.length
      press('every 5 s')
      await until(() => log.length > before, 'the tick left the gate')
    }
    // From then on each tick (a press, or the inject's own interval) runs here, the only candidate;
    // debug "tick ran" shows the gate's holder name, <client id>/<node id>.
    const from = log.length
    for (let i = 0; i < 3; i++) press('every 5 s')
    await until(() => log.length >= from + 3, 'three more ticks')
    for (const e of log.slice(from)) {
      assert.equal(e.at, 'tick ran')
      assert.match(String(e.holder), new RegExp(`/${gate.id}$`))
    }
  },
  'run-once-job': async () => {
    const day = new Date().toISOString().slice(0, 10)
    press('every day at 06:00')
    assert.equal(await shows('report written'), `report of ${day} written`)
    const claim = byName('ss-lock', "claim today's report")
    // Pressed again (here, or in another replica): the day's claim is done, the msg a duplicate.
    press('every day at 06:00')
    assert.match(String(await shows('already done')), new RegExp(`/${claim.id}$`))
    // Two at once: one claim, no second report.
    press('every day at 06:00')
    press('every day at 06:00')
    await shows('already done')
    await shows('already done')
    await noMessage(debug('report written'), 100)
    await noMessage(debug('claim ran out'), 0)
  },
  'semaphore-api-calls': async () => {
    // The order the two debug nodes see msgs in: calls in progress never exceed the two slots.
    const log: Array<{ at: 'calling' | 'call done'; payload: string }> = []
    for (const name of ['calling', 'call done'] as const)
      debug(name).on('input', (msg: { payload: unknown }) => log.push({ at: name, payload: String(msg.payload) }))
    press('5 calls')
    await until(() => log.filter((e) => e.at === 'call done').length === 5, 'five calls done')
    let inCall = 0
    let most = 0
    for (const e of log) {
      inCall += e.at === 'calling' ? 1 : -1
      most = Math.max(most, inCall)
    }
    assert.equal(most, 2, `two calls at once, never more: ${JSON.stringify(log)}`)
    const calls = log.filter((e) => e.at === 'calling').map((e) => e.payload)
    assert.deepEqual(
      calls.map((c) => c.replace(/ in slot \d$/, '')).sort(),
      [1, 2, 3, 4, 5].map((n) => `call ${n}`),
    )
    for (const c of calls) assert.match(c, / in slot [01]$/)
    await noMessage(debug('no slot'), 0)
  },
  'thermostat-watch': async () => {
    assert.equal(await shows('set-point'), 21.5)
    press('set 19')
    assert.equal(await shows('set-point'), 19)
    press('watch the mode too')
    await until(() => String(lastStatus(byName('ss-watch', '')).text).endsWith('watching 2'), 'watching the mode')
    press('set mode')
    assert.equal(await shows('set-point'), 'heating')
    press('remove')
    assert.equal(await shows('set-point'), undefined)
  },
}

describe('examples: each deploys and produces its documented debug output', function () {
  const store = useStore()

  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => f.slice(0, -5))
    .sort()

  it('has a scenario for every example, and together they use every node type and mode', () => {
    assert.deepEqual(Object.keys(scenarios).sort(), files)
    const all = files.flatMap(load)
    for (const n of all) assert.ok(ALLOWED.has(n.type), `${n.type} is not allowed in examples`)
    for (const type of ['ss-get', 'ss-set', 'ss-del', 'ss-lock', 'ss-update', 'ss-watch'])
      assert.ok(
        all.some((n) => n.type === type),
        type,
      )
    const locks = all.filter((n) => n.type === 'ss-lock')
    const modes = new Set(locks.map((n) => n.mode))
    assert.deepEqual([...modes].sort(), ['gate', 'leader', 'lease', 'lock', 'once'])
    assert.ok(
      locks.some((n) => n.mode === 'lock' && Number(n.limit) > 1),
      'a semaphore (lock mode, Holders at most above 1)',
    )
    const configs = all.filter((n) => n.type === 'ss-config')
    // One config node per example file (they import side by side), identical but for the id (npm start merges them).
    assert.equal(new Set(configs.map((c) => JSON.stringify({ ...c, id: '' }))).size, 1, 'identical config nodes')
    assert.equal(new Set(configs.map((c) => c.id)).size, configs.length, 'each with an id of its own')
    // Blank: the AIO environment in a cluster, the local broker (npm start's) without one.
    assert.equal(configs[0]!.broker, '')
    for (const name of files)
      assert.equal(load(name).filter((n) => n.type === 'comment').length >= 1, true, `${name} explains itself`)
  })

  it('say what happens both under npm start and in an import: each names the buttons that start it', () => {
    for (const name of files) {
      const example = load(name)
      const comments = example.filter((n) => n.type === 'comment').map((n) => String(n.info))
      const text = comments.join('\n')
      // npm start deploys them with no inject firing at deploy (dev/flows.js quietExamples):
      // "on deploy" said plainly would be wrong there.
      assert.doesNotMatch(text, /(^|\n|\. )On deploy/, `${name} does not promise what happens on deploy`)
      const starters = example.filter((n) => n.type === 'inject' && firesByItself(n))
      for (const inject of starters) {
        const comment = comments.find((c) => c.includes(`**${inject.name}**`) && /imported from the menu/i.test(c))
        assert.ok(
          comment,
          `${name}: the comment on its tab names **${inject.name}** as the button to press, and says an import presses it at deploy`,
        )
      }
    }
  })

  for (const name of files) {
    it(name, async function () {
      const example = load(name)
      exampleDebug.clear()
      for (const n of example) if (n.type === 'debug') exampleDebug.set(n.id, String(n.complete))
      nodes = runnable(example, store.url)
      storeUrl = store.url
      await helper.load([...CORE, ...ALL], nodes)
      listen(...nodes.filter((n) => n.type === 'helper').map((n) => helper.getNode(n.id)))
      await scenarios[name]!()
    })
  }
})

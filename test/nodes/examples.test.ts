import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ALL, helper, lastStatus, listen, until, nextMessage, noMessage, redModule, useStore } from './support'

const CORE = [
  redModule('@node-red/nodes/core/common/20-inject.js'),
  redModule('@node-red/nodes/core/common/90-comment.js'),
  redModule('@node-red/nodes/core/function/10-function.js'),
  redModule('@node-red/nodes/core/function/15-change.js'),
]

type FlowNode = Record<string, unknown> & { id: string; type: string; name?: string }
const dir = join(__dirname, '..', '..', 'examples')
const ALLOWED = new Set(['tab', 'comment', 'inject', 'debug', 'function', 'change', 'catch', 'ss-config', 'ss-get', 'ss-set', 'ss-del', 'ss-lock', 'ss-watch'])

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

const scenarios: Record<string, () => Promise<void>> = {
  'counter-with-versions': async () => {
    const first = (await shows('counter')) as Record<string, unknown>
    assert.deepEqual({ payload: first.payload, applied: first.applied, released: first.released }, { payload: 1, applied: true, released: true })
    assert.match(String(first.version), /^\d{15}:\d{5}:/)
    press('count')
    const second = (await shows('counter')) as Record<string, unknown>
    assert.equal(second.payload, 2)
    assert.ok(String(second.version) > String(first.version), 'versions increase')
    press('reset')
    assert.equal(await shows('reset'), 1)
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

  const files = readdirSync(dir).filter((f) => f.endsWith('.json')).map((f) => f.slice(0, -5)).sort()

  it('has a scenario for every example, and together they use every node type and mode', () => {
    assert.deepEqual(Object.keys(scenarios).sort(), files)
    const all = files.flatMap(load)
    for (const n of all) assert.ok(ALLOWED.has(n.type), `${n.type} is not allowed in examples`)
    for (const type of ['ss-get', 'ss-set', 'ss-del', 'ss-lock', 'ss-watch']) assert.ok(all.some((n) => n.type === type), type)
    const modes = new Set(all.filter((n) => n.type === 'ss-lock').map((n) => n.mode))
    assert.deepEqual([...modes].sort(), ['leader', 'lease', 'lock'])
    const configs = all.filter((n) => n.type === 'ss-config')
    assert.equal(new Set(configs.map((c) => JSON.stringify(c))).size, 1, 'one shared, identical config node')
    assert.equal(configs[0]!.broker, 'mqtt://127.0.0.1:1883')
    for (const name of files) assert.equal(load(name).filter((n) => n.type === 'comment').length >= 1, true, `${name} explains itself`)
  })

  it('say what happens both under npm start and in an import: each names the buttons that start it', () => {
    for (const name of files) {
      const example = load(name)
      const comments = example.filter((n) => n.type === 'comment').map((n) => String(n.info))
      const text = comments.join('\n')
      // npm start deploys them with no inject firing at deploy (dev/flows.js quietExamples):
      // "on deploy" said plainly would be wrong there.
      assert.doesNotMatch(text, /(^|\n|\. )On deploy/, `${name} does not promise what happens on deploy`)
      const starters = example.filter((n) => n.type === 'inject' && n.once === true)
      for (const inject of starters) {
        const comment = comments.find((c) => c.includes(`**${inject.name}**`) && /imported from the menu/i.test(c))
        assert.ok(comment, `${name}: the comment on its tab names **${inject.name}** as the button to press, and says an import presses it at deploy`)
      }
    }
  })

  for (const name of files) {
    it(name, async function () {
      const example = load(name)
      exampleDebug.clear()
      for (const n of example) if (n.type === 'debug') exampleDebug.set(n.id, String(n.complete))
      nodes = runnable(example, store.url)
      await helper.load([...CORE, ...ALL], nodes)
      listen(...nodes.filter((n) => n.type === 'helper').map((n) => helper.getNode(n.id)))
      await scenarios[name]!()
    })
  }
})

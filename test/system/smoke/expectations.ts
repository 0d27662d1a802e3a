// What each example shows in the debug sidebar when deployed on a fresh store, step by step, as
// the table in examples/README.md promises users. One entry per examples/*.json (the smoke test
// checks that none is missing).
import { strict as assert } from 'node:assert'
import { isDeepStrictEqual } from 'node:util'
import { Hlc } from '../../../src/hlc'

export interface ExampleRun {
  /** Presses the inject node with this name. */
  inject(name: string): Promise<void>
  /** How many outputs the named debug node has shown so far. */
  count(debug: string): number
  /** Everything the named debug node has shown so far (the values it displays). */
  values(debug: string): unknown[]
  /** Waits for an output of the named debug node, at index `from` or later, that `accept` takes; its value. */
  next(debug: string, from: number, accept?: (value: unknown) => boolean): Promise<unknown>
  /** Waits until the example's one node of this type shows a status text that `accept` takes. */
  status(type: string, accept: (text: string) => boolean): Promise<void>
}

export interface Expectation {
  run(example: ExampleRun): Promise<void>
  /** Node errors the example provokes on purpose (matched against the encoded message). */
  allowErrors?: RegExp[]
}

type Msg = Record<string, unknown>

const equals = (expected: unknown) => (value: unknown) => isDeepStrictEqual(value, expected)

/** Presses an inject button and returns the next thing the debug node shows that `accept` takes. */
async function press(
  x: ExampleRun,
  inject: string,
  debug: string,
  accept?: (value: unknown) => boolean,
): Promise<unknown> {
  const from = x.count(debug)
  await x.inject(inject)
  return x.next(debug, from, accept)
}

function version(msg: Msg): Hlc {
  assert.equal(typeof msg.version, 'string', `msg.version in ${JSON.stringify(msg)}`)
  return Hlc.parse(msg.version as string)
}

export const EXPECTATIONS: Record<string, Expectation> = {
  'counter-with-versions': {
    async run(x) {
      const first = (await x.next('counter', 0)) as Msg
      assert.deepEqual(
        { payload: first.payload, applied: first.applied, released: first.released },
        { payload: 1, applied: true, released: true },
      )
      const second = (await press(x, 'count', 'counter')) as Msg
      assert.equal(second.payload, 2)
      assert.ok(Hlc.compare(version(second), version(first)) > 0, `${second.version} after ${first.version}`)
      assert.equal(await press(x, 'reset', 'reset'), 1)
    },
  },

  'counter-update-key': {
    async run(x) {
      assert.equal(await x.next('counter', 0), 1)
      assert.equal(await press(x, 'count', 'counter'), 2)
    },
  },

  'context-store-counter': {
    async run(x) {
      assert.equal(await x.next('counter (A)', 0), 1)
      assert.equal(await press(x, 'count in B', 'counter (B)'), 2)
      assert.equal(await press(x, 'count in A', 'counter (A)'), 3)
      assert.equal(await press(x, 'show', 'shown'), 3)
    },
    // This runtime has no "statestore" context store in its settings: Node-RED says so once and
    // uses its default store, as the example's comment tells users (test/system/smoke/context.test.ts runs it configured).
    allowErrors: [/Unknown context store 'statestore'/],
  },

  'conditional-set': {
    async run(x) {
      const expected = { 'NX as A': true, 'NX as B': false, 'NEX as A': true, 'NEX as B': false }
      for (const [debug, value] of Object.entries(expected)) assert.equal(await x.next(debug, 0), value, debug)
      // The flow deletes the key first, so a second run gives the same answers.
      const from = new Map(Object.keys(expected).map((d) => [d, x.count(d)]))
      await x.inject('run')
      for (const [debug, value] of Object.entries(expected))
        assert.equal(await x.next(debug, from.get(debug) ?? 0), value, `${debug}, second run`)
    },
  },

  'dataflow-dataset': {
    async run(x) {
      assert.equal(await x.next('stored', 0), true)
      const records = [
        { asset: 'thermostat-1', site: 'Line 1', maxTemperature: 24.5 },
        { asset: 'thermostat-2', site: 'Line 2', maxTemperature: 22 },
        { asset: 'thermostat-3', site: 'Line 2', maxTemperature: 23 },
      ]
      assert.deepEqual(await x.next('dataset', 0), records)
      assert.deepEqual(await press(x, 'look up thermostat-2', 'first match'), records[1])
    },
  },

  'expiring-keys': {
    async run(x) {
      assert.equal(await x.next('stored', 0), true)
      assert.equal(await x.next('right away', 0), true)
      assert.equal(await x.next('after expiry', 0), false)
      const brief = (await press(x, 'store for 500 ms', 'stored briefly')) as Msg
      assert.deepEqual({ expiry: brief.expiry, applied: brief.applied }, { expiry: 500, applied: true })
    },
  },

  'active-standby-lease': {
    // The refused late write is the point of the example; a Catch node shows it.
    allowErrors: [/FencingTokenLowerVersion/],
    async run(x) {
      assert.equal(await x.next('A active', 0), true)
      assert.equal(await x.next('B standby', 0), 'A')
      assert.equal(await press(x, 'A steps down', 'A released'), true)
      assert.equal(await press(x, 'B tries again', 'B active'), true)
      const refused = (await press(x, 'late write from A', 'refused write')) as Msg
      assert.equal(refused.code, 'FencingTokenLowerVersion', JSON.stringify(refused))
      assert.deepEqual(x.values('late write applied'), [])
    },
  },

  'leader-election': {
    async run(x) {
      assert.equal(await x.next('leader', 0), 'one leads')
      assert.equal(await press(x, 'who leads?', 'current leader'), 'one')
      const from = x.count('leader')
      assert.equal(await press(x, 'one resigns', 'leadership lost'), 'one stepped down (resigned)')
      assert.equal(await x.next('leader', from), 'two leads')
      assert.deepEqual(x.values('leader'), ['one leads', 'two leads'])
    },
  },

  'connector-dataset-watch': {
    async run(x) {
      await x.status('ss-watch', (text) => /watching 1$/.test(text))
      const from = x.count('latest sample')
      await x.inject('simulate 20 samples')
      await x.next('latest sample', from, (v) => (v as { sample: number }).sample === 20)
      const shown = x.values('latest sample').slice(from) as Array<{ sample: number }>
      assert.ok(
        shown.length <= 3,
        `the rate limit lets the latest sample through, not all twenty: ${shown.map((v) => v.sample).join(', ')}`,
      )
    },
  },

  'dapr-app-keys': {
    async run(x) {
      const written = (await press(x, 'simulate the Dapr app', 'written')) as Msg
      assert.deepEqual(written, {
        'examples/order-processor||order-1': true,
        'examples/order-processor||order-2': true,
      })
      assert.deepEqual(await press(x, 'read order-1', 'order'), { item: 'bolts', quantity: 3 })
      assert.deepEqual(await press(x, "all of the app's state", 'app state'), {
        'order-1': { item: 'bolts', quantity: 3 },
        'order-2': { item: 'nuts', quantity: 12 },
      })
    },
  },

  'wasm-enrichment-keys': {
    async run(x) {
      assert.deepEqual(await x.next('seeded', 0), {
        'examples/wasm/factoryId': true,
        'examples/wasm/lineId': true,
        'examples/wasm/limits': true,
      })
      assert.deepEqual(await press(x, 'read the keys', 'enrichment'), {
        'examples/wasm/factoryId': 'factoryA',
        'examples/wasm/lineId': 'line-3',
        'examples/wasm/limits': { maxTemperature: 24.5, maxSpeed: 12 },
      })
      assert.equal(await press(x, 'new line', 'line changed'), true)
    },
  },

  'leader-gated-tick': {
    async run(x) {
      // The inject repeats by itself once imported; a tick before the gate is elected is skipped.
      await x.inject('every 5 s')
      await x.next('tick ran', 0)
      const from = x.count('tick ran')
      await press(x, 'every 5 s', 'tick ran')
      const holders = new Set(x.values('tick ran'))
      assert.equal(holders.size, 1, `one runtime, one leader: ${[...holders].join(', ')}`)
      assert.match(String([...holders][0]), /\/[0-9a-f]{16}$/, 'the holder name, <client id>/<node id>')
      assert.ok(x.count('tick ran') > from)
    },
  },

  'run-once-job': {
    async run(x) {
      const day = new Date().toISOString().slice(0, 10)
      assert.equal(await press(x, 'every day at 06:00', 'report written'), `report of ${day} written`)
      assert.match(String(await press(x, 'every day at 06:00', 'already done')), /\/[0-9a-f]{16}$/)
      assert.equal(x.count('report written'), 1, 'the job ran once')
      assert.deepEqual(x.values('claim ran out'), [])
    },
  },

  'semaphore-api-calls': {
    async run(x) {
      await x.inject('5 calls')
      await x.next('call done', 4)
      const calls = x.values('calling').map(String)
      assert.deepEqual(
        calls.map((c) => c.replace(/ in slot [01]$/, '')).sort(),
        [1, 2, 3, 4, 5].map((n) => `call ${n}`),
        `each call in slot 0 or 1: ${calls.join(', ')}`,
      )
      assert.deepEqual(x.values('no slot'), [])
    },
  },

  'thermostat-watch': {
    async run(x) {
      // The initial read and the change notification can both show 21.5, in either order.
      await x.next('set-point', 0, equals(21.5))
      await press(x, 'set 19', 'set-point', equals(19))
      await x.inject('watch the mode too')
      // Watching starts asynchronously; a change made before it is in place would not be seen.
      await x.status('ss-watch', (text) => /watching 2$/.test(text))
      await press(x, 'set mode', 'set-point', equals('heating'))
      await press(x, 'remove', 'set-point', equals(undefined))
    },
  },
}

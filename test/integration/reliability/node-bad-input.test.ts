/**
 * Odd msgs for every node, one table per node: keys, values, fencing tokens, expiries, conditions,
 * watch and lock actions, and a fencing token the service refuses. All bad msgs go to every node in
 * one flow: each produces exactly one Catch msg with a typed error and the msg as it was, the node
 * answers the next good msg, and the other nodes and the runtime carry on.
 */
import assert from 'node:assert/strict'
import { Hlc } from '../../../src/hlc'
import { ALL, COMMON, helper, lastStatus, nextMessage, onTab, startStore, type Store } from '../nodes/support'
import { eventually, until } from '../../support/wait'

type Msg = Record<string, unknown>
type Case = [what: string, msg: Msg, code: string, kind?: string]

const KEY_70K = 'k'.repeat(70_000)
const future = () => new Hlc(Date.now() + 3_600_000, 0, 'from-the-future').toString()
const circular: Msg = { name: 'loop' }
circular.self = circular

const keyCases: Case[] = [
  ['no key', { payload: 1 }, 'KeyMissing'],
  ['an empty key', { topic: '', payload: 1 }, 'KeyEmpty'],
  ['a numeric key', { topic: 42, payload: 1 }, 'KeyNotString'],
  ['an object key', { topic: { a: 1 }, payload: 1 }, 'KeyNotString'],
  ['a key over 65,535 bytes in UTF-8', { topic: 'é'.repeat(32_768), payload: 1 }, 'KeyTooLong'],
  ['a 70,000-byte key', { topic: KEY_70K }, 'KeyTooLong'],
  ['a Buffer key', { topic: Buffer.from('k') }, 'KeyNotString'],
  ['an array key', { topic: ['a'] }, 'KeyNotString'],
  ['a boolean key', { topic: true }, 'KeyNotString'],
]

/** Get and delete take an array of keys: there an array is a list, and a bad entry in it is the error. */
const keyListCases: Case[] = keyCases.map((c) =>
  c[0] === 'an array key' ? ['a list with a number in it', { topic: ['a', 7] }, 'KeyNotString'] : c,
)

const writeCases: Case[] = [
  ['an object as fencing token', { fencingToken: { timestamp: 1 } }, 'FencingTokenInvalid'],
  ['a fencing token with 4 fields', { fencingToken: '000000000000001:00000:a:b' }, 'FencingTokenInvalid'],
  ['a fencing token an hour ahead', { fencingToken: future() }, 'FencingTokenSkew', 'service'],
]

/** Value, expiry and condition shapes; every one names a key. */
const valueCases: Case[] = [
  ['an undefined payload', { topic: 'k' }, 'ValueMissing'],
  ['a null payload', { topic: 'k', payload: null }, 'ValueMissing'],
  ['a NaN payload', { topic: 'k', payload: NaN }, 'ValueInvalid'],
  ['an Infinity payload', { topic: 'k', payload: Infinity }, 'ValueInvalid'],
  ['a circular payload', { topic: 'k', payload: circular }, 'ValueInvalid'],
  ['a Map payload (JSON would store {})', { topic: 'k', payload: new Map([['a', 1]]) }, 'ValueInvalid'],
  ['a BigInt payload', { topic: 'k', payload: 10n }, 'ValueInvalid'],
  ['a function payload', { topic: 'k', payload: () => 1 }, 'ValueInvalid'],
  ['a malformed fencing token', { topic: 'k', payload: 1, fencingToken: 'not-an-hlc' }, 'FencingTokenInvalid'],
  ['a numeric fencing token', { topic: 'k', payload: 1, fencingToken: 12 }, 'FencingTokenInvalid'],
  ['a negative expiry', { topic: 'k', payload: 1, expiry: -1 }, 'ExpiryInvalid'],
  ['a non-numeric expiry', { topic: 'k', payload: 1, expiry: 'soon' }, 'ExpiryInvalid'],
  ['a fractional expiry', { topic: 'k', payload: 1, expiry: 1.5 }, 'ExpiryInvalid'],
  ['an unknown condition', { topic: 'k', payload: 1, condition: 'MAYBE' }, 'ConditionInvalid'],
]

const setCases: Case[] = [
  ...writeCases,
  ['an expiry beyond 2^53', { expiry: 2 ** 53 }, 'ExpiryInvalid'],
  ['an expiry of true', { expiry: true }, 'ExpiryInvalid'],
  ['an expiry in exponent notation', { expiry: '1e3' }, 'ExpiryInvalid'],
  ['a numeric condition', { condition: 1 }, 'ConditionInvalid'],
  ['a lower-case condition', { condition: 'nx' }, 'ConditionInvalid'],
  ['a symbol payload', { payload: Symbol('s') }, 'ValueInvalid'],
]

const lockCases: Case[] = [
  ...keyCases,
  ['an unknown action', { action: 'steal' }, 'ActionUnknown'],
  ['a numeric action', { action: 3 }, 'ActionUnknown'],
  ['a null action', { action: null }, 'ActionUnknown'],
  ['an action in capitals', { action: 'ACQUIRE' }, 'ActionUnknown'],
]

const watchCases: Case[] = [
  ['no action', { topic: 'k' }, 'ActionUnknown'],
  ['an unknown action', { action: 'observe', topic: 'k' }, 'ActionUnknown'],
  ['no key to watch', { action: 'watch' }, 'KeyMissing'],
  ['an empty key to watch', { action: 'watch', topic: '' }, 'KeyEmpty'],
  ['a non-string key in a list', { action: 'watch', topic: ['good', 7] }, 'KeyNotString'],
  ['a 70,000-byte key', { action: 'watch', topic: KEY_70K }, 'KeyTooLong'],
  ['a list with a 70,000-byte key', { action: 'watch', topic: ['fine', KEY_70K] }, 'KeyTooLong'],
  ['a key pattern to watch', { action: 'watch', topic: 't6/watch/*' }, 'PatternNotWatchable'],
  ['a list with a pattern in it', { action: 'watch', topic: ['fine', 'line[12]/state'] }, 'PatternNotWatchable'],
  ['an action as a list', { action: ['watch'], topic: 'k' }, 'ActionUnknown'],
  ['an object as topic', { action: 'unwatch', topic: { key: 'k' } }, 'KeyNotString'],
]

interface Target {
  id: string
  node: Msg
  cases: Case[]
  good: Msg
  /** The output a good msg arrives at. */
  out: string
}

const targets: Target[] = [
  {
    id: 'set',
    node: { type: 'ss-set', key: 'topic', keyType: 'msg' },
    cases: [
      ...keyCases.map(withDefaults({ payload: 'x' })),
      ...valueCases,
      ...setCases.map(withDefaults({ topic: 'bad-input-2', payload: 'x' })),
    ],
    good: { topic: 'bad-input-2', payload: 'fine' },
    out: 'set-out',
  },
  {
    id: 'get',
    node: { type: 'ss-get', key: 'topic', keyType: 'msg' },
    cases: keyListCases,
    good: { topic: 'bad-input-2' },
    out: 'get-out',
  },
  {
    id: 'del',
    node: { type: 'ss-del', key: 'topic', keyType: 'msg' },
    cases: [
      ...keyListCases,
      ['a malformed fencing token', { topic: 'k', fencingToken: '1:2' }, 'FencingTokenInvalid'],
      ...writeCases.map(withDefaults({ topic: 'bad-input-3' })),
    ],
    good: { topic: 'bad-input-4' },
    out: 'del-out',
  },
  {
    id: 'vdel',
    node: { type: 'ss-del', key: 'topic', keyType: 'msg', mode: 'vdel' },
    cases: [
      ...keyListCases.map(withDefaults({ payload: 'x' })),
      ['no value to compare', { topic: 'k' }, 'ValueMissing'],
      ['a NaN value to compare', { topic: 'k', payload: NaN }, 'ValueInvalid'],
      ['a symbol to compare', { topic: 'k', payload: Symbol('s') }, 'ValueInvalid'],
    ],
    good: { topic: 'bad-input-4', payload: 'x' },
    out: 'vdel-out',
  },
  {
    id: 'watch',
    node: { type: 'ss-watch', keys: '' },
    cases: watchCases,
    good: { action: 'watch', topic: 'bad-input-5' },
    out: '',
  },
  {
    id: 'lease',
    node: { type: 'ss-lock', mode: 'lease', key: 'topic', keyType: 'msg', action: 'holder' },
    cases: lockCases,
    good: { topic: 'bad-input-lease' },
    out: 'lease-out',
  },
  {
    id: 'lock',
    node: { type: 'ss-lock', mode: 'lock', key: 'topic', keyType: 'msg', action: 'holder' },
    cases: lockCases,
    good: { topic: 'bad-input-lock' },
    out: 'lock-out',
  },
  {
    id: 'leader',
    node: { type: 'ss-lock', mode: 'leader', key: 'topic', keyType: 'msg', action: 'holder', campaign: false },
    cases: [
      ...lockCases,
      ['renew, which an election does not have', { topic: 'election', action: 'renew' }, 'ActionUnsupported'],
    ],
    good: { topic: 'bad-input-leader' },
    out: 'leader-out',
  },
]

function withDefaults(defaults: Msg): (c: Case) => Case {
  return ([what, msg, code, kind]) => [what, { ...defaults, ...msg }, code, ...(kind ? [kind] : [])] as Case
}

describe('reliability: odd msgs to every node', function () {
  this.timeout(30_000)
  let store: Store
  before(async () => {
    store = await startStore()
  })
  after(async () => {
    await helper.unload()
    await store.stop()
  })

  it('gives each one exactly one typed error through Catch with the msg kept, then handles the next good msg', async () => {
    const flow: unknown[] = [
      { id: 'tab', type: 'tab', label: 'odd msgs' },
      { id: 'cfg', type: 'ss-config', broker: store.url, requestTimeout: '3000' },
    ]
    for (const t of targets) {
      const outputs = t.node.type === 'ss-lock' ? [[`${t.id}-out`], [`${t.id}-out`]] : t.out ? [[t.out]] : [[]]
      flow.push(onTab({ id: t.id, store: 'cfg', ...t.node, wires: outputs }))
      if (t.out) flow.push(onTab({ id: t.out, type: 'helper' }))
    }
    flow.push(
      onTab({ id: 'catcher', type: 'catch', scope: null, uncaught: false, wires: [['caught']] }),
      onTab({ id: 'caught', type: 'helper' }),
    )
    await helper.load(ALL, flow)
    const caughtNode = helper.getNode('caught')
    const caught: Msg[] = []
    caughtNode.on('input', (m: Msg) => caught.push(m))
    await until(() => lastStatus(helper.getNode('set')).fill === 'green', 'the set node connected')

    let sent = 0
    for (const t of targets) {
      const node = helper.getNode(t.id)
      for (const [what, msg, code, kind] of t.cases) {
        const before = caught.length
        node.receive({ ...msg, marker: `${t.id}: ${what}` })
        sent += 1
        const m = await eventually(() => caught[before], `${t.id}: ${what}: a Catch msg`)
        const error = m.error as { code: string; message: string; source: { id: string }; cause: { kind: string } }
        assert.equal(error.source.id, t.id, `${t.id}: ${what}`)
        assert.equal(error.code, code, `${t.id}: ${what}`)
        assert.equal(error.cause.kind, kind ?? 'input', `${t.id}: ${what}`)
        if ((kind ?? 'input') === 'input')
          assert.ok(error.message.startsWith(`${COMMON}errors.`), `${t.id}: ${what}: ${error.message}`)
        assert.equal(m.marker, `${t.id}: ${what}`, 'the msg reaches Catch as it was sent')
        // Symbols, functions and BigInts do not survive Node-RED's message cloning; everything else must arrive as sent.
        for (const [k, v] of Object.entries(msg))
          if (!['symbol', 'function', 'bigint'].includes(typeof v))
            assert.deepEqual(m[k], v, `${t.id}: ${what}: msg.${k} kept`)
        assert.equal(lastStatus(node).fill, 'red', `${t.id}: ${what}: the status shows the error`)

        // The next good msg works.
        if (t.out) {
          const ok = nextMessage(helper.getNode(t.out), 5000)
          node.receive({ ...t.good })
          await ok
        } else {
          const caughtBefore = caught.length
          // A key not watched yet, so the status changes to "watching N".
          node.receive({ ...t.good, topic: `${String(t.good.topic)}-${sent}` })
          await until(
            () => String(lastStatus(node).text).includes('status.watching'),
            `${t.id}: the watch taking the good msg`,
          )
          assert.equal(caught.length, caughtBefore)
        }
      }
    }
    // Exactly one Catch msg per bad msg: nothing reported twice, nothing from the good ones.
    await new Promise((r) => setTimeout(r, 200))
    assert.equal(caught.length, sent)
    assert.equal(lastStatus(helper.getNode('get')).fill, 'green', 'the nodes stay connected')
  })

  it('a node without a config node reports it in its status and errors every msg', async () => {
    await helper.unload()
    await helper.load(ALL, [
      { id: 'tab', type: 'tab' },
      onTab({ id: 'node', type: 'ss-get', store: '', key: 'k', keyType: 'str' }),
      onTab({ id: 'catcher', type: 'catch', scope: null, uncaught: false, wires: [['caught']] }),
      onTab({ id: 'caught', type: 'helper' }),
    ])
    const node = helper.getNode('node')
    assert.deepEqual(lastStatus(node), { fill: 'red', shape: 'ring', text: `${COMMON}status.noConfig` })
    const c = nextMessage(helper.getNode('caught'))
    node.receive({ payload: 1 })
    assert.equal(((await c).error as { code: string }).code, 'NoConfig')
  })
})

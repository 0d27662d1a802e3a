import assert from 'node:assert/strict'
import { ALL, COMMON, flowWith, helper, lastStatus, listen, nextMessage, onTab, useStore } from './support'

type Case = [what: string, msg: Record<string, unknown>, code: string]

const circular: Record<string, unknown> = { name: 'loop' }
circular.self = circular

const keyCases: Case[] = [
  ['no key', { payload: 1 }, 'KeyMissing'],
  ['an empty key', { topic: '', payload: 1 }, 'KeyEmpty'],
  ['a numeric key', { topic: 42, payload: 1 }, 'KeyNotString'],
  ['an object key', { topic: { a: 1 }, payload: 1 }, 'KeyNotString'],
  ['a key over 65,535 bytes', { topic: 'é'.repeat(32_768), payload: 1 }, 'KeyTooLong'],
  ['an empty msg.key override', { topic: 'ok', key: '', payload: 1 }, 'KeyEmpty'],
]

const setCases: Case[] = [
  ...keyCases,
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

const delCases: Case[] = [...keyCases, ['a malformed fencing token', { topic: 'k', fencingToken: '1:2' }, 'FencingTokenInvalid']]

const vdelCases: Case[] = [...keyCases.slice(0, 3), ['no value to compare', { topic: 'k' }, 'ValueMissing'], ['a NaN value to compare', { topic: 'k', payload: NaN }, 'ValueInvalid']]

const watchCases: Case[] = [
  ['no action', { topic: 'k' }, 'ActionUnknown'],
  ['an unknown action', { action: 'observe', topic: 'k' }, 'ActionUnknown'],
  ['no key to watch', { action: 'watch' }, 'KeyMissing'],
  ['an empty key to watch', { action: 'watch', topic: '' }, 'KeyEmpty'],
  ['a non-string key in a list', { action: 'watch', topic: ['good', 7] }, 'KeyNotString'],
]

const suites: Array<[string, Record<string, unknown>, Case[], Record<string, unknown>]> = [
  ['ss-set', { type: 'ss-set', key: 'topic', keyType: 'msg' }, setCases, { topic: 'bad-input', payload: 'fine' }],
  ['ss-get', { type: 'ss-get', key: 'topic', keyType: 'msg' }, keyCases, { topic: 'bad-input' }],
  ['ss-del', { type: 'ss-del', key: 'topic', keyType: 'msg' }, delCases, { topic: 'bad-input' }],
  ['ss-del (only if equal)', { type: 'ss-del', key: 'topic', keyType: 'msg', mode: 'vdel' }, vdelCases, { topic: 'bad-input', payload: 'x' }],
  ['ss-watch', { type: 'ss-watch', keys: '' }, watchCases, { action: 'watch', topic: 'bad-input' }],
]

describe('nodes: bad input never stops a node', function () {
  const store = useStore()

  for (const [name, def, cases, good] of suites) {
    it(`${name}: each bad msg reaches Catch intact with a typed error, and the next good msg works`, async () => {
      await helper.load(ALL, flowWith(store.url, { id: 'node', ...def }))
      const node = helper.getNode('node')
      const out = helper.getNode('out1')
      const caught = helper.getNode('caught')
      listen(out, caught)
      for (const [what, msg, code] of cases) {
        const c = nextMessage(caught)
        node.receive({ ...msg, marker: what })
        const m = await c
        const error = m.error as { code: string; message: string; cause: { kind: string; code: string } }
        assert.equal(error.code, code, what)
        assert.equal(error.cause.kind, 'input', what)
        assert.ok(error.message.startsWith(COMMON + 'errors.'), `${what}: ${error.message}`)
        assert.equal(m.marker, what, `${what}: the msg reaches Catch intact`)
        if ('payload' in msg && typeof msg.payload !== 'function' && typeof msg.payload !== 'bigint') {
          assert.deepEqual(m.payload, msg.payload, `${what}: payload kept`)
        }
        assert.equal(lastStatus(node).fill, 'red', what)

        if (name === 'ss-watch') {
          await node.receive({ ...good })
          continue
        }
        const ok = nextMessage(out)
        node.receive({ ...good })
        await ok
      }
    })
  }

  it('a node without a config node reports it in its status and errors every msg', async () => {
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

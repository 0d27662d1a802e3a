/**
 * ss-update (update key) as flows use it: a counter of inject → update key → debug pressed many times
 * at once from two nodes on two connections, beside a client doing Lock.edit on the same key by the
 * documented lock-name rule; the expression's scope; a missing key; a bad expression.
 */
import assert from 'node:assert/strict'
import { StateStoreClient } from '../../../src/client'
import { Hlc } from '../../../src/hlc'
import { keyLockName, Lock } from '../../../src/locks'
import { scaled } from '../../support/deadline'
import { ALL, COMMON, TAB, configNode, flowWith, helper, lastStatus, nextMessage, onTab, useStore } from './support'

const OWN = 'node-red-contrib-aio-statestore/ss-update:ss-update.'

describe('nodes: ss-update', function () {
  this.timeout(30000)
  const store = useStore()
  let round = 0
  let key = ''
  beforeEach(() => {
    round += 1
    key = `update-${round}`
  })

  it('a counter: two nodes on two connections and a client doing Lock.edit, 20 + 20 + 20 at once, count exactly 60', async () => {
    const code = new StateStoreClient({ brokerUrl: store.emulator.brokerUrl, clientId: 'update-test-code' })
    await code.ready({ timeoutMs: 3000 })
    try {
      await helper.load(ALL, [
        TAB,
        configNode(store.url, { clientId: 'runtime-1' }),
        configNode(store.url, { id: 'cfg2', clientId: 'runtime-2' }),
        onTab({
          id: 'u1',
          type: 'ss-update',
          store: 'cfg',
          key,
          keyType: 'str',
          expression: 'value + 1',
          initial: '0',
          initialType: 'num',
          // 60 turns of one lock: the last msg waits for 59 others, however busy the machine.
          timeout: String(scaled(120_000)),
          wires: [['done']],
        }),
        onTab({
          id: 'u2',
          type: 'ss-update',
          store: 'cfg2',
          key,
          keyType: 'str',
          expression: 'value + 1',
          initial: '0',
          initialType: 'num',
          // 60 turns of one lock: the last msg waits for 59 others, however busy the machine.
          timeout: String(scaled(120_000)),
          wires: [['done']],
        }),
        onTab({ id: 'done', type: 'helper' }),
      ])
      const lock = new Lock(code, keyLockName(key))
      const edits = (async () => {
        for (let i = 0; i < 20; i++)
          await lock.edit(key, (v) => String(Number(v?.toString() ?? '0') + 1), { timeoutMs: scaled(120_000) })
      })()
      for (let i = 0; i < 20; i++) {
        helper.getNode('u1').receive({ payload: i })
        helper.getNode('u2').receive({ payload: i })
      }
      const out: Array<Record<string, unknown>> = []
      for (let i = 0; i < 40; i++) out.push(await nextMessage(helper.getNode('done'), 20000))
      await edits
      assert.equal((await code.get(key)).value?.toString(), '60')
      const values = out.map((m) => Number(m.payload)).sort((a, b) => a - b)
      assert.equal(new Set(values).size, 40, 'no two msgs saw the same count')
      assert.ok(
        out.every((m) => (m.previous === null ? m.payload === 1 : Number(m.payload) === Number(m.previous) + 1)),
      )
      const byValue = [...out].sort((a, b) => Number(a.payload) - Number(b.payload))
      for (let i = 1; i < byValue.length; i++) {
        assert.ok(
          Hlc.compare(Hlc.parse(String(byValue[i]!.version)), Hlc.parse(String(byValue[i - 1]!.version))) > 0,
          'versions grow with the count',
        )
      }
      assert.equal((await code.get(keyLockName(key))).value, null, 'the lock is free afterwards')
      assert.equal(lastStatus(helper.getNode('u1')).text, `${COMMON}status.applied`)
      // The sidebar's locks section lists the node's lock by the rule's name.
      const activity = (
        helper.getNode('cfg') as unknown as {
          activity: { locks: Map<string, { owner: string; name: string; kind: string }> }
        }
      ).activity
      const record = activity.locks.get(`u1/${key}.lock`)
      assert.deepEqual(record && { owner: record.owner, name: record.name, kind: record.kind }, {
        owner: 'u1',
        name: `${key}.lock`,
        kind: 'lock',
      })
    } finally {
      await code.close()
    }
  })

  it('the expression sees value, version and msg; a missing key starts from "If missing"', async () => {
    await helper.load(
      ALL,
      flowWith(store.url, {
        id: 'u',
        type: 'ss-update',
        key,
        keyType: 'str',
        expression: '{"items": $append(value.items, msg.payload), "seen": version}',
        initial: '{"items":[]}',
        initialType: 'json',
      }),
    )
    helper.getNode('u').receive({ payload: 'a' })
    const first = await nextMessage(helper.getNode('out1'))
    assert.deepEqual(first.payload, { items: ['a'], seen: null })
    assert.equal(first.previous, null)
    helper.getNode('u').receive({ payload: 'b' })
    const second = await nextMessage(helper.getNode('out1'))
    assert.deepEqual((second.payload as { items: string[] }).items, ['a', 'b'])
    assert.equal((second.payload as { seen: string }).seen, first.version, 'version: the version read')
    assert.deepEqual(second.previous, first.payload)
  })

  it('an expression that fails goes to Catch with its code, the msg unchanged, and the node keeps working', async () => {
    await helper.load(
      ALL,
      flowWith(store.url, {
        id: 'u',
        type: 'ss-update',
        key: 'topic',
        keyType: 'msg',
        expression: '$number(msg.payload) + value',
      }),
    )
    const caught = nextMessage(helper.getNode('caught'))
    helper.getNode('u').receive({ topic: key, payload: 'not a number' })
    const c = await caught
    assert.equal((c.error as { code: string }).code, 'ExpressionFailed')
    assert.equal(c.payload, 'not a number')
    helper.getNode('u').receive({ topic: key, payload: '2' })
    assert.equal((await nextMessage(helper.getNode('out1'))).payload, 2)
  })

  it('a new value over the value limit fails as ValueTooLarge before the write: the key keeps its value, the lock is free', async () => {
    const code = new StateStoreClient({ brokerUrl: store.emulator.brokerUrl, clientId: 'update-test-big' })
    await code.ready({ timeoutMs: 3000 })
    try {
      await code.set(key, 'before')
      await helper.load(
        ALL,
        flowWith(store.url, { id: 'u', type: 'ss-update', key, keyType: 'str', expression: '$pad("", 20000000, "x")' }),
      )
      const caught = nextMessage(helper.getNode('caught'))
      helper.getNode('u').receive({ payload: 1 })
      const c = await caught
      assert.equal((c.error as { code: string }).code, 'ValueTooLarge')
      assert.equal((await code.get(key)).value?.toString(), 'before')
      assert.equal((await code.get(keyLockName(key))).value, null, 'the lock is free')
    } finally {
      await code.close()
    }
  })

  it('an expression that does not parse is shown at deploy and refused per msg', async () => {
    await helper.load(
      ALL,
      flowWith(store.url, { id: 'u', type: 'ss-update', key, keyType: 'str', expression: 'value +' }),
    )
    const caught = nextMessage(helper.getNode('caught'))
    helper.getNode('u').receive({ payload: 1 })
    assert.equal(((await caught).error as { code: string }).code, 'ExpressionInvalid')
    assert.ok(
      helper
        .getNode('u')
        .status.getCalls()
        .some((c) => (c.args[0] as { text?: string }).text === `${OWN}status.badExpression`),
    )
  })
})

/**
 * ss-lock's lock mode wired as flows use it: many msgs at once into one lock node, two nodes with one
 * holder name, a release from another node, a msg that never reaches a release, a full queue. The
 * counter flow is the one users build: lock → get → function (+1) → set (fenced) → release (defaults).
 */
import assert from 'node:assert/strict'
import { StateStoreClient } from '../../../src/client'
import { Hlc } from '../../../src/hlc'
import { Lock } from '../../../src/locks'
import {
  ALL,
  COMMON,
  TAB,
  configNode,
  helper,
  lastStatus,
  listen,
  nextMessage,
  noMessage,
  onTab,
  startStore,
  statuses,
  type Store,
} from './support'
import { until } from '../../support/wait'

// eslint-disable-next-line @typescript-eslint/no-require-imports
const FUNCTION = require('@node-red/nodes/core/function/10-function.js')
const MODULES = [...ALL, FUNCTION]
const OWN = 'node-red-contrib-aio-statestore/ss-lock:ss-lock.'
/** Each test's counter key (fenced writes leave a key that only a fenced request deletes). */
let counter = ''
let lockName = ''

/** Lock mode on this test's `lockName`: node `take`, output 1 to helper `taken`, output 2 to helper `lost`. */
function takeNodes(settings: Record<string, unknown> = {}): unknown[] {
  return [
    onTab({
      id: 'take',
      type: 'ss-lock',
      store: 'cfg',
      key: lockName,
      keyType: 'str',
      mode: 'lock',
      wires: [['taken'], ['lost']],
      ...settings,
    }),
    onTab({ id: 'taken', type: 'helper' }),
    onTab({ id: 'lost', type: 'helper' }),
  ]
}

/** A release node `free` as dropped from the palette (lease mode, blank name), output 1 to helper `freed`. */
function freeNodes(): unknown[] {
  return [
    onTab({
      id: 'free',
      type: 'ss-lock',
      store: 'cfg',
      key: '',
      keyType: 'str',
      mode: 'lease',
      action: 'release',
      wires: [['freed'], []],
    }),
    onTab({ id: 'freed', type: 'helper' }),
  ]
}

/** A Catch node for the whole tab, into helper `caught`. */
function catchNodes(): unknown[] {
  return [
    onTab({ id: 'catcher', type: 'catch', scope: null, uncaught: false, wires: [['caught']] }),
    onTab({ id: 'caught', type: 'helper' }),
  ]
}

/**
 * The counter flow of the issue, once per lock node in `locks` (each its own chain, all on `counter`
 * under the lock `counter-lock`), ending in one helper `done`; lost/refused msgs go to `<id>-no`.
 */
function counterFlow(
  url: string,
  locks: Array<Record<string, unknown>>,
  stores: Array<Record<string, unknown>> = [configNode(url)],
) {
  const nodes: unknown[] = [TAB, ...stores]
  for (const l of locks) {
    const id = String(l.id)
    const store = String(l.store ?? 'cfg')
    nodes.push(
      onTab({
        type: 'ss-lock',
        store,
        key: lockName,
        keyType: 'str',
        mode: 'lock',
        action: 'acquire',
        holder: '',
        wires: [[`${id}-get`], [`${id}-no`]],
        ...l,
      }),
      onTab({
        id: `${id}-get`,
        type: 'ss-get',
        store,
        key: counter,
        keyType: 'str',
        decode: 'json',
        notFound: 'payload',
        wires: [[`${id}-add`]],
      }),
      onTab({
        id: `${id}-add`,
        type: 'function',
        func: 'msg.payload = (msg.found ? msg.payload : 0) + 1;\nreturn msg;',
        outputs: 1,
        wires: [[`${id}-set`]],
      }),
      onTab({
        id: `${id}-set`,
        type: 'ss-set',
        store,
        key: counter,
        keyType: 'str',
        value: 'payload',
        valueType: 'msg',
        fencingToken: 'fencingToken',
        fencingTokenType: 'msg',
        wires: [[`${id}-release`]],
      }),
      // A release node as dropped from the palette: lease mode, blank name and holder, action release.
      onTab({
        id: `${id}-release`,
        type: 'ss-lock',
        store,
        key: '',
        keyType: 'str',
        mode: 'lease',
        action: 'release',
        holder: '',
        wires: [['done'], []],
      }),
      onTab({ id: `${id}-no`, type: 'helper' }),
    )
  }
  nodes.push(onTab({ id: 'done', type: 'helper' }), ...catchNodes())
  return nodes
}

async function collect(id: string, n: number, ms = 15000): Promise<Array<Record<string, unknown>>> {
  const out: Array<Record<string, unknown>> = []
  for (let i = 0; i < n; i++) out.push(await nextMessage(helper.getNode(id), ms))
  return out
}

/** The counter's fenced writes came in lock order: every next hold's token is greater. */
function assertIncreasing(tokens: string[]): void {
  for (let i = 1; i < tokens.length; i++)
    assert.ok(
      Hlc.compare(Hlc.parse(tokens[i]!), Hlc.parse(tokens[i - 1]!)) > 0,
      `token ${i} greater than token ${i - 1}`,
    )
}

describe('nodes: ss-lock in lock mode, wired as flows use it', function () {
  this.timeout(30000)
  let store: Store
  let other: StateStoreClient
  before(async () => {
    store = await startStore()
    other = new StateStoreClient({ brokerUrl: store.emulator.brokerUrl, clientId: 'lock-flows-observer' })
    await other.ready({ timeoutMs: 3000 })
  })
  after(async () => {
    await other.close()
    await store.stop()
  })
  let round = 0
  beforeEach(() => {
    round += 1
    counter = `counter-${round}`
    lockName = `counter-lock-${round}`
  })
  afterEach(() => helper.unload())

  it('40 simultaneous msgs into one lock node count exactly 40, one hold at a time, and leave the lock free', async () => {
    await helper.load(MODULES, counterFlow(store.url, [{ id: 'a' }]))
    listen(helper.getNode('done'), helper.getNode('a-no'), helper.getNode('caught'))
    for (let i = 0; i < 40; i++) helper.getNode('a').receive({ payload: i })
    const done = await collect('done', 40)
    assert.deepEqual(
      done.map((m) => m.payload).sort((x, y) => Number(x) - Number(y)),
      Array.from({ length: 40 }, (_, i) => i + 1),
    )
    assert.deepEqual(
      done.map((m) => m.payload),
      Array.from({ length: 40 }, (_, i) => i + 1),
      'the msgs hold the lock one after another',
    )
    assert.ok(done.every((m) => m.released === true && m.applied === true))
    const values = new Set(done.map((m) => (m.lock as { value: string }).value))
    assert.equal(values.size, 40, 'every hold wrote a value of its own')
    assert.ok(
      [...values].every((v) => /:[0-9a-f]{12}$/.test(v)),
      'in the form <holder>:<session>',
    )
    assertIncreasing(done.map((m) => String(m.fencingToken)))
    assert.equal((await other.get(counter)).value?.toString(), '40')
    assert.equal((await other.get(lockName)).value, null, 'the lock key is gone afterwards')
    await noMessage(helper.getNode('caught'), 50)
    assert.equal(lastStatus(helper.getNode('a-release')).fill, 'green')
  })

  it('two lock nodes with one holder name on two connections exclude each other: 20 + 20 msgs count 40', async () => {
    const stores = [
      configNode(store.url, { clientId: 'runtime-1' }),
      configNode(store.url, { id: 'cfg2', clientId: 'runtime-2' }),
    ]
    await helper.load(
      MODULES,
      counterFlow(
        store.url,
        [
          { id: 'a', holder: 'counter' },
          { id: 'b', holder: 'counter', store: 'cfg2' },
        ],
        stores,
      ),
    )
    listen(helper.getNode('done'), helper.getNode('caught'))
    for (let i = 0; i < 20; i++) {
      helper.getNode('a').receive({ payload: i })
      helper.getNode('b').receive({ payload: i })
    }
    const done = await collect('done', 40)
    assert.deepEqual(
      done.map((m) => m.payload),
      Array.from({ length: 40 }, (_, i) => i + 1),
    )
    assert.ok(done.every((m) => m.holder === 'counter'))
    assertIncreasing(done.map((m) => String(m.fencingToken)))
    assert.equal((await other.get(counter)).value?.toString(), '40')
    await noMessage(helper.getNode('caught'), 50)
  })

  it('a release from another node ends the renewal where the hold was made: the key stays gone', async () => {
    await helper.load(MODULES, [
      TAB,
      configNode(store.url),
      ...takeNodes({ leaseMs: '600' }),
      ...freeNodes(),
      onTab({
        id: 'freeByName',
        type: 'ss-lock',
        store: 'cfg',
        key: lockName,
        keyType: 'str',
        mode: 'lease',
        action: 'release',
        wires: [['freed'], []],
      }),
    ])
    listen(helper.getNode('lost'))
    helper.getNode('take').receive({ payload: 1 })
    const held = await nextMessage(helper.getNode('taken'))
    assert.equal((await other.get(lockName)).value?.toString(), (held.lock as { value: string }).value)
    helper.getNode('free').receive(held)
    const freed = await nextMessage(helper.getNode('freed'))
    assert.equal(freed.released, true)
    assert.equal(lastStatus(helper.getNode('free')).text, `${COMMON}status.released`)
    // Renewal ran every 200 ms: three periods later nothing has written the key back.
    await noMessage(helper.getNode('lost'), 650)
    assert.equal((await other.get(lockName)).value, null)
    // The same hold released again: nothing to release, and the status says so, not in green.
    helper.getNode('free').receive(held)
    assert.equal((await nextMessage(helper.getNode('freed'))).released, false)
    assert.deepEqual(lastStatus(helper.getNode('free')), {
      fill: 'yellow',
      shape: 'dot',
      text: `${OWN}status.notReleased`,
    })
    // A msg that carries no hold, to a release node named for the lock: its own holder holds nothing either.
    helper.getNode('freeByName').receive({})
    assert.equal((await nextMessage(helper.getNode('freed'))).released, false)
    assert.ok(
      statuses(helper.getNode('freeByName')).every((s) => s.fill !== 'green' || s.text !== `${OWN}status.notReleased`),
    )
  })

  it('a release in another runtime ends the hold where it was made: no renewal writes the key back, a waiter there gets it', async () => {
    await helper.load(MODULES, [TAB, configNode(store.url), ...takeNodes({ leaseMs: '600' }), ...freeNodes()])
    const seen: string[] = []
    const watching = await other.observe(lockName, (n) =>
      seen.push(n.operation === 'SET' ? n.value!.toString() : 'DELETE'),
    )
    const elsewhere = new StateStoreClient({ brokerUrl: store.emulator.brokerUrl, clientId: 'lock-flows-elsewhere' })
    try {
      await elsewhere.ready({ timeoutMs: 3000 })
      helper.getNode('take').receive({ payload: 'mine' })
      const held = await nextMessage(helper.getNode('taken'))
      const value = (held.lock as { value: string }).value
      // Renewed (every 200 ms) twice: the hold's own SETs are heard.
      await until(() => seen.filter((v) => v === value).length >= 3, 'two renewals')
      // A msg waits in the other runtime; the msg that holds the lock reaches a release there (by its value, as a release node there does).
      const waiting = new Lock(elsewhere, lockName, { holder: 'elsewhere', leaseMs: 600, renewPeriodMs: 200 })
      const acquired = waiting.acquire({ timeoutMs: 20_000 })
      assert.equal((await elsewhere.vdel(lockName, value)).deleted, 1)
      const lost = await nextMessage(helper.getNode('lost'))
      assert.deepEqual(
        { payload: lost.payload, acquired: lost.acquired, lost: lost.lost, reason: lost.reason },
        { payload: 'mine', acquired: false, lost: true, reason: 'released' },
      )
      assert.equal(lastStatus(helper.getNode('take')).text, `${OWN}status.releasedElsewhere`)
      await acquired
      // The waiter renews twice (every 200 ms): a renewal of the first hold meanwhile would have made one of them refused.
      let renewals = 0
      await new Promise<void>((resolve, reject) => {
        waiting.lease.on('renewed', () => ++renewals === 2 && resolve())
        waiting.lease.on('lost', ({ reason }) => reject(new Error(reason)))
      })
      const afterRelease = seen.slice(seen.indexOf('DELETE') + 1)
      assert.ok(
        !afterRelease.includes(value),
        `no SET of the released hold after its DELETE: ${afterRelease.join(', ')}`,
      )
      assert.equal((await other.get(lockName)).value?.toString().startsWith('elsewhere'), true)
      // Its msg reaching a release here as well: the hold has ended, nothing is released.
      helper.getNode('free').receive(held)
      assert.equal((await nextMessage(helper.getNode('freed'))).released, false)
      await waiting.release()
    } finally {
      await watching.close()
      await elsewhere.close()
    }
  })

  it('a lock key deleted by another client ends the hold: the next msg waiting at the node gets it at once', async () => {
    await helper.load(MODULES, [TAB, configNode(store.url), ...takeNodes({ leaseMs: '600' })])
    const seen: string[] = []
    const watching = await other.observe(lockName, (n) =>
      seen.push(n.operation === 'SET' ? n.value!.toString() : 'DELETE'),
    )
    try {
      helper.getNode('take').receive({ payload: 'first' })
      const first = await nextMessage(helper.getNode('taken'))
      const value = (first.lock as { value: string }).value
      helper.getNode('take').receive({ payload: 'second' })
      await until(() => seen.filter((v) => v === value).length >= 2, 'a renewal')
      // As a CLI `del` or the sidebar does.
      await other.del(lockName)
      const lost = await nextMessage(helper.getNode('lost'))
      assert.deepEqual({ payload: lost.payload, reason: lost.reason }, { payload: 'first', reason: 'released' })
      const second = await nextMessage(helper.getNode('taken'))
      assert.equal(second.payload, 'second')
      const secondValue = (second.lock as { value: string }).value
      assert.ok(Hlc.compare(Hlc.parse(String(second.fencingToken)), Hlc.parse(String(first.fencingToken))) > 0)
      await until(() => seen.filter((v) => v === secondValue).length >= 3, 'two renewals of the second hold')
      const afterDelete = seen.slice(seen.indexOf('DELETE') + 1)
      assert.ok(!afterDelete.includes(value), `no SET of the first hold after the DELETE: ${afterDelete.join(', ')}`)
    } finally {
      await watching.close()
    }
  })

  it('Hold at most: a msg that never reaches a release loses its hold on output 2, with a warning naming node and lock; the next msg gets it', async () => {
    await helper.load(MODULES, [TAB, configNode(store.url), ...takeNodes({ name: 'forgetful', holdMs: '300' })])
    const take = helper.getNode('take')
    take.receive({ payload: 'first' })
    take.receive({ payload: 'second' })
    const first = await nextMessage(helper.getNode('taken'))
    assert.equal(first.payload, 'first')
    const lost = await nextMessage(helper.getNode('lost'), 3000)
    assert.deepEqual(
      { payload: lost.payload, acquired: lost.acquired, lost: lost.lost, reason: lost.reason },
      { payload: 'first', acquired: false, lost: true, reason: 'holdAtMost' },
    )
    const warnings = take.warn
      .getCalls()
      .filter((c) => c.thisValue === take)
      .map((c) => String(c.args[0]))
    // The test helper shows catalogue keys, not texts: the English text names __node__ and __name__.
    assert.deepEqual(warnings, [`${OWN}warn.holdAtMost`])
    const second = await nextMessage(helper.getNode('taken'))
    assert.equal(second.payload, 'second')
    assert.ok(Hlc.compare(Hlc.parse(String(second.fencingToken)), Hlc.parse(String(first.fencingToken))) > 0)
  })

  it('a write under a hold that has ended is refused (HoldEnded) and never sent; under a live hold it goes', async () => {
    await helper.load(MODULES, [
      TAB,
      configNode(store.url),
      ...takeNodes({ wires: [['taken'], []] }),
      ...freeNodes(),
      onTab({ id: 'write', type: 'ss-set', store: 'cfg', key: counter, keyType: 'str', wires: [['written']] }),
      onTab({ id: 'written', type: 'helper' }),
      ...catchNodes(),
    ])
    helper.getNode('take').receive({ payload: 1 })
    const held = await nextMessage(helper.getNode('taken'))
    helper.getNode('write').receive({ ...held })
    assert.equal((await nextMessage(helper.getNode('written'))).applied, true)
    helper.getNode('free').receive({ ...held })
    await nextMessage(helper.getNode('freed'))
    helper.getNode('write').receive({ ...held, payload: 2 })
    const caught = await nextMessage(helper.getNode('caught'))
    assert.equal((caught.error as { code: string }).code, 'HoldEnded')
    assert.equal((await other.get(counter)).value?.toString(), '1', 'the late write was not sent')
  })

  it('a hold made elsewhere (another runtime) is released by the value the msg carries, and only that value', async () => {
    await helper.load(MODULES, [TAB, configNode(store.url), ...freeNodes()])
    await other.set(lockName, 'elsewhere:0123456789ab', { expiryMs: 10_000 })
    helper.getNode('free').receive({
      lock: { name: lockName, holder: 'elsewhere', value: 'not-the-holder:ba9876543210', fencingToken: '' },
    })
    assert.equal((await nextMessage(helper.getNode('freed'))).released, false, 'another value releases nothing')
    assert.equal((await other.get(lockName)).value?.toString(), 'elsewhere:0123456789ab')
    helper
      .getNode('free')
      .receive({ lock: { name: lockName, holder: 'elsewhere', value: 'elsewhere:0123456789ab', fencingToken: '' } })
    assert.equal((await nextMessage(helper.getNode('freed'))).released, true)
    assert.equal((await other.get(lockName)).value, null)
  })

  it('a redeploy midway: the hold is released, the waiting msgs end quietly, the next deploy finds the lock free', async () => {
    const flow = [
      TAB,
      configNode(store.url),
      onTab({
        id: 'take',
        type: 'ss-lock',
        store: 'cfg',
        key: lockName,
        keyType: 'str',
        mode: 'lock',
        wires: [['taken'], ['refused']],
      }),
      onTab({ id: 'taken', type: 'helper' }),
      onTab({ id: 'refused', type: 'helper' }),
      ...catchNodes(),
    ]
    await helper.load(MODULES, flow)
    listen(helper.getNode('refused'), helper.getNode('caught'))
    for (let i = 0; i < 4; i++) helper.getNode('take').receive({ payload: i })
    assert.equal((await nextMessage(helper.getNode('taken'))).payload, 0)
    await helper.setFlows(flow, 'full')
    assert.equal((await other.get(lockName)).value, null, 'released when the node closed')
    helper.getNode('take').receive({ payload: 'after' })
    assert.equal((await nextMessage(helper.getNode('taken'))).payload, 'after')
    await noMessage(helper.getNode('caught'), 50)
  })

  // Found in review: the node's mode was set after it registered with its config node, which tells a
  // connection that is up already at once: a lock node added by a partial deploy failed to start.
  it('a lock node of each mode added by a partial deploy onto a connected store starts and works', async () => {
    const base = [
      TAB,
      configNode(store.url),
      onTab({
        id: 'first',
        type: 'ss-lock',
        store: 'cfg',
        key: `${lockName}-first`,
        keyType: 'str',
        mode: 'lease',
        wires: [[], []],
      }),
    ]
    await helper.load(MODULES, base)
    await until(() => lastStatus(helper.getNode('first')).fill === 'green', 'the store connected')
    const added = ['lease', 'lock', 'leader'].map((mode) =>
      onTab({
        id: mode,
        type: 'ss-lock',
        store: 'cfg',
        key: `${lockName}-${mode}`,
        keyType: 'str',
        mode,
        holder: mode,
        wires: [[`${mode}-ok`], []],
      }),
    )
    await helper.setFlows(
      [...base, ...added, ...['lease', 'lock', 'leader'].map((m) => onTab({ id: `${m}-ok`, type: 'helper' }))],
      'nodes',
    )
    listen(helper.getNode('leader-ok'))
    helper.getNode('lease').receive({})
    helper.getNode('lock').receive({})
    assert.equal((await nextMessage(helper.getNode('lease-ok'))).acquired, true)
    assert.equal((await nextMessage(helper.getNode('lock-ok'))).acquired, true)
    assert.equal((await nextMessage(helper.getNode('leader-ok'))).leader, true, 'the leader campaigns from the start')
  })

  it('a full queue refuses with LockQueueFull; the msgs already waiting keep their turn', async () => {
    await helper.load(MODULES, [
      TAB,
      configNode(store.url),
      ...takeNodes({ queue: '2' }),
      ...freeNodes(),
      ...catchNodes(),
    ])
    const take = helper.getNode('take')
    take.receive({ payload: 1 })
    const first = await nextMessage(helper.getNode('taken'))
    take.receive({ payload: 2 })
    take.receive({ payload: 3 })
    take.receive({ payload: 4 })
    const caught = await nextMessage(helper.getNode('caught'))
    assert.deepEqual(
      { code: (caught.error as { code: string }).code, payload: caught.payload },
      { code: 'LockQueueFull', payload: 4 },
    )
    helper.getNode('free').receive(first)
    const second = await nextMessage(helper.getNode('taken'))
    assert.equal(second.payload, 2)
    helper.getNode('free').receive(second)
    const third = await nextMessage(helper.getNode('taken'))
    assert.equal(third.payload, 3)
  })

  it('a hold taken over by someone else goes to output 2 with the reason', async () => {
    await helper.load(MODULES, [TAB, configNode(store.url), ...takeNodes({ leaseMs: '600' })])
    helper.getNode('take').receive({ payload: 'mine' })
    await nextMessage(helper.getNode('taken'))
    await other.set(lockName, 'intruder')
    const lost = await nextMessage(helper.getNode('lost'))
    assert.deepEqual(
      { payload: lost.payload, lost: lost.lost, reason: lost.reason },
      { payload: 'mine', lost: true, reason: 'lost' },
    )
    await until(() => lastStatus(helper.getNode('take')).text === `${COMMON}status.lost`, 'the status shows the loss')
  })
})

import assert from 'node:assert/strict'
import { StateStoreClient } from '../../../src/client'
import { Hlc } from '../../../src/hlc'
import {
  ALL,
  COMMON,
  flowWith,
  helper,
  lastStatus,
  listen,
  nextMessage,
  noMessage,
  onTab,
  startStore,
  statuses,
  type Store,
  useStore,
} from './support'
import type { StoreActivity } from '../../../src/observe'
import { scaled } from '../../support/deadline'
import { until } from '../../support/wait'

describe('nodes: ss-del', function () {
  const store = useStore()

  function flow(url: string) {
    return [
      ...flowWith(url, { id: 'del', type: 'ss-del', key: 'topic', keyType: 'msg' }),
      onTab({
        id: 'vdel',
        type: 'ss-del',
        store: 'cfg',
        key: 'topic',
        keyType: 'msg',
        mode: 'vdel',
        wires: [['out1']],
      }),
      onTab({ id: 'set', type: 'ss-set', store: 'cfg', key: 'topic', keyType: 'msg', wires: [['setOut']] }),
      onTab({ id: 'setOut', type: 'helper' }),
    ]
  }
  async function set(msg: Record<string, unknown>) {
    const w = nextMessage(helper.getNode('setOut'))
    helper.getNode('set').receive(msg)
    return w
  }
  async function run(id: string, msg: Record<string, unknown>) {
    const out = nextMessage(helper.getNode('out1'))
    helper.getNode(id).receive(msg)
    return out
  }

  it('deletes a key (1), then finds nothing to delete (0)', async () => {
    await helper.load(ALL, flow(store.url))
    await set({ topic: 'd1', payload: 'x' })
    const first = await run('del', { topic: 'd1', payload: 'kept' })
    assert.equal(first.deleted, 1)
    assert.equal(first.payload, 'kept')
    assert.equal(first.key, 'd1', 'the key it deleted stays on the msg')
    assert.equal(lastStatus(helper.getNode('del')).text, `${COMMON}status.deleted`)
    assert.equal((await run('del', { topic: 'd1' })).deleted, 0)
    assert.equal(lastStatus(helper.getNode('del')).text, `${COMMON}status.notFound`)
  })

  it('deletes only if the value equals (VDEL): -1 on a different value, 1 on the same', async () => {
    await helper.load(ALL, flow(store.url))
    await set({ topic: 'd2', payload: { owner: 'me' } })
    assert.equal((await run('vdel', { topic: 'd2', payload: { owner: 'you' } })).deleted, -1)
    assert.equal(lastStatus(helper.getNode('vdel')).text, `${COMMON}status.mismatch`)
    assert.equal(
      (await run('vdel', { topic: 'd2', payload: { owner: 'me' } })).deleted,
      1,
      'the value encodes the way ss-set wrote it',
    )
    assert.equal((await run('vdel', { topic: 'd2', payload: { owner: 'me' } })).deleted, 0)
  })

  it('honours fencing tokens on delete', async () => {
    await helper.load(ALL, flow(store.url))
    const now = Date.now()
    await set({ topic: 'd3', payload: 1, fencingToken: new Hlc(now, 3, 'b').toString() })
    const caught = nextMessage(helper.getNode('caught'))
    helper.getNode('del').receive({ topic: 'd3', fencingToken: new Hlc(now - 10, 0, 'a').toString() })
    assert.equal(((await caught).error as { code: string }).code, 'FencingTokenLowerVersion')
    assert.equal((await run('del', { topic: 'd3', fencingToken: new Hlc(now, 4, 'b').toString() })).deleted, 1)
  })
})

describe('nodes: ss-watch', function () {
  let store: Store
  let other: StateStoreClient
  before(async () => {
    store = await startStore()
    other = new StateStoreClient({ brokerUrl: store.emulator.brokerUrl, clientId: 'watch-test-writer' })
    await other.ready({ timeoutMs: 3000 })
  })
  after(async () => {
    await other.close()
    await store.stop()
  })
  afterEach(() => helper.unload())

  async function watching(id: string, n: number) {
    await until(
      () => lastStatus(helper.getNode(id)).text === `${COMMON}status.watching ${n}`,
      `${id} watching ${n} key(s)`,
    )
  }

  it('sends one msg per change of each configured key: SET with the value, DELETE with undefined', async () => {
    await helper.load(
      ALL,
      flowWith(store.url, { id: 'watch', type: 'ss-watch', keys: 'w/a\n\n w/b \n', decode: 'auto' }),
    )
    const out = helper.getNode('out1')
    listen(out)
    await watching('watch', 2)
    const set = await other.set('w/a', JSON.stringify({ celsius: 21.5 }))
    let m = await nextMessage(out)
    assert.deepEqual(
      { topic: m.topic, payload: m.payload, operation: m.operation, version: m.version, reconciled: m.reconciled },
      {
        topic: 'w/a',
        payload: { celsius: 21.5 },
        operation: 'SET',
        version: set.version.toString(),
        reconciled: false,
      },
    )
    await other.set('w/b', Buffer.from([0xff, 0x00]))
    m = await nextMessage(out)
    assert.equal(m.topic, 'w/b')
    assert.deepEqual(m.payload, Buffer.from([0xff, 0x00]))
    await other.del('w/a')
    m = await nextMessage(out)
    assert.equal(m.topic, 'w/a')
    assert.equal(m.operation, 'DELETE')
    assert.equal(m.payload, undefined)
    await other.set('w/unwatched', 'x')
    await noMessage(out, 200)
  })

  it('shows a backlog: a link to the runtime that stalls for 1.5 s makes the status say how far behind, the sidebar too, and it clears once caught up', async () => {
    await helper.load(ALL, flowWith(store.url, { id: 'watch', type: 'ss-watch', keys: 'lag/a', decode: 'utf8' }))
    const out = helper.getNode('out1')
    listen(out)
    await watching('watch', 1)
    // A first change on a free link: the delay every later one is measured against.
    await other.set('lag/a', 'before')
    assert.equal((await nextMessage(out)).payload, 'before')
    const activity = (helper.getNode('cfg') as unknown as { activity: StoreActivity }).activity
    assert.ok(activity.metrics.figures().behindMs! < 1000, 'nothing behind yet')
    // The runtime's link stalls while the store goes on changing the key (a busy runtime, a slow
    // network, a broker queue as the cluster holds it): the notifications wait on the way.
    store.proxy.freeze()
    const stalled = Date.now()
    for (let i = 0; i < 5; i++) await other.set('lag/a', `during ${i}`)
    await until(() => Date.now() - stalled >= 1500, 'the link stalled 1.5 s')
    store.proxy.thaw()
    for (let i = 0; i < 5; i++)
      assert.equal((await nextMessage(out, scaled(5000))).payload, `during ${i}`, 'every change arrives, in order')
    const behind = statuses(helper.getNode('watch'))
      .map((s) => /status\.behind (\d+) s$/.exec(s.text ?? ''))
      .filter((m) => m !== null)
    assert.ok(
      behind.length > 0,
      `a status said how far behind: ${JSON.stringify(statuses(helper.getNode('watch')).slice(-6))}`,
    )
    assert.ok(Number(behind[0]![1]) >= 1)
    assert.equal(statuses(helper.getNode('watch')).find((s) => s.text?.includes('status.behind'))!.fill, 'yellow')
    const figures = activity.metrics.figures()
    assert.ok(figures.maxBehindMs! >= 1000, `the sidebar's figure: ${JSON.stringify(figures)}`)
    assert.ok(activity.watches.get('lag/a')!.behindMs !== null)
    // Caught up: the next change is on time again, and the status says what changed.
    await other.set('lag/a', 'after')
    assert.equal((await nextMessage(out)).payload, 'after')
    assert.equal(lastStatus(helper.getNode('watch')).text, `${COMMON}status.changed lag/a`)
    assert.ok(activity.metrics.figures().behindMs! < 1000)
  })

  it('adds and removes keys at run time with msg.action and msg.topic (a key or a list)', async () => {
    await helper.load(ALL, flowWith(store.url, { id: 'watch', type: 'ss-watch', keys: '', decode: 'utf8' }))
    const out = helper.getNode('out1')
    listen(out)
    const node = helper.getNode('watch')
    node.receive({ action: 'watch', topic: ['rt/1', 'rt/2'] })
    await watching('watch', 2)
    await other.set('rt/2', 'two')
    assert.equal((await nextMessage(out)).payload, 'two')
    node.receive({ action: 'unwatch', topic: 'rt/2' })
    await watching('watch', 1)
    await other.set('rt/2', 'again')
    await other.set('rt/1', 'one')
    const m = await nextMessage(out)
    assert.equal(m.topic, 'rt/1', 'rt/2 is no longer watched')
    assert.equal(m.payload, 'one')
  })

  it('emits the current value of each existing key when it starts, if asked', async () => {
    await other.set('init/a', '"set-point"')
    await other.del('init/b')
    await helper.load(
      ALL,
      flowWith(store.url, { id: 'watch', type: 'ss-watch', keys: 'init/a\ninit/b', decode: 'json', initial: true }),
    )
    const out = helper.getNode('out1')
    listen(out)
    const m = await nextMessage(out)
    assert.deepEqual(
      { topic: m.topic, payload: m.payload, operation: m.operation, initial: m.initial },
      { topic: 'init/a', payload: 'set-point', operation: 'SET', initial: true },
    )
    await noMessage(out, 200)
  })

  it('refuses watch/unwatch msgs when overrides are refused', async () => {
    await helper.load(ALL, flowWith(store.url, { id: 'watch', type: 'ss-watch', keys: 'x', overrides: false }))
    const c = nextMessage(helper.getNode('caught'))
    helper.getNode('watch').receive({ action: 'watch', topic: 'y' })
    assert.equal(((await c).error as { code: string }).code, 'ControlRefused')
  })

  it('shows "watching N" again after a reconnect, not "connected"', async () => {
    await helper.load(ALL, flowWith(store.url, { id: 'watch', type: 'ss-watch', keys: 'rs/a\nrs/b\nrs/c' }))
    await watching('watch', 3)
    store.proxy.refusing = true
    store.proxy.dropAll()
    await until(() => lastStatus(helper.getNode('watch')).fill !== 'green', 'the node to show the lost connection')
    store.proxy.refusing = false
    await watching('watch', 3)
  })

  it('recovers changes made while disconnected, marked reconciled, and keeps watching', async () => {
    await helper.load(ALL, flowWith(store.url, { id: 'watch', type: 'ss-watch', keys: 'rc/key', decode: 'utf8' }))
    const out = helper.getNode('out1')
    listen(out)
    await watching('watch', 1)
    store.proxy.refusing = true
    store.proxy.dropAll()
    await until(() => lastStatus(helper.getNode('watch')).fill !== 'green', 'the node to show the lost connection')
    await other.set('rc/key', 'changed while away')
    store.proxy.refusing = false
    const m = await nextMessage(out, 8000)
    assert.deepEqual(
      { topic: m.topic, payload: m.payload, operation: m.operation, reconciled: m.reconciled },
      { topic: 'rc/key', payload: 'changed while away', operation: 'SET', reconciled: true },
    )
    await until(() => lastStatus(helper.getNode('watch')).fill === 'green', 'reconnected')
    await other.set('rc/key', 'live again')
    const live = await nextMessage(out)
    assert.equal(live.payload, 'live again')
    assert.equal(live.reconciled, false)
  })
})

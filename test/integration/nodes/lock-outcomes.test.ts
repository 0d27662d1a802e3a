/**
 * What a lock node tells while msgs wait, give up and release, as a user meets it in the flow: a msg
 * dropped between acquire and release with the default settings, a msg that gives up behind another
 * hold (who holds it, since how long, once in the log), the status while no hold exists, and a
 * store that cannot be reached at all.
 */
import assert from 'node:assert/strict'
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

const OWN = 'node-red-contrib-aio-statestore/ss-lock:ss-lock.'
let round = 0
let lockName = ''

/** A lock-mode node `<id>` on this test's lock name, output 1 to `<id>-ok`, output 2 to `<id>-no`. */
function lockNodes(id: string, settings: Record<string, unknown> = {}): unknown[] {
  return [
    onTab({
      id,
      type: 'ss-lock',
      store: 'cfg',
      key: lockName,
      keyType: 'str',
      mode: 'lock',
      action: 'acquire',
      wires: [[`${id}-ok`], [`${id}-no`]],
      ...settings,
    }),
    onTab({ id: `${id}-ok`, type: 'helper' }),
    onTab({ id: `${id}-no`, type: 'helper' }),
  ]
}

/** A release node as dropped from the palette, into `freed`; a Catch node for the tab, into `caught`. */
function releaseAndCatch(): unknown[] {
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
    onTab({ id: 'catcher', type: 'catch', scope: null, uncaught: false, wires: [['caught']] }),
    onTab({ id: 'caught', type: 'helper' }),
  ]
}

const warnings = (id: string): string[] => {
  const node = helper.getNode(id)
  return node.warn
    .getCalls()
    .filter((c) => c.thisValue === node)
    .map((c) => String(c.args[0]))
}

describe('nodes: ss-lock tells what is happening', function () {
  this.timeout(60000)
  let store: Store
  before(async () => {
    store = await startStore()
  })
  after(() => store.stop())
  beforeEach(() => {
    round += 1
    lockName = `told-lock-${round}`
  })
  afterEach(() => helper.unload())

  it('with the default settings a msg dropped while holding blocks the next one for less than the next one waits', async () => {
    // Blank Wait up to and Hold at most: the defaults. The first msg's output goes nowhere (dropped).
    const nodes = lockNodes('take', { timeout: '', holdMs: '', wires: [['first-only'], ['take-no']] })
    await helper.load(ALL, [TAB, configNode(store.url), ...nodes, onTab({ id: 'first-only', type: 'helper' })])
    listen(helper.getNode('take-no'))
    const take = helper.getNode('take')
    const first = nextMessage(helper.getNode('first-only'), 20000)
    take.receive({ payload: 'dropped' })
    assert.equal((await first).payload, 'dropped')
    const second = nextMessage(helper.getNode('first-only'), 45000)
    take.receive({ payload: 'next' })
    // The dropped msg's hold ends after Hold at most (output 2, lost), and the next msg gets the lock
    // on output 1: it did not give up first.
    const lost = await nextMessage(helper.getNode('take-no'), 45000)
    assert.deepEqual({ payload: lost.payload, reason: lost.reason }, { payload: 'dropped', reason: 'holdAtMost' })
    const got = await second
    assert.deepEqual({ payload: got.payload, acquired: got.acquired }, { payload: 'next', acquired: true })
    assert.deepEqual(warnings('take'), [`${OWN}warn.holdAtMost`])
  })

  it('a msg that gives up says who holds the lock and since how long, in msg, status and the log once', async () => {
    await helper.load(ALL, [
      TAB,
      configNode(store.url),
      ...lockNodes('a', { holder: 'A' }),
      ...lockNodes('c', { holder: 'C', timeout: '300' }),
      ...releaseAndCatch(),
    ])
    const held = await (async () => {
      const out = nextMessage(helper.getNode('a-ok'))
      helper.getNode('a').receive({ payload: 'holding' })
      return out
    })()
    const heldAt = Date.now()
    const c = helper.getNode('c')
    const refused: Array<Record<string, unknown>> = []
    for (const payload of ['one', 'two']) {
      const out = nextMessage(helper.getNode('c-no'), 10000)
      c.receive({ payload })
      refused.push(await out)
    }
    const value = (held.lock as { value: string }).value
    for (const r of refused) {
      assert.equal(r.acquired, false)
      assert.equal(r.holder, value, 'the hold that blocks it: holder name and session')
      assert.equal(typeof r.heldMs, 'number')
      assert.ok((r.heldMs as number) >= 300, `held at least as long as the msg waited: ${String(r.heldMs)}`)
    }
    // Held since the first msg acquired: the second refusal reports a longer hold, never more than measured here.
    assert.ok((refused[1]!.heldMs as number) > (refused[0]!.heldMs as number))
    assert.ok((refused[1]!.heldMs as number) <= Date.now() - heldAt + 1000)
    const status = lastStatus(c)
    assert.equal(status.fill, 'yellow', 'not acquired is never green')
    assert.equal(status.text, `${COMMON}status.notAcquired ${OWN}status.heldBy`)
    assert.deepEqual(
      warnings('c'),
      [`${OWN}warn.gaveUp`],
      'logged once for the hold, however many msgs give up behind it',
    )
  })

  it('"acquired" shows only while a hold of the node exists: a release from another node ends it', async () => {
    await helper.load(ALL, [TAB, configNode(store.url), ...lockNodes('take'), ...releaseAndCatch()])
    const held = nextMessage(helper.getNode('take-ok'))
    helper.getNode('take').receive({ payload: 1 })
    const msg = await held
    assert.equal(lastStatus(helper.getNode('take')).text, `${COMMON}status.acquired`)
    const freed = nextMessage(helper.getNode('freed'))
    helper.getNode('free').receive(msg)
    assert.equal((await freed).released, true)
    await until(
      () => lastStatus(helper.getNode('take')).text !== `${COMMON}status.acquired`,
      'the lock node no longer says acquired',
    )
    assert.equal(lastStatus(helper.getNode('take')).text, `${COMMON}status.released`)
  })

  it('"lost" and "nothing released" are never green', async () => {
    await helper.load(ALL, [TAB, configNode(store.url), ...lockNodes('take', { holdMs: '200' }), ...releaseAndCatch()])
    const held = nextMessage(helper.getNode('take-ok'))
    helper.getNode('take').receive({ payload: 1 })
    const msg = await held
    const lost = await nextMessage(helper.getNode('take-no'), 5000)
    assert.equal(lost.reason, 'holdAtMost')
    const shown = statuses(helper.getNode('take')).find((s) => s.text === `${COMMON}status.lost`)
    assert.equal(shown?.fill, 'yellow')
    const freed = nextMessage(helper.getNode('freed'))
    helper.getNode('free').receive(msg)
    assert.equal((await freed).released, false)
    assert.deepEqual(lastStatus(helper.getNode('free')), {
      fill: 'yellow',
      shape: 'dot',
      text: `${OWN}status.notReleased`,
    })
  })

  it('with the store unreachable for the whole wait a msg fails NotConnected to Catch, not "not acquired"', async () => {
    store.proxy.refusing = true
    store.proxy.dropAll()
    try {
      await helper.load(ALL, [
        TAB,
        configNode(store.url),
        ...lockNodes('take', { timeout: '1000' }),
        ...releaseAndCatch(),
      ])
      listen(helper.getNode('take-no'))
      const caught = nextMessage(helper.getNode('caught'), 20000)
      helper.getNode('take').receive({ payload: 'waiting' })
      const got = await caught
      assert.equal((got.error as { code: string }).code, 'NotConnected')
      assert.equal(got.payload, 'waiting')
      await noMessage(helper.getNode('take-no'), 100)
    } finally {
      store.proxy.refusing = false
    }
  })
})

import assert from 'node:assert/strict'
import {
  ALL,
  COMMON,
  configNode,
  helper,
  lastStatus,
  listen,
  nextMessage,
  noMessage,
  onTab,
  TAB,
  useStore,
  withClient,
} from './support'
import { until } from '../../support/wait'

/**
 * *watch keys* and globs. The state store notifies changes of single keys (KEYNOTIFY takes no
 * pattern), so a key such as `t6/watch/*` would be registered as that literal key and never fire.
 * The node refuses one: at deploy with a red status and a warning, in a `watch` msg with
 * PatternNotWatchable. A sentinel watch node on a plain key shows the changes have been notified,
 * so "no msg" is an event, not a sleep.
 */
describe('nodes: ss-watch refuses key patterns', function () {
  const store = useStore()

  const flow = (keys: string) => [
    TAB,
    configNode(store.url),
    onTab({
      id: 'pattern',
      type: 'ss-watch',
      store: 'cfg',
      keys,
      decode: 'auto',
      initial: false,
      overrides: true,
      wires: [['patternOut']],
    }),
    onTab({ id: 'patternOut', type: 'helper' }),
    onTab({
      id: 'sentinel',
      type: 'ss-watch',
      store: 'cfg',
      keys: 't6/sentinel',
      decode: 'auto',
      initial: false,
      overrides: true,
      wires: [['sentinelOut']],
    }),
    onTab({ id: 'sentinelOut', type: 'helper' }),
    onTab({ id: 'catcher', type: 'catch', scope: null, uncaught: false, wires: [['caught']] }),
    onTab({ id: 'caught', type: 'helper' }),
  ]
  const warnings = (id: string): string[] =>
    helper
      .getNode(id)
      .warn.getCalls()
      .filter((c) => c.thisValue === helper.getNode(id))
      .map((c) => String(c.args[0]))
  const sentinelWatching = () =>
    until(() => lastStatus(helper.getNode('sentinel')).text === `${COMMON}status.watching 1`, 'the sentinel watching')

  /** Changes `keys`, then the sentinel's key: once the sentinel's msg is in, any msg for `keys` would be too. */
  async function changeThenSentinel(keys: string[]): Promise<void> {
    await withClient(store.url, async (c) => {
      const seen = nextMessage(helper.getNode('sentinelOut'))
      for (const key of keys) await c.set(key, Buffer.from(`value of ${key}`))
      await c.set('t6/sentinel', Buffer.from('after'))
      assert.equal((await seen).payload, 'after')
    })
  }

  it('a configured t6/watch/* is refused at deploy: red status, a warning naming it, and nothing watched', async () => {
    await helper.load(ALL, flow('t6/watch/*\nt6/plain'))
    listen(helper.getNode('patternOut'))
    await sentinelWatching()
    const status = lastStatus(helper.getNode('pattern'))
    assert.deepEqual(
      status,
      { fill: 'red', shape: 'ring', text: `${COMMON}status.patternRefused` },
      'the status stays on the refusal once connected',
    )
    const warned = warnings('pattern')
    assert.equal(warned.length, 1)
    assert.ok(warned[0]!.includes(`${COMMON}errors.patternNotWatchable`), warned[0])
    await changeThenSentinel(['t6/watch/a', 't6/watch/b', 't6/watch/*', 't6/plain'])
    await assertNoMsg('patternOut')
  })

  it('a watch msg with a pattern fails PatternNotWatchable to Catch, registers none of its keys, and the node keeps working', async () => {
    await helper.load(ALL, flow(''))
    listen(helper.getNode('patternOut'))
    await sentinelWatching()
    for (const topic of ['t6/watch/*', 't6/watch/?', ['t6/ok', 't6/watch/[ab]']]) {
      const caught = nextMessage(helper.getNode('caught'))
      helper.getNode('pattern').receive({ action: 'watch', topic, payload: 'kept' })
      const c = await caught
      assert.equal((c.error as { code: string }).code, 'PatternNotWatchable')
      assert.equal(c.payload, 'kept')
    }
    assert.equal(lastStatus(helper.getNode('pattern')).fill, 'red')
    await changeThenSentinel(['t6/ok', 't6/watch/a'])
    await assertNoMsg('patternOut')
    // A plain key still works after the refusals.
    helper.getNode('pattern').receive({ action: 'watch', topic: 't6/ok' })
    await until(() => lastStatus(helper.getNode('pattern')).text === `${COMMON}status.watching 1`, 'watching t6/ok')
    const seen = nextMessage(helper.getNode('patternOut'))
    await withClient(store.url, (c) => c.set('t6/ok', Buffer.from('"now"')))
    assert.equal((await seen).topic, 't6/ok')
  })

  /** No msg has reached the helper node since the test began listening (the sentinel's msg came after the changes). */
  const assertNoMsg = (id: string) => noMessage(helper.getNode(id), 0)
})

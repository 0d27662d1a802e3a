import assert from 'node:assert/strict'
import { onTab, injectTopic, debugOf, withNodeRed } from '../../support/node-red-fixture'
import { debugValue } from '../../support/node-red-comms'

const TAIL = '($f := function($n){ $f($n+1) }; $f(0))'
const DEEP = '($f := function($n){ 1 + $f($n+1) }; $f(0))'

/**
 * One msg through *update key* with a runaway JSONata expression (a tail recursion, which JSONata
 * never overflows) stalled every HTTP request of Node-RED for over nine minutes and ignored SIGTERM.
 * In a real runtime (its own process): the expression fails with a code of its own, nothing is
 * written, the admin API answers while a long one runs, and SIGTERM stops the runtime by itself.
 */
describe('security: a runaway update key expression cannot hold Node-RED', function () {
  this.timeout(120_000)
  const runtime = withNodeRed({ name: 'runaway', flows })

  async function caughtCode(key: string, seen: number): Promise<string> {
    const d = await runtime.comms.waitFor(
      (all) => all.slice(seen).find((m) => m.id === 'caught' && m.topic === key),
      60_000,
      `the Catch node's msg for ${key}`,
    )
    return debugValue(d) as string
  }

  it('a tail recursion fails with ExpressionTimeout and writes nothing; the node then counts again', async () => {
    const seen = runtime.comms.debug.length
    await runtime.inject('go-tail')
    assert.equal(await caughtCode('runaway/tail', seen), 'ExpressionTimeout')
    assert.equal((await runtime.client.get('runaway/tail')).value, null, 'nothing written')
    assert.equal((await runtime.client.get('runaway/tail.lock')).value, null, 'the lock is free')
    const next = runtime.comms.debug.length
    await runtime.inject('go-count')
    const out = await runtime.comms.waitFor(
      (all) => all.slice(next).find((m) => m.id === 'out'),
      30_000,
      'the counter’s msg',
    )
    assert.equal(debugValue(out), 1)
  })

  it('a recursion that is not a tail call fails with ExpressionTooDeep', async () => {
    const seen = runtime.comms.debug.length
    await runtime.inject('go-deep')
    assert.equal(await caughtCode('runaway/deep', seen), 'ExpressionTooDeep')
    assert.equal((await runtime.client.get('runaway/deep')).value, null, 'nothing written')
  })

  it('while a runaway with a long time limit runs, /settings answers, and SIGTERM stops the runtime by itself', async () => {
    const seen = runtime.comms.debug.length
    await runtime.inject('go-long')
    // The inject wires its msg to the update node and to this debug node alike.
    await runtime.comms.waitFor(
      (all) => all.slice(seen).find((m) => m.id === 'started'),
      30_000,
      'the runaway to start',
    )
    for (let i = 0; i < 5; i++) assert.equal((await fetch(`${runtime.red.url}/settings`)).status, 200)
    const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
      const child = (runtime.red as unknown as { child: import('node:child_process').ChildProcess }).child
      child.once('exit', (exitCode, signal) => resolve({ code: exitCode, signal }))
    })
    process.kill(runtime.red.pid!, 'SIGTERM')
    // NodeRedChild.stop() would SIGKILL after 10 s: here the runtime must end on SIGTERM alone.
    const outcome = await exited
    assert.deepEqual(outcome, { code: 0, signal: null }, runtime.red.log)
  })
})

function flows(broker: string): unknown[] {
  const update = (id: string, key: string, expression: string, exprTimeout: number) => ({
    id,
    type: 'ss-update',
    z: 'tab',
    store: 'cfg',
    key,
    keyType: 'str',
    expression,
    initial: '0',
    initialType: 'num',
    exprTimeout: String(exprTimeout),
    timeout: '600000',
    wires: [['out']],
  })
  return [
    { id: 'tab', type: 'tab', label: 'runaway' },
    { id: 'cfg', type: 'ss-config', name: 'store', broker, clientId: 'runaway-red' },
    ...[
      injectTopic('go-tail', 'runaway/tail', ['u-tail']),
      injectTopic('go-deep', 'runaway/deep', ['u-deep']),
      injectTopic('go-long', 'runaway/long', ['u-long', 'started']),
      injectTopic('go-count', 'runaway/count', ['u-count']),
      update('u-tail', 'runaway/tail', TAIL, 300),
      update('u-deep', 'runaway/deep', DEEP, 600_000),
      update('u-long', 'runaway/long', TAIL, 600_000),
      update('u-count', 'runaway/count', 'value + 1', 1000),
      { id: 'catcher', type: 'catch', z: 'tab', scope: null, uncaught: false, wires: [['caught']] },
      debugOf('caught', 'error.code'),
      debugOf('started', 'topic'),
      debugOf('out', 'payload'),
    ].map(onTab),
  ]
}

import assert from 'node:assert/strict'
import { onTab, injectTopic, debugOf, withNodeRed } from '../../support/node-red-fixture'
import { debugValue } from '../../support/node-red-comms'
import { scaled } from '../../support/deadline'

/**
 * *update key*'s time bound looked at the clock between expression steps only, and one built-in
 * call is one step: `$match(value, /^(a+)+$/)` over a value whoever may write the key chooses held
 * Node-RED for 12.6 s, `$split` of a 40 MB value for 10.5 s. In a real runtime: the regex matches
 * in linear time, a value over the input bound fails with ValueTooLarge before the expression sees
 * it, both reach the Catch node, and `/settings` answers within 0.2 s (scaled) all along.
 */
describe('security: a built-in call in update key cannot hold Node-RED', function () {
  this.timeout(120_000)
  const runtime = withNodeRed({ name: 'builtins', flows })

  /** Injects `id` and probes /settings, each answer due within 0.2 s (scaled), until a debug node shows the msg of `key`. */
  async function attack(id: string, key: string, debugId: string): Promise<{ value: unknown; probes: number }> {
    const seen = runtime.comms.debug.length
    const res = await fetch(`${runtime.red.url}/inject/${id}`, { method: 'POST' })
    assert.equal(res.status, 200, `inject ${id}`)
    const outcome = runtime.comms.waitFor(
      (all) => all.slice(seen).find((m) => m.id === debugId && m.topic === key),
      60_000,
      `the msg of ${key} at ${debugId}`,
    )
    let done = false
    void outcome.then(
      () => (done = true),
      () => (done = true),
    )
    let probes = 0
    while (!done) {
      const probe = await fetch(`${runtime.red.url}/settings`, { signal: AbortSignal.timeout(scaled(200)) })
      assert.equal(probe.status, 200)
      probes++
    }
    return { value: debugValue(await outcome), probes }
  }

  it('$match(value, /^(a+)+$/) over 40 a and a "!" answers at once, and /settings all along', async () => {
    await runtime.client.set('builtin/regex', 'a'.repeat(40) + '!')
    const { value, probes } = await attack('go-regex', 'builtin/regex', 'out')
    assert.equal(value, 0)
    assert.ok(probes >= 1)
  })

  it('a value over the input bound fails with ValueTooLarge at the Catch node, and nothing is written', async () => {
    const big = 'x,'.repeat(1024 * 1024)
    await runtime.client.set('builtin/split', big)
    const { value } = await attack('go-split', 'builtin/split', 'caught')
    assert.equal(value, 'ValueTooLarge')
    assert.equal((await runtime.client.get('builtin/split')).value?.length, big.length, 'the value is as it was')
  })
})

function flows(broker: string): unknown[] {
  const update = (id: string, key: string, expression: string) => ({
    id,
    type: 'ss-update',
    z: 'tab',
    store: 'cfg',
    key,
    keyType: 'str',
    expression,
    initial: '""',
    initialType: 'json',
    exprTimeout: '600000',
    timeout: '600000',
    wires: [['out']],
  })
  return [
    { id: 'tab', type: 'tab', label: 'builtins' },
    { id: 'cfg', type: 'ss-config', name: 'store', broker, clientId: 'builtins-red' },
    ...[
      injectTopic('go-regex', 'builtin/regex', ['u-regex']),
      injectTopic('go-split', 'builtin/split', ['u-split']),
      update('u-regex', 'builtin/regex', '$count($match(value, /^(a+)+$/))'),
      update('u-split', 'builtin/split', '$count($split(value, ","))'),
      { id: 'catcher', type: 'catch', z: 'tab', scope: null, uncaught: false, wires: [['caught']] },
      debugOf('caught', 'error.code'),
      debugOf('out', 'payload'),
    ].map(onTab),
  ]
}

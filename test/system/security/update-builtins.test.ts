import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  FROM_WORKING_TREE,
  RED_JS,
  runtimeSettings,
  startNodeRed,
  writeSettings,
  type NodeRedChild,
} from '../../../dev/node-red'
import { freePort } from '../../../dev/ports'
import { StateStoreClient } from '../../../src/client'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { Comms, debugValue } from '../smoke/node-red'
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
  let work = ''
  let emulator: Emulator
  let red: NodeRedChild
  let comms: Comms
  let code: StateStoreClient

  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'aio-ss-builtins-'))
    emulator = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, logLevel: 'error' })
    code = new StateStoreClient({ brokerUrl: emulator.brokerUrl, clientId: 'builtins-test' })
    await code.ready({ timeoutMs: 10_000 })
    const settingsFile = join(work, 'settings.js')
    writeSettings(settingsFile, runtimeSettings({ ...FROM_WORKING_TREE, credentialSecret: 'builtins-test' }))
    writeFileSync(join(work, 'flows.json'), JSON.stringify(flows(emulator.brokerUrl)))
    red = await startNodeRed({
      redJs: RED_JS[5],
      userDir: work,
      port: await freePort(),
      settingsFile,
      ready: async (url, log) => (await fetch(`${url}/settings`)).ok && log.includes('connected to the state store'),
    })
    comms = new Comms(red.url.replace('http://', 'ws://') + '/comms')
    await comms.open()
  })

  after(async () => {
    comms?.close()
    await red?.stop()
    await code?.close()
    await emulator?.stop()
    if (work) rmSync(work, { recursive: true, force: true })
  })

  /** Injects `id` and probes /settings, each answer due within 0.2 s (scaled), until a debug node shows the msg of `key`. */
  async function attack(id: string, key: string, debugId: string): Promise<{ value: unknown; probes: number }> {
    const seen = comms.debug.length
    const res = await fetch(`${red.url}/inject/${id}`, { method: 'POST' })
    assert.equal(res.status, 200, `inject ${id}`)
    const outcome = comms.waitFor(
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
      const probe = await fetch(`${red.url}/settings`, { signal: AbortSignal.timeout(scaled(200)) })
      assert.equal(probe.status, 200)
      probes++
    }
    return { value: debugValue(await outcome), probes }
  }

  it('$match(value, /^(a+)+$/) over 40 a and a "!" answers at once, and /settings all along', async () => {
    await code.set('builtin/regex', 'a'.repeat(40) + '!')
    const { value, probes } = await attack('go-regex', 'builtin/regex', 'out')
    assert.equal(value, 0)
    assert.ok(probes >= 1)
  })

  it('a value over the input bound fails with ValueTooLarge at the Catch node, and nothing is written', async () => {
    const big = 'x,'.repeat(1024 * 1024)
    await code.set('builtin/split', big)
    const { value } = await attack('go-split', 'builtin/split', 'caught')
    assert.equal(value, 'ValueTooLarge')
    assert.equal((await code.get('builtin/split')).value?.length, big.length, 'the value is as it was')
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
  const inject = (id: string, topic: string, wires: string[]) => ({
    id,
    type: 'inject',
    z: 'tab',
    topic,
    props: [{ p: 'topic', vt: 'str' }],
    wires: [wires],
  })
  // Flow nodes need x/y: the runtime takes a node without them for a config node.
  const onTab = (n: Record<string, unknown>) => ({ x: 100, y: 100, ...n })
  return [
    { id: 'tab', type: 'tab', label: 'builtins' },
    { id: 'cfg', type: 'ss-config', name: 'store', broker, clientId: 'builtins-red' },
    ...[
      inject('go-regex', 'builtin/regex', ['u-regex']),
      inject('go-split', 'builtin/split', ['u-split']),
      update('u-regex', 'builtin/regex', '$count($match(value, /^(a+)+$/))'),
      update('u-split', 'builtin/split', '$count($split(value, ","))'),
      { id: 'catcher', type: 'catch', z: 'tab', scope: null, uncaught: false, wires: [['caught']] },
      { id: 'caught', type: 'debug', z: 'tab', active: true, tosidebar: true, complete: 'error.code', wires: [] },
      { id: 'out', type: 'debug', z: 'tab', active: true, tosidebar: true, complete: 'payload', wires: [] },
    ].map(onTab),
  ]
}

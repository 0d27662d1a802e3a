// A Function node that lists this package in its Modules uses the config node's connection, in a
// real Node-RED runtime: its user directory has the package in node_modules (a link to this working
// tree, as `npm install` of a local package makes) and in package.json, as the palette manager leaves it.
import assert from 'node:assert/strict'
import { mkdtempSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from '../../../dev/ports'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { TcpRelay } from '../../support/relay'
import { until } from '../../support/wait'
import { Comms, debugValue, NodeRedProcess, RED_JS, repoRoot, writeSettings } from './node-red'

const FUNCTION_CODE = `
const store = aio.stateStore(msg.store);
await store.set('fn/greeting', msg.payload);
const got = await store.get('fn/greeting');
const lock = await store.lock('fn/lock');
await lock.edit('fn/counter', (current) => String(Number(current ?? 0) + 1));
const counter = await store.get('fn/counter');
return { payload: { greeting: got.value.toString(), version: got.version.toString(), counter: counter.value.toString() } };
`

const FAILING_CODE = `
try {
  aio.stateStore('no such store');
} catch (err) {
  return { payload: { name: err.name, kind: err.kind } };
}
`

describe('smoke: the client in a Function node', function () {
  this.timeout(60_000)
  let work = ''
  let emulator: Emulator
  let relay: TcpRelay
  let red: NodeRedProcess
  let comms: Comms

  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'aio-ss-function-'))
    const userDir = join(work, 'user')
    mkdirSync(join(userDir, 'node_modules'), { recursive: true })
    symlinkSync(repoRoot, join(userDir, 'node_modules', 'node-red-contrib-aio-statestore'), 'dir')
    writeFileSync(
      join(userDir, 'package.json'),
      JSON.stringify({
        name: 'node-red-project',
        private: true,
        dependencies: { 'node-red-contrib-aio-statestore': '*' },
      }),
    )
    emulator = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, logLevel: 'error' })
    relay = await TcpRelay.start(emulator.brokerUrl)
    writeSettings(join(work, 'settings.js'))
    red = new NodeRedProcess(RED_JS[5], userDir, await freePort(), join(work, 'settings.js'))
    await red.start(30_000)
    comms = await red.comms()
  })

  after(async () => {
    comms?.close()
    await red?.stop()
    await relay?.stop()
    await emulator?.stop()
    if (work) rmSync(work, { recursive: true, force: true })
  })

  it('sets and gets through the config node’s connection, a lock edit too, with one connection for the runtime', async () => {
    await red.deploy(flow('function-smoke'), comms)
    for (const round of [1, 2])
      assert.equal((await runOnce(round)).counter, String(round), 'Lock.edit counts once per msg')
    const seen = comms.debug.length
    await red.inject('bad')
    const failed = debugValue(
      await comms.waitFor((d) => d.slice(seen).find((m) => m.id === 'dbg'), 10_000, 'the failing lookup'),
    ) as {
      name: string
      kind: string
    }
    assert.deepEqual(failed, { name: 'ArgumentError', kind: 'argument' })
    assert.equal(relay.open, 1, 'the Function nodes and the palette node share the config node’s one connection')
  })

  it('follows a redeploy of the config node: the old connection closes with it, the Function node uses the new one', async () => {
    await red.deploy(flow('function-smoke-redeployed'), comms)
    assert.equal((await runOnce(3)).counter, '3')
    // The old socket's close reaches the relay on its own time: wait for it, bounded.
    await until(() => relay.open === 1, 'the old connection to close with its config node', 5000, 20)
    assert.equal(relay.open, 1, 'the old connection closed with its config node')
  })

  async function runOnce(round: number): Promise<{ greeting: string; version: string; counter: string }> {
    const seen = comms.debug.length
    await red.inject('go')
    const out = await comms.waitFor(
      (d) => d.slice(seen).find((m) => m.id === 'dbg'),
      20_000,
      `the Function node's msg (round ${round})`,
    )
    const payload = debugValue(out) as { greeting: string; version: string; counter: string }
    assert.equal(payload.greeting, 'hello')
    assert.match(payload.version, /^\d{15}:\d{5}:/)
    return payload
  }

  function flow(clientId: string): unknown[] {
    const libs = [{ var: 'aio', module: 'node-red-contrib-aio-statestore' }]
    return [
      { id: 'tab', type: 'tab', label: 'function' },
      { id: 'cfg', type: 'ss-config', name: 'shared store', broker: relay.url, clientId },
      {
        id: 'go',
        type: 'inject',
        z: 'tab',
        x: 100,
        y: 100,
        props: [{ p: 'payload' }, { p: 'store', v: 'shared store', vt: 'str' }],
        payload: 'hello',
        payloadType: 'str',
        wires: [['fn']],
      },
      { id: 'fn', type: 'function', z: 'tab', x: 300, y: 100, func: FUNCTION_CODE, outputs: 1, libs, wires: [['dbg']] },
      { id: 'bad', type: 'inject', z: 'tab', x: 100, y: 200, props: [{ p: 'payload' }], wires: [['fnBad']] },
      {
        id: 'fnBad',
        type: 'function',
        z: 'tab',
        x: 300,
        y: 200,
        func: FAILING_CODE,
        outputs: 1,
        libs,
        wires: [['dbg']],
      },
      // A palette node on the same config node: it shares the one connection.
      {
        id: 'get',
        type: 'ss-get',
        z: 'tab',
        x: 300,
        y: 300,
        store: 'cfg',
        key: 'fn/greeting',
        keyType: 'str',
        wires: [['dbg']],
      },
      {
        id: 'dbg',
        type: 'debug',
        z: 'tab',
        x: 500,
        y: 100,
        active: true,
        tosidebar: true,
        complete: 'payload',
        wires: [],
      },
    ]
  }
})

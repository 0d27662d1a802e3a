/**
 * Locks as users wire them, in two real Node-RED 5 runtimes (red.js child processes loading this
 * working tree's nodes) on one emulator: one flow each, `count` pressed 20 times at once in each
 * through the editor's own endpoint (POST /inject/<id>).
 * - inject → lock (lock mode, defaults) → get → function (+1) → set (fenced with msg.fencingToken)
 *   → lock (action release, defaults) → debug: the counter reads exactly 40, the lock key is gone.
 * - inject → update key (`value + 1`) → debug, beside a client doing Lock.edit on the same key: exactly 60.
 * - a hold that never reaches a release: the node's warning names the node and the lock.
 * - a hold released in the other runtime (by the value its msg carries): it ends where it was made,
 *   no renewal writes the key back, and the msg waiting in the other runtime gets the lock.
 */
import { strict as assert } from 'node:assert'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { FROM_WORKING_TREE, runtimeSettings, writeSettings } from '../../../dev/node-red'
import { freePort } from '../../../dev/ports'
import { StateStoreClient } from '../../../src/client'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { keyLockName, Lock } from '../../../src/locks'
import { debugValue, NodeRedProcess, RED_JS, type Comms } from './node-red'

type FlowNode = Record<string, unknown> & { id: string; type: string }

function flow(brokerUrl: string, clientId: string): FlowNode[] {
  const on = (n: FlowNode): FlowNode => ({ z: 'tab', x: 100, y: 100, wires: [], ...n })
  const store = { store: 'cfg' }
  return [
    { id: 'tab', type: 'tab', label: 'locks' },
    { id: 'cfg', type: 'ss-config', name: 'store', broker: brokerUrl, clientId, requestTimeout: '10000' },
    on({
      id: 'count',
      type: 'inject',
      name: 'count',
      props: [{ p: 'payload' }],
      payload: '',
      payloadType: 'date',
      wires: [['take']],
    }),
    on({
      id: 'take',
      type: 'ss-lock',
      ...store,
      key: 'two/counter/lock',
      keyType: 'str',
      mode: 'lock',
      action: 'acquire',
      wires: [['read'], []],
    }),
    on({
      id: 'read',
      type: 'ss-get',
      ...store,
      key: 'two/counter',
      keyType: 'str',
      decode: 'json',
      notFound: 'payload',
      wires: [['add']],
    }),
    on({
      id: 'add',
      type: 'function',
      func: 'msg.payload = (msg.found ? msg.payload : 0) + 1;\nreturn msg;',
      outputs: 1,
      wires: [['write']],
    }),
    on({
      id: 'write',
      type: 'ss-set',
      ...store,
      key: 'two/counter',
      keyType: 'str',
      value: 'payload',
      valueType: 'msg',
      fencingToken: 'fencingToken',
      fencingTokenType: 'msg',
      wires: [['free']],
    }),
    on({
      id: 'free',
      type: 'ss-lock',
      ...store,
      key: '',
      keyType: 'str',
      mode: 'lease',
      action: 'release',
      wires: [['counted'], []],
    }),
    on({
      id: 'counted',
      type: 'debug',
      name: 'counted',
      active: true,
      tosidebar: true,
      complete: 'payload',
      targetType: 'msg',
    }),
    on({
      id: 'bump',
      type: 'inject',
      name: 'bump',
      props: [{ p: 'payload' }],
      payload: '',
      payloadType: 'date',
      wires: [['update']],
    }),
    on({
      id: 'update',
      type: 'ss-update',
      ...store,
      key: 'two/updated',
      keyType: 'str',
      expression: 'value + 1',
      initial: '0',
      initialType: 'num',
      wires: [['updated']],
    }),
    on({
      id: 'updated',
      type: 'debug',
      name: 'updated',
      active: true,
      tosidebar: true,
      complete: 'payload',
      targetType: 'msg',
    }),
    on({
      id: 'forget',
      type: 'inject',
      name: 'forget',
      props: [{ p: 'payload' }],
      payload: '',
      payloadType: 'date',
      wires: [['forgetful']],
    }),
    on({
      id: 'forgetful',
      type: 'ss-lock',
      name: 'forgetful',
      ...store,
      key: `two/forgotten/${clientId}`,
      keyType: 'str',
      mode: 'lock',
      holdMs: '300',
      wires: [[], []],
    }),
    // One hold per runtime on one name, renewed every 500 ms, held until released (no Hold at most).
    on({
      id: 'hold',
      type: 'inject',
      name: 'hold',
      props: [{ p: 'payload' }],
      payload: '',
      payloadType: 'date',
      wires: [['holding']],
    }),
    on({
      id: 'holding',
      type: 'ss-lock',
      ...store,
      key: 'two/handoff',
      keyType: 'str',
      mode: 'lock',
      leaseMs: '1500',
      timeout: '60000',
      holdMs: '0',
      wires: [['held'], ['unheld']],
    }),
    on({ id: 'held', type: 'debug', name: 'held', active: true, tosidebar: true, complete: 'lock', targetType: 'msg' }),
    on({
      id: 'unheld',
      type: 'debug',
      name: 'unheld',
      active: true,
      tosidebar: true,
      complete: 'reason',
      targetType: 'msg',
    }),
  ]
}

describe('smoke: locks in two Node-RED 5 runtimes, as users wire them', function () {
  this.timeout(90_000)
  let emulator: Emulator
  let observer: StateStoreClient
  let work = ''
  const runtimes: NodeRedProcess[] = []
  const comms: Comms[] = []

  before(async function () {
    this.timeout(120_000)
    emulator = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, logLevel: 'error' })
    observer = new StateStoreClient({ brokerUrl: emulator.brokerUrl, clientId: 'lock-flows-observer' })
    await observer.ready({ timeoutMs: 5000 })
    work = mkdtempSync(join(tmpdir(), 'aio-ss-lockflows-'))
    const settings = join(work, 'settings.js')
    writeSettings(
      settings,
      runtimeSettings({ ...FROM_WORKING_TREE, logging: { console: { level: 'warn', metrics: false, audit: false } } }),
    )
    await Promise.all(
      ['a', 'b'].map(async (name, i) => {
        mkdirSync(join(work, name))
        const red = new NodeRedProcess(RED_JS[5], join(work, name), await freePort(), settings)
        runtimes[i] = red
        await red.start(60_000)
        comms[i] = await red.comms()
        await red.deploy(flow(emulator.brokerUrl, `runtime-${name}`), comms[i])
      }),
    )
    // Both lock nodes connected before the presses.
    for (const c of comms)
      await c.waitFor(
        () => (c.status.get('take')?.fill === 'green' ? true : undefined),
        15_000,
        'the lock node connected',
      )
  })

  after(async () => {
    for (const c of comms) c.close()
    await Promise.all(runtimes.map((r) => r.stop()))
    await observer?.close()
    await emulator?.stop()
    if (work) rmSync(work, { recursive: true, force: true })
  })

  /** Presses `inject` n times at once in every runtime; waits for n outputs of `debug` in each; their values. */
  async function pressEverywhere(inject: string, debug: string, n: number): Promise<number[]> {
    const from = comms.map((c) => c.debug.length)
    await Promise.all(runtimes.flatMap((r) => Array.from({ length: n }, () => r.inject(inject))))
    const values: number[] = []
    for (const [i, c] of comms.entries()) {
      const shown = await c.waitFor(
        (all) => {
          const mine = all.slice(from[i]).filter((d) => d.name === debug && !d.level)
          return mine.length >= n ? mine : undefined
        },
        60_000,
        `${n} outputs of ${debug} in runtime ${i}`,
      )
      values.push(...shown.map((d) => Number(debugValue(d))))
    }
    return values
  }

  it('lock → get → function → set (fenced) → release, 20 presses at once in each runtime: the counter reads exactly 40, the lock key is gone', async () => {
    const values = await pressEverywhere('count', 'counted', 20)
    assert.deepEqual(
      values.sort((x, y) => x - y),
      Array.from({ length: 40 }, (_, i) => i + 1),
      'every press counted once',
    )
    assert.equal((await observer.get('two/counter')).value?.toString(), '40')
    assert.equal((await observer.get('two/counter/lock')).value, null, 'the lock key is gone afterwards')
  })

  it('inject → update key → debug, 20 presses at once in each runtime beside 20 Lock.edit of a client: exactly 60', async () => {
    // The client finds the node's lock by the documented rule: keyLockName(key), `<key>.lock`.
    const lock = new Lock(observer, keyLockName('two/updated'))
    const edits = (async () => {
      for (let i = 0; i < 20; i++)
        await lock.edit('two/updated', (v) => String(Number(v?.toString() ?? '0') + 1), { timeoutMs: 30_000 })
    })()
    const values = await pressEverywhere('bump', 'updated', 20)
    await edits
    assert.equal(new Set(values).size, 40, 'no two presses saw the same count')
    assert.equal((await observer.get('two/updated')).value?.toString(), '60')
  })

  it('a hold that never reaches a release ends after Hold at most; the warning names the node and the lock', async () => {
    const from = comms[0]!.debug.length
    await runtimes[0]!.inject('forget')
    const warning = await comms[0]!.waitFor(
      (all) => all.slice(from).find((d) => d.level === 30),
      10_000,
      'the Hold at most warning',
    )
    assert.match(warning.msg, /forgetful/)
    assert.match(warning.msg, /two\/forgotten\/runtime-a/)
    assert.equal((await observer.get('two/forgotten/runtime-a')).value, null, 'the hold was released')
  })

  it('a hold released in the other runtime ends where it was made: the key is not written back, the msg waiting there gets it', async () => {
    const [a, b] = comms as [Comms, Comms]
    const seen: string[] = []
    const waits: Array<() => boolean> = []
    /** Resolves once the key's notifications show `value` written n times. */
    const written = (value: string, n: number) =>
      new Promise<void>((resolve) => {
        const check = () => seen.filter((v) => v === value).length >= n && (resolve(), true)
        if (!check()) waits.push(check)
      })
    const watching = await observer.observe('two/handoff', (n) => {
      seen.push(n.operation === 'SET' ? n.value!.toString() : 'DELETE')
      for (const w of waits.splice(0)) if (!w()) waits.push(w)
    })
    try {
      const fromA = a.debug.length
      const fromB = b.debug.length
      await runtimes[0]!.inject('hold')
      const heldA = await a.waitFor(
        (all) => all.slice(fromA).find((d) => d.name === 'held'),
        10_000,
        'the hold in runtime a',
      )
      const value = (debugValue(heldA) as { value: string }).value
      await runtimes[1]!.inject('hold')
      // Runtime a renews (every 500 ms) while runtime b's msg waits.
      await written(value, 3)
      // The release of a's msg in runtime b, as a release node there does it: VDEL by the value msg.lock carries.
      const releasing = new StateStoreClient({ brokerUrl: emulator.brokerUrl, clientId: 'runtime-b-release' })
      try {
        await releasing.ready({ timeoutMs: 5000 })
        assert.equal((await releasing.vdel('two/handoff', value)).deleted, 1)
      } finally {
        await releasing.close()
      }
      const unheld = await a.waitFor(
        (all) => all.slice(fromA).find((d) => d.name === 'unheld'),
        10_000,
        'the hold ended in runtime a',
      )
      assert.equal(debugValue(unheld), 'released')
      const heldB = await b.waitFor(
        (all) => all.slice(fromB).find((d) => d.name === 'held'),
        10_000,
        'the waiting msg in runtime b got the lock',
      )
      const valueB = (debugValue(heldB) as { value: string }).value
      assert.match(a.status.get('holding')?.text ?? '', /released elsewhere/)
      // Runtime b renews twice: had runtime a renewed meanwhile, b's renewal would have been refused.
      await written(valueB, 3)
      const afterRelease = seen.slice(seen.indexOf('DELETE') + 1)
      assert.ok(!afterRelease.includes(value), `no SET of a's hold after its release: ${afterRelease.join(', ')}`)
      assert.equal((await observer.get('two/handoff')).value?.toString(), valueB)
    } finally {
      await watching.close()
    }
  })
})

/**
 * mosquitto killed with SIGKILL and restarted on the same port while clients (the API and Node-RED
 * ss-set nodes) keep writing. Every request is accounted for: completed exactly once (each SET is
 * NX on a key of its own, so an answer from a second execution would say "not applied", and a
 * second execution that changed anything would leave another version than the acknowledged one),
 * or failed with a typed error. Connections come back by themselves, node status follows the
 * connection, and watchers held off until after the restart get the changes they missed as
 * reconciled notifications.
 */
import assert from 'node:assert/strict'
import { StateStoreClient, type KeyNotification, type SetResult } from '../../../src/client'
import { ALL, helper, onTab, statuses, type TestNode } from '../nodes/support'
import { Outcomes } from '../../support/outcomes'
import { retry, sleep, until } from '../../support/wait'
import { withEmulator } from '../../support/emulator-fixture'

type Msg = Record<string, unknown>
type Status = { fill?: string; shape?: string; text?: string }

const CONNECTED = 'node-red:common.status.connected'

describe('faults: broker killed (SIGKILL) and restarted under load', function () {
  this.timeout(60_000)
  const emulatorLog: string[] = []
  // Registered first, so it runs first: the flows close before the broker goes.
  after(() => helper.unload())
  const fx = withEmulator({
    broker: 'mosquitto',
    relay: true,
    clients: 'suite',
    emulator: { logLevel: 'debug', logger: (level, message) => emulatorLog.push(`${level} ${message}`) },
  })
  const { clients } = fx

  function client(url: string, id: string): StateStoreClient {
    const c = new StateStoreClient({
      brokerUrl: url,
      clientId: `${id}-${process.pid}`,
      reconnectMinMs: 50,
      reconnectMaxMs: 300,
      requestTimeoutMs: 8000,
    })
    clients.add(c)
    return c
  }

  it('loses nothing, executes nothing twice, reconnects, reports status truthfully and reconciles watches', async () => {
    const writers = [client(fx.url, 'load-a'), client(fx.url, 'load-b')]
    const editor = client(fx.url, 'editor')
    // Watchers reach the broker through a relay, so they can be kept away until the changes are made.
    const watcher = client(fx.relay.url, 'watcher')
    await Promise.all([...writers, editor, watcher].map((c) => c.ready({ timeoutMs: 5000 })))
    await editor.set('fault/changed', 'before')
    await editor.set('fault/deleted', 'before')
    const seen: KeyNotification[] = []
    for (const key of ['fault/changed', 'fault/deleted', 'fault/created'])
      await watcher.observe(key, (n) => seen.push(n))

    await helper.load(ALL, [
      { id: 'tab', type: 'tab', label: 'faults' },
      // msgs sent during the outage wait for the connection as long as for an answer
      { id: 'cfg', type: 'ss-config', broker: fx.url, requestTimeout: '5000', connectionWait: '5000' },
      { id: 'cfgRelay', type: 'ss-config', broker: fx.relay.url, requestTimeout: '5000' },
      onTab({ id: 'set', type: 'ss-set', store: 'cfg', key: 'topic', keyType: 'msg', wires: [['out']] }),
      onTab({ id: 'out', type: 'helper' }),
      onTab({
        id: 'watch',
        type: 'ss-watch',
        store: 'cfgRelay',
        keys: 'fault/changed\nfault/deleted\nfault/created',
        wires: [['watched']],
      }),
      onTab({ id: 'watched', type: 'helper' }),
      onTab({ id: 'catcher', type: 'catch', scope: null, uncaught: false, wires: [['caught']] }),
      onTab({ id: 'caught', type: 'helper' }),
    ])
    const setNode = helper.getNode('set')
    const watchNode = helper.getNode('watch')
    const nodeOut: Msg[] = []
    const nodeCaught: Msg[] = []
    const watchedMsgs: Msg[] = []
    helper.getNode('out').on('input', (m: Msg) => nodeOut.push(m))
    helper.getNode('caught').on('input', (m: Msg) => nodeCaught.push(m))
    helper.getNode('watched').on('input', (m: Msg) => watchedMsgs.push(m))
    await until(
      () =>
        last(setNode).text === CONNECTED &&
        last(watchNode).text !== undefined &&
        watchNode.status.getCalls().length > 0,
      'the nodes to connect',
    )
    await until(
      () => String(last(watchNode).text).includes('status.watching') && watchRegistered(watchNode),
      'ss-watch to register its keys',
    )

    // Steady load: each writer keeps up to 30 SETs in flight; the node gets a msg every 8 ms.
    const api = new Outcomes<SetResult>()
    const acknowledged = new Map<string, { value: string; version: string }>()
    let running = true
    const loops = writers.map(async (w, n) => {
      const open = new Set<Promise<void>>()
      for (let i = 0; running; i++) {
        const key = `api/${n}/${i}`
        const value = `v-${n}-${i}-${Math.random().toString(36).slice(2)}`
        const p = api.track(w.set(key, value, { condition: 'NX' }), (r) =>
          acknowledged.set(key, { value, version: r.version.toString() }),
        )
        open.add(p)
        void p.then(() => open.delete(p))
        while (open.size >= 30) await Promise.race(open)
        await sleep(3)
      }
      await Promise.all(open)
    })
    let nodeSent = 0
    const nodeLoop = (async () => {
      for (let i = 0; running; i++) {
        setNode.receive({ topic: `node/${i}`, payload: `nv-${i}`, condition: 'NX', seq: i })
        nodeSent += 1
        await sleep(8)
      }
    })()

    await sleep(600)
    const beforeKill = api.ok.length
    assert.ok(beforeKill > 0 && nodeOut.length > 0, 'load is flowing before the kill')

    fx.relay.cut()
    await fx.mosquitto.kill()
    await until(
      () => last(setNode).fill === 'red' && last(watchNode).fill === 'red',
      'the nodes to show the lost connection',
    )
    await until(() => writers.every((w) => w.status.state !== 'connected'), 'the writers to notice')
    const downFrom = { set: statuses(setNode).length, watch: statuses(watchNode).length }
    await sleep(400)
    const downTo = { set: statuses(setNode).length, watch: statuses(watchNode).length }
    await fx.mosquitto.start()

    // Changes the watchers miss: made once the store answers again, before they are let back.
    await retry(() => editor.set('fault/changed', 'during the outage', { timeoutMs: 1000 }))
    await editor.del('fault/deleted')
    await editor.set('fault/created', 'born during the outage')
    fx.relay.restore()

    await until(
      () => last(setNode).fill === 'green' && last(watchNode).fill === 'green',
      'the nodes to show the connection again',
    )
    await until(
      () => writers.every((w) => w.status.state === 'connected') && watcher.status.state === 'connected',
      'every client to reconnect',
    )
    await sleep(600)
    running = false
    await Promise.all([...loops, nodeLoop])
    await until(
      () => nodeOut.length + nodeCaught.length === nodeSent,
      `an outcome for every node msg (${nodeOut.length} + ${nodeCaught.length} of ${nodeSent})`,
      15_000,
    )

    // Accounting: every request ended exactly once, and failures are typed errors.
    assert.equal(api.ok.length + api.failedCount, api.issued, api.summary())
    assert.deepEqual(api.untyped, [], 'every failure is a typed StateStoreError')
    assert.ok(api.ok.length > beforeKill, `requests complete after the restart: ${beforeKill} before, ${api.summary()}`)
    assert.ok(
      api.ok.every((r) => r.applied),
      'no NX SET on a fresh key was answered "not applied" (no answer from a second execution)',
    )
    for (const m of nodeCaught) {
      const error = m.error as { code?: string; cause?: { kind?: string } }
      assert.ok(error.cause?.kind && error.code, `a typed error through Catch: ${JSON.stringify(m.error)}`)
    }
    assert.ok(
      nodeOut.every((m) => m.applied === true),
      'every node SET that completed was applied',
    )

    // The store holds each acknowledged value with the acknowledged version: nothing lost, nothing re-executed.
    const nodeAcks = new Map(
      nodeOut.map((m) => [String(m.topic), { value: String(m.payload), version: String(m.version) }]),
    )
    for (const [key, expected] of [...acknowledged, ...nodeAcks]) {
      const got = await editor.get(key)
      assert.equal(got.value?.toString(), expected.value, `value of ${key}`)
      assert.equal(got.version?.toString(), expected.version, `version of ${key}`)
    }

    // Node status told the truth: from the moment the loss was seen until the broker was back, only
    // "disconnected" (red) or "connecting" (yellow, a reconnect attempt), never connected.
    for (const [name, node, from, to] of [
      ['ss-set', setNode, downFrom.set, downTo.set],
      ['ss-watch', watchNode, downFrom.watch, downTo.watch],
    ] as const) {
      const during = statuses(node).slice(from - 1, to)
      assert.ok(
        during.length > 0 &&
          during.every(
            (s) =>
              (s.fill === 'red' && s.text?.includes('disconnected')) ||
              (s.fill === 'yellow' && s.text?.includes('connecting')),
          ),
        `${name} while down: ${JSON.stringify(during)}`,
      )
    }

    // Watches registered again: the API watcher and the ss-watch node got what changed as reconciled notifications.
    await until(() => seen.filter((n) => n.reconciled).length >= 3, 'reconciled notifications at the API watcher')
    const reconciled = seen
      .filter((n) => n.reconciled)
      .map((n) => `${n.operation} ${n.key.toString()}${n.value ? `=${n.value.toString()}` : ''}`)
    assert.deepEqual(
      new Set(reconciled),
      new Set([
        'SET fault/changed=during the outage',
        'DELETE fault/deleted',
        'SET fault/created=born during the outage',
      ]),
    )
    await until(() => watchedMsgs.filter((m) => m.reconciled).length >= 3, 'reconciled msgs from ss-watch')
    const fromNode = watchedMsgs
      .filter((m) => m.reconciled)
      .map((m) => `${String(m.operation)} ${String(m.topic)}${m.payload !== undefined ? `=${String(m.payload)}` : ''}`)
    assert.deepEqual(new Set(fromNode), new Set(reconciled))
    // And live notifications flow again.
    await editor.set('fault/changed', 'after')
    await until(
      () =>
        seen.some((n) => !n.reconciled && n.value?.toString() === 'after') &&
        watchedMsgs.some((m) => m.payload === 'after' && !m.reconciled),
      'a live notification after the restart',
    )

    const dedupHits = emulatorLog.filter((l) => l.includes('answered from the cache')).length
    const report = {
      api: {
        issued: api.issued,
        completed: api.ok.length,
        failed: Object.fromEntries(api.failed),
        lost: 0,
        duplicated: 0,
      },
      nodes: { sent: nodeSent, completed: nodeOut.length, failed: nodeCaught.length, lost: 0, duplicated: 0 },
      resendsAnsweredFromDedupCache: dedupHits,
    }
    console.log(`      ${JSON.stringify(report)}`)
  })
})

function last(node: TestNode): Status {
  const s = statuses(node)
  return s.length ? s[s.length - 1]! : {}
}

/** ss-watch shows "watching N" once its keys are registered (N = all configured keys). */
function watchRegistered(node: TestNode): boolean {
  return statuses(node).some((s) => String(s.text).includes('status.watching') && String(s.text).endsWith(' 3'))
}

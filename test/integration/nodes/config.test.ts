import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { embeddedEmulator, stopEmbedded } from '../../../nodes/config/embedded'
import { freePort } from '../../../dev/ports'
import { TcpRelay } from '../../support/relay'
import {
  ALL,
  COMMON,
  TAB,
  configNode,
  helper,
  lastStatus,
  listen,
  nextMessage,
  onTab,
  startStore,
  statuses,
  type Store,
} from './support'
import { until } from '../../support/wait'

const CONNECTED = { fill: 'green', shape: 'dot', text: 'node-red:common.status.connected' }

/** Two users of one config node, a Status node watching them, and helper sinks. */
function usersFlow(url: string, configExtra: Record<string, unknown> = {}, keyOfSecond = 'b') {
  return [
    TAB,
    configNode(url, configExtra),
    onTab({ id: 'set', type: 'ss-set', store: 'cfg', key: 'a', keyType: 'str', wires: [['setOut']] }),
    onTab({ id: 'get', type: 'ss-get', store: 'cfg', key: keyOfSecond, keyType: 'str', wires: [['getOut']] }),
    onTab({ id: 'setOut', type: 'helper' }),
    onTab({ id: 'getOut', type: 'helper' }),
    onTab({ id: 'watcher', type: 'status', scope: null, wires: [['statusOut']] }),
    onTab({ id: 'statusOut', type: 'helper' }),
    onTab({ id: 'catcher', type: 'catch', scope: null, uncaught: false, wires: [['caught']] }),
    onTab({ id: 'caught', type: 'helper' }),
  ]
}

async function connected(...ids: string[]) {
  for (const id of ids) await until(() => lastStatus(helper.getNode(id)).fill === 'green', `${id} connected`)
}

describe('nodes: ss-config lifecycle', function () {
  let store: Store
  before(async () => {
    store = await startStore()
  })
  after(async () => {
    await store.stop()
  })
  afterEach(async () => {
    await helper.unload()
    await until(() => store.proxy.open === 0, 'no connection left after unload')
  })

  it('connects once for all its users, with a stable client id derived from the host, user directory and node id', async () => {
    const before = store.proxy.opened
    await helper.load(ALL, usersFlow(store.url))
    await connected('set', 'get')
    assert.deepEqual(lastStatus(helper.getNode('set')), CONNECTED)
    assert.deepEqual(lastStatus(helper.getNode('get')), CONNECTED)
    assert.equal(store.proxy.open, 1)
    assert.equal(store.proxy.opened - before, 1)
    const cfg = helper.getNode('cfg') as unknown as { clientId: string }
    // The host, then a hash of the runtime's user directory and the node id (test/unit/client-id.test.ts has the rule).
    assert.match(
      cfg.clientId,
      new RegExp(
        `^nodered-${hostname()
          .replace(/[^A-Za-z0-9_.-]/g, '-')
          .replace(/\./g, '\\.')}-[0-9a-f]{8}$`,
      ),
    )
  })

  it('keeps the same connection across a "modified nodes" deploy, and closes it on a full deploy', async () => {
    await helper.load(ALL, usersFlow(store.url))
    await connected('set', 'get')
    const cfg = helper.getNode('cfg')
    const opened = store.proxy.opened

    await helper.setFlows(usersFlow(store.url, {}, 'b-changed'), 'nodes')
    await connected('get')
    assert.equal(helper.getNode('cfg'), cfg, 'the same config node instance')
    assert.equal(store.proxy.opened, opened, 'no new connection')
    assert.equal(store.proxy.open, 1)
    const w = nextMessage(helper.getNode('setOut'))
    helper.getNode('set').receive({ payload: 'still connected' })
    assert.equal((await w).applied, true)

    await helper.setFlows(usersFlow(store.url, {}, 'b-changed'), 'full')
    await connected('set', 'get')
    assert.notEqual(helper.getNode('cfg'), cfg, 'a new config node')
    assert.equal(store.proxy.opened, opened + 1)
    await until(() => store.proxy.open === 1, 'the old connection closed')
  })

  it('disconnects when its last user is removed, and reconnects when a user comes back', async () => {
    await helper.load(ALL, usersFlow(store.url))
    await connected('set')
    await helper.setFlows([TAB, configNode(store.url)], 'nodes')
    await until(() => store.proxy.open === 0, 'disconnect after the last user left')
    await helper.setFlows(usersFlow(store.url), 'nodes')
    await connected('set', 'get')
    assert.equal(store.proxy.open, 1)
  })

  it('closes within 2 s on stop, releasing a held lease, and within 2 s when the broker is gone', async () => {
    const flow = [
      ...usersFlow(store.url),
      onTab({
        id: 'lock',
        type: 'ss-lock',
        store: 'cfg',
        key: 'close-lease',
        keyType: 'str',
        wires: [['lockOut'], []],
      }),
      onTab({ id: 'lockOut', type: 'helper' }),
    ]
    await helper.load(ALL, flow)
    const l = nextMessage(helper.getNode('lockOut'))
    helper.getNode('lock').receive({})
    await l
    let started = Date.now()
    await helper.unload()
    const closeMs = Date.now() - started
    assert.ok(closeMs < 2000, `closed in ${closeMs} ms`)
    assert.equal(store.proxy.open, 0)

    await helper.load(ALL, usersFlow(store.url))
    await connected('set')
    store.proxy.refusing = true
    store.proxy.dropAll()
    await until(() => lastStatus(helper.getNode('set')).fill !== 'green', 'connection lost')
    started = Date.now()
    await helper.unload()
    const downMs = Date.now() - started
    store.proxy.refusing = false
    assert.ok(downMs < 2000, `closed in ${downMs} ms with the broker down`)
    console.log(`      (close: ${closeMs} ms connected with a lease held, ${downMs} ms with the broker down)`)
    await helper.load(ALL, usersFlow(store.url))
  })

  it('fans connection changes out to every user, truthfully, and a Status node sees them', async () => {
    await helper.load(ALL, usersFlow(store.url, { requestTimeout: '500' }))
    listen(helper.getNode('statusOut'))
    await connected('set', 'get')
    store.proxy.refusing = true
    store.proxy.dropAll()
    for (const id of ['set', 'get']) {
      await until(
        () => ['red', 'yellow'].includes(lastStatus(helper.getNode(id)).fill ?? ''),
        `${id} shows the lost connection`,
      )
    }
    assert.ok(
      statuses(helper.getNode('set')).some(
        (s) => s.fill === 'red' && String(s.text).startsWith('node-red:common.status.disconnected'),
      ),
      'a red "disconnected" with its reason',
    )
    // a request while down fails clearly (not connected), and does not pretend to be connected
    const caught = nextMessage(helper.getNode('caught'))
    helper.getNode('get').receive({})
    const error = (await caught).error as { code: string; cause: { kind: string } }
    assert.equal(error.cause.kind, 'connection')
    assert.notEqual(lastStatus(helper.getNode('get')).fill, 'green')
    store.proxy.refusing = false
    await connected('set', 'get')
    const seen: Array<{ status: { text: string } }> = []
    for (;;) {
      const m = (await nextMessage(helper.getNode('statusOut'))) as unknown as {
        status: { text: string; source: { id: string } }
      }
      seen.push(m)
      if (m.status.text === 'node-red:common.status.connected' && seen.length > 2) break
    }
    const texts = seen.map((m) => m.status.text)
    assert.ok(
      texts.some((t) => t.startsWith('node-red:common.status.disconnected')),
      `the Status node saw the disconnect: ${texts.join(' | ')}`,
    )
  })

  it('reports a broker URL it cannot use on every user, and fails requests as connection errors', async () => {
    await helper.load(ALL, usersFlow('ftp://127.0.0.1:1'))
    await until(
      () => String(lastStatus(helper.getNode('get')).text).startsWith('node-red:common.status.disconnected: '),
      'the reason in the status',
    )
    assert.equal(lastStatus(helper.getNode('set')).fill, 'red')
    const caught = nextMessage(helper.getNode('caught'))
    helper.getNode('get').receive({})
    assert.equal(((await caught).error as { cause: { kind: string } }).cause.kind, 'connection')
  })

  it('speaks the 2023 preview dialect when told: set and get work, a watch node reports that the dialect has no notifications', async () => {
    const flow = usersFlow(store.url, { protocol: 'preview' }, 'a')
    flow.push(onTab({ id: 'watch', type: 'ss-watch', store: 'cfg', keys: 'a', decode: 'auto', wires: [[]] }))
    await helper.load(ALL, flow)
    // The watch node registers once connected, which is after load returns.
    const caught = nextMessage(helper.getNode('caught'))
    await connected('set', 'get')
    const cfg = helper.getNode('cfg') as unknown as { started(): Promise<{ protocol: string }> }
    assert.equal((await cfg.started()).protocol, 'preview')
    const error = (await caught).error as { message: string; source: { id: string } }
    assert.equal(error.source.id, 'watch')
    assert.match(error.message, /preview protocol/)
    const written = nextMessage(helper.getNode('setOut'))
    helper.getNode('set').receive({ payload: 'over the preview' })
    await written
    const read = nextMessage(helper.getNode('getOut'))
    helper.getNode('get').receive({})
    assert.equal((await read).payload, 'over the preview')
  })

  it('connection wait 0: a msg fails at once with NotConnected while the broker refuses, and the failure is logged once', async () => {
    const closed = `mqtt://127.0.0.1:${await freePort()}`
    await helper.load(ALL, usersFlow(closed, { requestTimeout: '60000', connectionWait: '0' }))
    const cfg = helper.getNode('cfg')
    await until(
      () => String(lastStatus(helper.getNode('get')).text).startsWith('node-red:common.status.disconnected: '),
      'the refusal in the status',
    )
    // The request timeout (60 s) is longer than this test may run: only the connection wait can end it.
    for (let i = 0; i < 3; i++) {
      const caught = nextMessage(helper.getNode('caught'))
      helper.getNode('get').receive({})
      const error = (await caught).error as { code: string; message: string; cause: { kind: string } }
      assert.equal(error.code, 'NotConnected')
      assert.equal(error.cause.kind, 'connection')
      assert.equal(
        error.message,
        'ss-config.errors.notConnectedReason',
        'the message with the reason (this runtime has no catalogue)',
      )
    }
    assert.equal(lastStatus(helper.getNode('get')).text, `node-red:common.status.error: ${COMMON}failure.NotConnected`)
    // mqtt.js retries every 0.5 s and more: let a few retries fail, then count the warnings.
    await until(
      () => statuses(helper.getNode('get')).filter((st) => st.fill === 'yellow').length >= 3,
      'two retries',
      10000,
    )
    const warned = cfg.warn
      .getCalls()
      .filter((c) => c.thisValue === cfg)
      .map((c) => String(c.args[0]))
    assert.deepEqual(warned, ['ss-config.log.connectFailed'], 'the first failure warned once, its retries quiet')
  })

  it('a blank connection wait waits for a connection that is down as long as the request timeout, then fails NotConnected', async () => {
    const closed = `mqtt://127.0.0.1:${await freePort()}`
    await helper.load(ALL, usersFlow(closed, { requestTimeout: '3000', connectionWait: '' }))
    const sent = performance.now()
    const caught = nextMessage(helper.getNode('caught'), 10000)
    helper.getNode('get').receive({})
    assert.equal(((await caught).error as { code: string }).code, 'NotConnected')
    // A lower bound, which load cannot break: the msg waited its whole timeout, so an outage shorter than that is ridden through.
    assert.ok(performance.now() - sent >= 3000, `failed after ${Math.round(performance.now() - sent)} ms`)
  })

  it('substitutes ${ENV} in the broker URL', async () => {
    process.env.SS_TEST_BROKER = store.url
    try {
      await helper.load(ALL, usersFlow('${SS_TEST_BROKER}'))
      await connected('set')
    } finally {
      delete process.env.SS_TEST_BROKER
    }
  })
})

describe('nodes: ss-config authentication', function () {
  let emulator: Emulator
  let proxy: TcpRelay
  before(async () => {
    emulator = await startEmulator({
      listen: { host: '127.0.0.1', port: 0 },
      logLevel: 'error',
      brokerAuth: { users: { alice: 'secret' }, satTokens: ['sat-token-value'] },
    })
    proxy = await TcpRelay.start(emulator.brokerUrl)
  })
  after(async () => {
    await proxy.stop()
    await emulator.stop()
  })
  afterEach(() => helper.unload())

  it('shows "auth failed" on every user when the broker refuses the credentials', async () => {
    await helper.load(ALL, usersFlow(proxy.url), { cfg: { username: 'alice', password: 'wrong' } })
    for (const id of ['set', 'get']) {
      await until(() => lastStatus(helper.getNode(id)).text === `${COMMON}status.authFailed`, `${id} auth failed`)
      assert.equal(lastStatus(helper.getNode(id)).fill, 'red')
    }
  })

  it('connects with the right username and password (credentials, by node id)', async () => {
    await helper.load(ALL, usersFlow(proxy.url), { cfg: { username: 'alice', password: 'secret' } })
    await connected('set', 'get')
  })

  it('connects with a K8S-SAT token read from the file named in the credentials', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'sat-')), 'token')
    writeFileSync(file, 'sat-token-value')
    await helper.load(ALL, usersFlow(proxy.url), { cfg: { satTokenFile: file } })
    await connected('set', 'get')
  })
})

describe('nodes: ss-config embedded emulator', function () {
  after(() => stopEmbedded())
  afterEach(() => helper.unload())

  it('works with no broker at all, one emulator shared by every config node that asks for it', async () => {
    const flow = [
      TAB,
      { id: 'cfg', type: 'ss-config', embedded: true, broker: 'mqtt://127.0.0.1:1' },
      { id: 'cfg2', type: 'ss-config', embedded: true },
      onTab({ id: 'set', type: 'ss-set', store: 'cfg', key: 'embedded', keyType: 'str', wires: [['setOut']] }),
      onTab({ id: 'get', type: 'ss-get', store: 'cfg2', key: 'embedded', keyType: 'str', wires: [['getOut']] }),
      onTab({ id: 'setOut', type: 'helper' }),
      onTab({ id: 'getOut', type: 'helper' }),
    ]
    await helper.load(ALL, flow)
    const w = nextMessage(helper.getNode('setOut'), 5000)
    helper.getNode('set').receive({ payload: { it: 'works' } })
    assert.equal((await w).applied, true)
    const r = nextMessage(helper.getNode('getOut'))
    helper.getNode('get').receive({})
    assert.deepEqual(
      (await r).payload,
      { it: 'works' },
      'the second config node reads what the first wrote: one shared store',
    )
    const first = embeddedEmulator()
    assert.ok(first)

    // a full deploy keeps the embedded store (and its data)
    await helper.setFlows(flow, 'full')
    assert.equal(embeddedEmulator(), first)
    const again = nextMessage(helper.getNode('getOut'), 5000)
    helper.getNode('get').receive({})
    assert.deepEqual((await again).payload, { it: 'works' })
  })
})

/**
 * Authorization in the emulator (its authorization file): a client limited to a key pattern reads
 * and writes inside it and gets `-ERR not authorized` (ServiceError code NotAuthorized) outside it,
 * for every verb; the refused requests change nothing; with the embedded broker a client cannot
 * claim another's identity (behind an external broker the emulator can only go by the `__srcId`
 * a request carries); ss-get and ss-set report the refusal through Catch with the msg kept, and
 * keep working for allowed keys.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { StateStoreClient } from '../../../src/client'
import { SERVICE_ERROR_TEXT, ServiceError } from '../../../src/diagnostics/errors'
import { Prop, Reply, Request } from '../../../src/protocol'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { RawClient } from '../emulator/raw-client'
import { startMqttBroker, type OwnBroker } from '../../support/broker'
import { ALL, COMMON, helper, lastStatus, nextMessage, onTab } from '../nodes/support'
import { until } from '../../support/wait'

const notAuthorized = (err: unknown) =>
  err instanceof ServiceError && err.code === 'NotAuthorized' && err.kind === 'service'

describe('security: authorization rules in the emulator', function () {
  this.timeout(30_000)
  let dir: string
  let broker: OwnBroker
  let emulator: Emulator
  const clients: StateStoreClient[] = []
  const suffix = `${process.pid}`

  before(async function () {
    dir = mkdtempSync(join(tmpdir(), 'security-authz-'))
    const rules = join(dir, 'authorization.json')
    writeFileSync(
      rules,
      JSON.stringify({
        rules: [
          {
            principals: { clientIds: ['sensor-*'] },
            stateStoreResources: [
              { method: 'ReadWrite', keyType: 'Pattern', keys: ['sensors/{principal.clientId}/*'] },
              { method: 'Read', keyType: 'Pattern', keys: ['config/*'] },
            ],
          },
          { principals: { clientIds: ['admin-*'] }, stateStoreResources: [{ method: 'ReadWrite', keys: ['*'] }] },
        ],
      }),
    )
    broker = await startMqttBroker(this)
    emulator = await startEmulator({ brokerUrl: broker.url, authorizationFile: rules, logLevel: 'error' })
  })
  after(async () => {
    await helper.unload()
    await Promise.all(clients.map((c) => c.close()))
    await emulator?.stop()
    await broker?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  async function client(clientId: string): Promise<StateStoreClient> {
    const c = new StateStoreClient({ brokerUrl: broker.url, clientId, requestTimeoutMs: 3000 })
    clients.push(c)
    await c.ready({ timeoutMs: 5000 })
    return c
  }

  it('lets a limited client use its own keys and read config, and refuses everything else with NotAuthorized', async () => {
    const sensor = await client(`sensor-${suffix}`)
    const admin = await client(`admin-${suffix}`)
    const own = `sensors/sensor-${suffix}/temperature`
    assert.equal((await admin.set('config/interval', '5s')).applied, true)
    assert.equal((await admin.set('secret/key', 'admin only')).applied, true)
    assert.equal((await admin.set(`sensors/sensor-other/temperature`, '20')).applied, true)

    assert.equal((await sensor.set(own, '21.5')).applied, true)
    assert.equal((await sensor.get(own)).value?.toString(), '21.5')
    assert.equal((await sensor.get('config/interval')).value?.toString(), '5s')
    const watched = await sensor.observe(own, () => {})
    await watched.close()

    const refused: Array<[string, () => Promise<unknown>]> = [
      ['SET outside its keys', () => sensor.set('secret/key', 'mine now')],
      ['SET on a read-only key', () => sensor.set('config/interval', '1ms')],
      ["SET on another sensor's key", () => sensor.set('sensors/sensor-other/temperature', '99')],
      ['GET outside its keys', () => sensor.get('secret/key')],
      ['DEL outside its keys', () => sensor.del('secret/key')],
      ['DEL of a read-only key', () => sensor.del('config/interval')],
      ['VDEL outside its keys', () => sensor.vdel('secret/key', 'admin only')],
      ['KEYNOTIFY outside its keys', () => sensor.observe('secret/key', () => {})],
      ['a key that only starts like its own', () => sensor.set(`sensors/sensor-${suffix}`, 'x')],
    ]
    for (const [what, attempt] of refused) await assert.rejects(attempt(), notAuthorized, what)

    // Nothing refused changed anything.
    assert.equal((await admin.get('secret/key')).value?.toString(), 'admin only')
    assert.equal((await admin.get('config/interval')).value?.toString(), '5s')
    assert.equal((await admin.get('sensors/sensor-other/temperature')).value?.toString(), '20')
    // A client matching no rule may do nothing at all.
    const stranger = await client(`stranger-${suffix}`)
    await assert.rejects(stranger.get('config/interval'), notAuthorized)
  })

  it('with the embedded broker, a client cannot pass for another by claiming its __srcId', async () => {
    const embedded = await startEmulator({
      listen: { host: '127.0.0.1', port: 0 },
      authorizationFile: join(dir, 'authorization.json'),
      logLevel: 'error',
    })
    const intruder = await RawClient.connect(embedded.brokerUrl, `intruder-${suffix}`)
    try {
      for (const claimed of [`admin-${suffix}`, `sensor-${suffix}`]) {
        const reply = await intruder.request(Request.set(`sensors/sensor-${suffix}/temperature`, 'forged'), {
          props: { [Prop.sourceId]: claimed, [Prop.partition]: claimed },
        })
        assert.equal(
          reply.payload.toString(),
          Reply.error(SERVICE_ERROR_TEXT.NotAuthorized).toString(),
          `claiming to be ${claimed}`,
        )
      }
    } finally {
      await intruder.close()
      await embedded.stop()
    }
  })

  it('ss-get and ss-set report NotAuthorized through Catch with the msg, and keep serving allowed keys', async () => {
    await helper.load(ALL, [
      { id: 'tab', type: 'tab', label: 'authorization' },
      { id: 'cfg', type: 'ss-config', broker: broker.url, clientId: `sensor-node-${suffix}`, requestTimeout: '3000' },
      onTab({ id: 'set', type: 'ss-set', store: 'cfg', key: 'topic', keyType: 'msg', wires: [['out']] }),
      onTab({ id: 'get', type: 'ss-get', store: 'cfg', key: 'topic', keyType: 'msg', wires: [['out']] }),
      onTab({ id: 'out', type: 'helper' }),
      onTab({ id: 'catcher', type: 'catch', scope: null, uncaught: false, wires: [['caught']] }),
      onTab({ id: 'caught', type: 'helper' }),
    ])
    await until(() => lastStatus(helper.getNode('set')).fill === 'green', 'the node to connect')
    const own = `sensors/sensor-node-${suffix}/humidity`
    for (const [id, msg] of [
      ['set', { topic: 'secret/key', payload: 'intrusion', marker: 'set' }],
      ['get', { topic: 'secret/key', marker: 'get' }],
      ['set', { topic: 'config/interval', payload: '1ms', marker: 'read-only' }],
    ] as const) {
      const caught = nextMessage(helper.getNode('caught'))
      helper.getNode(id).receive({ ...msg })
      const c = await caught
      const error = c.error as { code: string; cause: { kind: string; code: string }; source: { id: string } }
      assert.equal(error.code, 'NotAuthorized', msg.marker)
      assert.deepEqual({ kind: error.cause.kind, code: error.cause.code }, { kind: 'service', code: 'NotAuthorized' })
      assert.equal(error.source.id, id)
      assert.equal(c.marker, msg.marker, 'the msg is kept')
      assert.equal(c.topic, msg.topic)
      assert.equal(lastStatus(helper.getNode(id)).text, `node-red:common.status.error: ${COMMON}failure.NotAuthorized`)

      // The node carries on with a key it may use.
      const ok = nextMessage(helper.getNode('out'))
      helper.getNode('set').receive({ topic: own, payload: '40%' })
      assert.equal((await ok).applied, true)
    }
    const read = nextMessage(helper.getNode('out'))
    helper.getNode('get').receive({ topic: own })
    assert.equal((await read).payload, '40%')
  })
})

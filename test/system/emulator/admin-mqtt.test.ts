// The emulator's admin channel over MQTT (`--admin`): the CLI process behind mosquitto, asked by the
// sidebar's core client and by a bare MQTT client sending what a careless tool might send.
import assert from 'node:assert/strict'
import mqtt, { type MqttClient } from 'mqtt'
import { StateStoreClient } from '../../../src/client'
import { ADMIN_REQUEST_TOPIC, type AdminReply } from '../../../src/emulator/admin/wire'
import { RemoteAdminRegistry, RemoteEmulatorAdmin } from '../../../src/emulator/admin'
import { Mosquitto, requireMosquitto } from '../../support/mosquitto'
import { EmulatorProcess } from './cli-process'

/** One admin request as raw MQTT 5; the answer's JSON, or null when none comes within the wait. */
async function ask(
  c: MqttClient,
  payload: string,
  properties: Record<string, unknown> = {},
  waitMs = 5000,
): Promise<AdminReply | null> {
  const responseTopic = `admin-test/${Math.random().toString(16).slice(2)}`
  await c.subscribeAsync(responseTopic, { qos: 1 })
  const correlationData = Buffer.from(Math.random().toString(16))
  return new Promise((resolve) => {
    const timer = setTimeout(() => done(null), waitMs)
    const onMessage = (topic: string, body: Buffer, packet: mqtt.IPublishPacket) => {
      if (topic !== responseTopic) return
      assert.ok(packet.properties?.correlationData?.equals(correlationData), 'the answer carries the correlation data')
      done(JSON.parse(body.toString()) as AdminReply)
    }
    const done = (reply: AdminReply | null) => {
      clearTimeout(timer)
      c.off('message', onMessage)
      resolve(reply)
    }
    c.on('message', onMessage)
    c.publish(ADMIN_REQUEST_TOPIC, payload, { qos: 1, properties: { responseTopic, correlationData, ...properties } })
  })
}

describe('emulator admin channel over MQTT (--admin)', function () {
  this.timeout(30_000)
  let broker: Mosquitto
  let plainBroker: Mosquitto
  let emulator: EmulatorProcess
  let plain: EmulatorProcess
  let store: StateStoreClient
  let raw: MqttClient

  before(async function () {
    requireMosquitto(this)
    ;[broker, plainBroker] = await Promise.all([Mosquitto.start(), Mosquitto.start()])
    ;[emulator, plain] = await Promise.all([
      EmulatorProcess.start(['--broker', broker.url, '--admin', '--node-id', 'admin-node', '--log-level', 'info']),
      EmulatorProcess.start(['--broker', plainBroker.url]),
    ])
    store = new StateStoreClient({ brokerUrl: broker.url, clientId: 'admin-mqtt-writer' })
    await store.ready({ timeoutMs: 10_000 })
    await Promise.all(
      Array.from({ length: 150 }, (_, i) => store.set(`sensor/${String(i).padStart(3, '0')}`, `value-${i}`)),
    )
    await store.set('other', 'secret-value', { expiryMs: 600_000 })
    raw = await mqtt.connectAsync(broker.url, { protocolVersion: 5, clientId: 'admin-mqtt-raw' })
  })
  after(async () => {
    await raw?.endAsync()
    await store?.close()
    await Promise.all([emulator?.kill('SIGTERM'), plain?.kill('SIGTERM')])
    await Promise.all([broker?.stop(), plainBroker?.stop()])
  })

  it('lists, filters, pages and inspects keys for the core client', async () => {
    const found = await RemoteEmulatorAdmin.discover({ brokerUrl: broker.url, clientId: 'admin-mqtt-browser' }, 10_000)
    assert.ok(found, 'the admin-enabled emulator answers')
    const { admin, hello } = found
    try {
      assert.equal(hello.nodeId, 'admin-node')
      assert.equal(hello.keyCount, 151)
      const first = await admin.listKeys({ pattern: 'sensor/*', limit: 100 })
      assert.equal(first.keys.length, 100)
      assert.equal(first.matching, 150)
      assert.equal(first.total, 151)
      assert.equal(first.keys[0]!.key, 'sensor/000')
      assert.equal(first.keys[99]!.key, 'sensor/099')
      assert.equal(first.keys[0]!.size, 'value-0'.length)
      assert.ok(first.next)
      const second = await admin.listKeys({ pattern: 'sensor/*', limit: 100, after: first.next })
      assert.deepEqual(
        second.keys.map((k) => k.key),
        Array.from({ length: 50 }, (_, i) => `sensor/${String(100 + i).padStart(3, '0')}`),
      )
      assert.equal(second.next, null)
      const details = await admin.inspect(Buffer.from('other'))
      assert.ok(details)
      assert.equal(details.value.toString(), 'secret-value')
      assert.ok(details.expiresAt !== null && details.expiresAt > Date.now(), 'the expiry is shown')
      assert.equal(details.version, (await store.get('other')).version?.toString())
      assert.equal(await admin.inspect(Buffer.from('missing')), null)
    } finally {
      await admin.close()
    }
  })

  it('answers malformed requests with a clear error and keeps serving', async () => {
    const cases: Array<[string, RegExp]> = [
      ['not json', /not JSON/],
      ['[1,2]', /JSON object/],
      ['{"op":"drop"}', /unknown "op" "drop"/],
      ['{"op":"listKeys","limit":0}', /"limit" must be a whole number from 1 to 1000/],
      ['{"op":"listKeys","after":"xyz"}', /"after"/],
      ['{"op":"inspect"}', /"keyHex"/],
    ]
    for (const [payload, error] of cases) {
      const reply = await ask(raw, payload)
      assert.ok(reply && !reply.ok, `${payload} is refused`)
      assert.match(reply.error, error)
    }
    // Without a response topic there is nowhere to answer: dropped, and the channel still serves.
    raw.publish(ADMIN_REQUEST_TOPIC, '{"op":"hello"}', { qos: 1 })
    const hello = await ask(raw, '{"op":"hello"}')
    assert.ok(hello?.ok)
  })

  it('leaves the state store topics alone and logs no value', () => {
    assert.match(emulator.stderr, /admin channel open on aio-statestore-emulator\/admin\/v1\/request/)
    assert.match(emulator.stderr, /admin request refused: unknown "op"/)
    assert.ok(
      !emulator.stderr.includes('secret-value') && !emulator.stdout.includes('secret-value'),
      'no value in the log',
    )
    assert.ok(
      !/statestore\/v1\/FA9AE35F/.test(ADMIN_REQUEST_TOPIC),
      'the admin topic is not under the state store topics',
    )
  })

  it('is off by default: nobody subscribes to the admin topic, the client finds nothing', async () => {
    const c = await mqtt.connectAsync(plainBroker.url, { protocolVersion: 5, clientId: 'admin-mqtt-plain' })
    try {
      // mosquitto acknowledges a publish nobody subscribed to with "no matching subscribers".
      const puback = await new Promise<number | undefined>((resolve) => {
        c.on('packetreceive', (packet) => {
          if (packet.cmd === 'puback') resolve(packet.reasonCode)
        })
        c.publish(ADMIN_REQUEST_TOPIC, '{"op":"hello"}', { qos: 1, properties: { responseTopic: 'admin-test/none' } })
      })
      assert.equal(puback, 0x10)
      assert.equal(await ask(c, '{"op":"hello"}', {}, 1000), null)
    } finally {
      await c.endAsync()
    }
    assert.equal(
      await RemoteEmulatorAdmin.discover({ brokerUrl: plainBroker.url, clientId: 'admin-mqtt-browser2' }, 5000),
      null,
    )
  })

  it('serves it through the embedded broker too (--listen), and stops cleanly', async () => {
    const p = await EmulatorProcess.start(['--listen', '0', '--admin', '--node-id', 'embedded-admin'])
    try {
      const found = await RemoteEmulatorAdmin.discover({ brokerUrl: p.url, clientId: 'admin-mqtt-embedded' }, 10_000)
      assert.ok(found, 'the embedded broker carries the admin channel')
      assert.equal(found.hello.nodeId, 'embedded-admin')
      assert.deepEqual((await found.admin.listKeys({})).keys, [])
      await found.admin.close()
    } finally {
      const { code } = await p.kill('SIGTERM')
      assert.equal(code, 0)
    }
  })

  it("is found once per store by the sidebar's registry, and looked for again when the options change", async () => {
    const registry = new RemoteAdminRegistry(5000)
    try {
      const a = await registry.find('cfg', { brokerUrl: broker.url, clientId: 'admin-mqtt-registry' })
      assert.ok(a)
      assert.equal(
        await registry.find('cfg', { brokerUrl: broker.url, clientId: 'admin-mqtt-registry' }),
        a,
        'the open connection is kept',
      )
      assert.equal(
        await registry.find('cfg', { brokerUrl: plainBroker.url, clientId: 'admin-mqtt-registry' }),
        null,
        'another broker: looked for again',
      )
      assert.equal(a.open, false, 'the previous connection was closed')
      assert.equal(
        await registry.find('bad', { brokerUrl: 'not a url', clientId: 'x' }),
        null,
        'bad options: nothing, no throw',
      )
    } finally {
      await registry.closeAll()
    }
  })

  it('is looked for again once its emulator has gone', async () => {
    const own = await Mosquitto.start()
    const p = await EmulatorProcess.start(['--broker', own.url, '--admin'])
    const registry = new RemoteAdminRegistry(5000)
    try {
      const a = await registry.find('cfg', { brokerUrl: own.url, clientId: 'admin-mqtt-gone' })
      assert.ok(a)
      await p.kill('SIGTERM')
      await assert.rejects(a.listKeys({}), /no emulator serves the admin channel/)
      assert.equal(a.open, false)
      assert.equal(await registry.find('cfg', { brokerUrl: own.url, clientId: 'admin-mqtt-gone' }), null)
    } finally {
      await registry.closeAll()
      await p.kill('SIGKILL')
      await own.stop()
    }
  })
})

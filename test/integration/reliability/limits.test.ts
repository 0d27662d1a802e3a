/**
 * Values at the limits, through mosquitto with `max_packet_size` set: 0 bytes, 1 byte and 1 MiB
 * round-trip through SET, GET and a notification; a request over the broker's Maximum Packet Size
 * fails at once with a clear ArgumentError (client API and ss-set through Catch) instead of a
 * reconnect loop, and the connection stays up; a notification that would be too big is dropped by
 * the emulator, which keeps serving.
 */
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { StateStoreClient, type ConnectionState, type KeyNotification } from '../../../src/client'
import { ArgumentError } from '../../../src/diagnostics/errors'
import { publishPacketSize, type PublishPropertiesForSize } from '../../../src/protocol'
import { ALL, helper, nextMessage, onTab } from '../nodes/support'
import { until } from '../../support/wait'
import { withEmulator } from '../../support/emulator-fixture'

const MAX_PACKET = 1536 * 1024
const MiB = 1024 * 1024

describe('reliability: values at the limits', function () {
  this.timeout(30_000)
  const warnings: string[] = []
  // Registered first, so it runs first: the flows close before the broker goes.
  after(() => helper.unload())
  const fx = withEmulator({
    broker: 'mosquitto',
    mosquitto: { extraConfig: [`max_packet_size ${MAX_PACKET}`] },
    clients: 'suite',
    emulator: { logLevel: 'warn', logger: (_level, message) => warnings.push(message) },
  })
  const { clients } = fx
  let writer: StateStoreClient
  let watcher: StateStoreClient
  const states: ConnectionState[] = []

  before(async function () {
    writer = new StateStoreClient({
      brokerUrl: fx.url,
      clientId: `limits-writer-${process.pid}`,
      requestTimeoutMs: 5000,
    })
    watcher = new StateStoreClient({
      brokerUrl: fx.url,
      clientId: `limits-watcher-${process.pid}`,
      requestTimeoutMs: 5000,
    })
    clients.add(writer, watcher)
    await Promise.all([writer, watcher].map((c) => c.ready({ timeoutMs: 5000 })))
    writer.on('status', (s) => states.push(s.state))
  })

  for (const size of [0, 1, MiB]) {
    it(`round-trips a value of ${size} bytes through SET, GET and a notification`, async () => {
      const key = `limits/${size}`
      const value = Buffer.alloc(size)
      for (let i = 0; i < size; i++) value[i] = (i * 31 + 7) & 0xff
      const seen: KeyNotification[] = []
      const observation = await watcher.observe(key, (n) => seen.push(n))
      const set = await writer.set(key, value)
      assert.equal(set.applied, true)
      const got = await writer.get(key)
      assert.ok(got.value?.equals(value), 'GET returns the same bytes')
      assert.ok(got.version?.equals(set.version))
      await until(() => seen.length === 1, 'the notification')
      assert.ok(seen[0]!.value?.equals(value), 'the notification carries the same bytes')
      await observation.close()
    })
  }

  it("refuses a value over the broker's maximum packet size at once with ArgumentError, and the connection stays up", async () => {
    for (const size of [MAX_PACKET, 3 * MiB]) {
      await assert.rejects(writer.set('limits/too-big', Buffer.alloc(size)), (err: unknown) => {
        assert.ok(err instanceof ArgumentError, String(err))
        assert.match(err.message, new RegExp(`broker accepts at most ${MAX_PACKET}`))
        return true
      })
    }
    // A value just under the limit still goes through.
    const under = MAX_PACKET - 1024
    assert.equal((await writer.set('limits/big', Buffer.alloc(under, 1))).applied, true)
    assert.equal((await writer.get('limits/big')).value?.length, under)
    assert.deepEqual(states, [], 'no disconnect, no reconnect')
    assert.equal(writer.status.state, 'connected')
  })

  it('drops a notification the broker would refuse, and keeps serving', async () => {
    // A long key doubles in the notification topic (hex), so the notification outgrows the SET.
    const key = 'k'.repeat(30_000)
    const seen: KeyNotification[] = []
    await watcher.observe(key, (n) => seen.push(n))
    const value = Buffer.alloc(MAX_PACKET - 40_000, 2)
    assert.equal((await writer.set(key, value)).applied, true)
    await until(
      () => warnings.some((w) => /notification .* dropped: \d+ bytes exceed the broker's Maximum Packet Size/.test(w)),
      'the emulator to log the dropped notification',
    )
    assert.equal((await writer.set(key, 'small')).applied, true)
    await until(() => seen.some((n) => n.value?.toString() === 'small'), 'the next notification')
    assert.equal(seen.length, 1, 'only the notification that fits')
    assert.ok(
      !warnings.some((w) => /connection .* lost/.test(w)),
      `the emulator stayed connected: ${warnings.join('; ')}`,
    )
  })

  it('ss-set: a huge Buffer goes to Catch as InvalidArgument with the msg; 1 MiB round-trips through ss-get', async () => {
    await helper.load(ALL, [
      { id: 'tab', type: 'tab', label: 'limits' },
      { id: 'cfg', type: 'ss-config', broker: fx.url, requestTimeout: '5000' },
      onTab({ id: 'set', type: 'ss-set', store: 'cfg', key: 'topic', keyType: 'msg', wires: [['out']] }),
      onTab({ id: 'out', type: 'helper' }),
      onTab({
        id: 'get',
        type: 'ss-get',
        store: 'cfg',
        key: 'topic',
        keyType: 'msg',
        decode: 'buffer',
        wires: [['got']],
      }),
      onTab({ id: 'got', type: 'helper' }),
      onTab({ id: 'catcher', type: 'catch', scope: null, uncaught: false, wires: [['caught']] }),
      onTab({ id: 'caught', type: 'helper' }),
    ])
    const next = (id: string) => nextMessage(helper.getNode(id), 10_000)
    const huge = Buffer.alloc(8 * MiB, 3)
    let caught = next('caught')
    helper.getNode('set').receive({ topic: 'limits/node-huge', payload: huge, marker: 1 })
    const c = await caught
    const error = c.error as { code: string; message: string; cause: { kind: string } }
    assert.equal(error.cause.kind, 'argument')
    assert.match(error.message, /Maximum Packet Size/)
    assert.equal(c.marker, 1)
    assert.equal((c.payload as Buffer).length, huge.length, 'the msg is kept')

    const mib = Buffer.alloc(MiB, 9)
    const written = next('out')
    helper.getNode('set').receive({ topic: 'limits/node-mib', payload: mib })
    assert.equal((await written).applied, true)
    const read = next('got')
    helper.getNode('get').receive({ topic: 'limits/node-mib' })
    assert.ok(((await read).payload as Buffer).equals(mib))
    caught = next('caught')
    helper.getNode('get').receive({ topic: '' })
    assert.equal(((await caught).error as { code: string }).code, 'KeyEmpty', 'still answering')
  })
})

describe('reliability: publishPacketSize', function () {
  it('matches the bytes mqtt-packet writes for a QoS 1 PUBLISH', () => {
    // mqtt.js's own encoder (a dependency of mqtt), as the reference.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const mqttPacket = require('mqtt-packet') as { generate(packet: object, options: object): Buffer }
    const text = (max: number) => fc.string({ unit: 'binary', maxLength: max })
    fc.assert(
      fc.property(
        text(200).filter((t) => t.length > 0),
        // The remaining length takes 1 to 4 bytes: payloads around each boundary.
        fc.oneof(
          { weight: 9, arbitrary: fc.nat(300) },
          { weight: 1, arbitrary: fc.constantFrom(16_000, 16_383, 16_700, 2_096_800, 2_097_152) },
        ),
        fc.record(
          {
            payloadFormatIndicator: fc.boolean(),
            messageExpiryInterval: fc.nat(),
            contentType: text(40),
            responseTopic: text(300),
            correlationData: fc.uint8Array({ maxLength: 40 }).map((u) => Buffer.from(u)),
            userProperties: fc.dictionary(
              text(12),
              fc.oneof(text(40), fc.array(text(40), { minLength: 1, maxLength: 3 })),
              { minKeys: 1 },
            ),
          },
          { requiredKeys: [] },
        ),
        (topic, payloadBytes, properties: PublishPropertiesForSize) => {
          const wire = mqttPacket.generate(
            {
              cmd: 'publish',
              topic,
              payload: Buffer.alloc(payloadBytes),
              qos: 1,
              messageId: 1,
              dup: false,
              retain: false,
              properties,
            },
            { protocolVersion: 5 },
          )
          assert.equal(publishPacketSize(topic, payloadBytes, properties), wire.length)
        },
      ),
      { numRuns: 100 },
    )
  })
})

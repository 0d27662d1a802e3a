import assert from 'node:assert/strict'
import fc from 'fast-check'
import { generate, parser as mqttParser, type IPublishPacket } from 'mqtt-packet'
import { encodePuback, encodePublish, type PublishPacket } from '../../src/transport/publish-packet'

const V5 = { protocolVersion: 5 }

function parsed(bytes: Buffer): IPublishPacket {
  const p = mqttParser(V5)
  let packet: IPublishPacket | undefined
  p.on('packet', (x) => (packet = x as IPublishPacket))
  p.on('error', (err: Error) => assert.fail(err))
  p.parse(bytes)
  assert.ok(packet, 'one whole packet')
  return packet
}

const text = fc.string({ unit: 'grapheme', maxLength: 40 })
const publishes: fc.Arbitrary<PublishPacket> = fc
  .record(
    {
      topic: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 60 }),
      payload: fc.oneof(
        fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)),
        text,
      ),
      qos: fc.constantFrom(0, 1, 2),
      dup: fc.boolean(),
      retain: fc.boolean(),
      messageId: fc.integer({ min: 1, max: 0xffff }),
      properties: fc.record(
        {
          contentType: text,
          responseTopic: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 60 }),
          correlationData: fc.uint8Array({ maxLength: 32 }).map((a) => Buffer.from(a)),
          messageExpiryInterval: fc.integer({ min: 0, max: 0xffffffff }),
          payloadFormatIndicator: fc.boolean(),
          userProperties: fc.dictionary(text, fc.oneof(text, fc.array(text, { minLength: 1, maxLength: 3 })), {
            minKeys: 1,
            maxKeys: 6,
          }),
        },
        { requiredKeys: [] },
      ),
    },
    { requiredKeys: ['topic', 'payload', 'qos', 'messageId'] },
  )
  .map((p) => ({ cmd: 'publish', ...p }))

describe('encodePublish: a PUBLISH in one Buffer', function () {
  it("makes mqtt-packet's generate bytes, byte for byte, for every PUBLISH of the properties it encodes", function () {
    fc.assert(
      fc.property(publishes, (packet) => {
        const ours = encodePublish(packet, 5)
        assert.ok(ours, 'encoded')
        assert.deepEqual(ours, generate(packet as IPublishPacket, V5))
      }),
      { numRuns: 500 },
    )
  })

  it('the notification and answer shapes the emulator sends read back as they were made', function () {
    const packet: PublishPacket = {
      cmd: 'publish',
      topic: 'clients/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/watcher/command/notify/a2V5',
      payload: Buffer.from('*2\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n'),
      qos: 1,
      messageId: 7,
      properties: {
        contentType: 'application/octet-stream',
        correlationData: Buffer.from('0123456789abcdef'),
        userProperties: { __ts: '1764643200000:00001:emulator', __protVer: '1.0', many: ['x', 'y'] },
      },
    }
    const read = parsed(encodePublish(packet, 5)!)
    assert.equal(read.topic, packet.topic)
    assert.deepEqual(read.payload, packet.payload)
    assert.equal(read.messageId, 7)
    assert.equal(read.qos, 1)
    assert.deepEqual(read.properties?.correlationData, packet.properties!.correlationData)
    assert.deepEqual({ ...read.properties?.userProperties }, packet.properties!.userProperties)
  })

  it('leaves to generate what it does not encode: MQTT 3.1.1, other packets and properties, values of other types, over-long strings', function () {
    const base: PublishPacket = { cmd: 'publish', topic: 't', payload: Buffer.from('x'), qos: 1, messageId: 1 }
    const others: Array<[string, PublishPacket, number | undefined]> = [
      ['MQTT 3.1.1', base, 4],
      ['a PUBACK', { cmd: 'puback', messageId: 1 }, 5],
      ['a topic alias', { ...base, properties: { topicAlias: 3 } }, 5],
      ['an empty topic (with an alias)', { ...base, topic: '' }, 5],
      ['a number as a user property value', { ...base, properties: { userProperties: { n: 1 } } }, 5],
      ['correlation data as a string', { ...base, properties: { correlationData: 'abc' } }, 5],
      ['a null property', { ...base, properties: { contentType: null } }, 5],
      ['no user property in the map', { ...base, properties: { userProperties: {} } }, 5],
      ['a QoS 1 PUBLISH without its id', { cmd: 'publish', topic: 't', qos: 1 }, 5],
      ['a topic over 65,535 bytes', { ...base, topic: 'x'.repeat(70_000) }, 5],
      ['a user property over 65,535 bytes', { ...base, properties: { userProperties: { k: 'x'.repeat(70_000) } } }, 5],
    ]
    for (const [what, packet, version] of others) assert.equal(encodePublish(packet, version), null, what)
  })

  it('makes the PUBACK mqtt.js sends for a PUBLISH it took as generate does; leaves any other to generate', function () {
    for (const messageId of [1, 5, 300, 0xffff]) {
      const packet = { cmd: 'puback', messageId, reasonCode: 0 }
      assert.deepEqual(encodePuback(packet, 5), generate(packet as Parameters<typeof generate>[0], V5))
    }
    for (const packet of [
      { cmd: 'puback', messageId: 5 },
      { cmd: 'puback', messageId: 5, reasonCode: 16 },
      { cmd: 'puback', messageId: 5, reasonCode: 0, properties: {} },
      { cmd: 'pubrec', messageId: 5, reasonCode: 0 },
    ])
      assert.equal(encodePuback(packet, 5), null, JSON.stringify(packet))
    assert.equal(encodePuback({ cmd: 'puback', messageId: 5, reasonCode: 0 }, 4), null, 'MQTT 3.1.1')
  })
})

import assert from 'node:assert/strict'
import mqtt from 'mqtt'
import { StateStoreClient } from '../../../src/client'
import { ArgumentError } from '../../../src/diagnostics/errors'
import { startEmulator, MEMORY_PROFILES, type Emulator, type MemoryProfile } from '../../../src/emulator'
import { CONTENT_TYPE, REQUEST_TOPIC } from '../../../src/protocol'
import { Keyspace, OWN_ATTRIBUTES_OVERHEAD_BYTES, RECORD_OVERHEAD_BYTES } from '../../../src/emulator/core/keyspace'
import { HybridLogicalClock } from '../../../src/hlc'
import { Reply, Request } from '../../../src/protocol'
import { decodeExact } from '../../../src/resp'
import { RawClient } from '../emulator/raw-client'

/**
 * One 200 MiB SET took the emulator to 950 MB and four of 250 MiB to 2.1 GB: `--max-keys` bounded
 * only the count. A value size limit and a byte quota (keys and values) now answer the quota error.
 */
describe('security: the bytes the emulator holds are bounded', () => {
  const k = (text: string) => Buffer.from(text)

  it('counts key and value bytes and their bookkeeping through SET, overwrite, DEL, VDEL and expiry, and refuses past the quotas', () => {
    let now = 1_000_000
    const O = RECORD_OVERHEAD_BYTES
    const max = 100 + 3 * O
    const store = new Keyspace({ clock: new HybridLogicalClock(), now: () => now, maxBytes: max, maxValueBytes: 40 })
    assert.deepEqual(store.set(k('a'), Buffer.alloc(41)), {
      kind: 'error',
      code: 'QuotaExceeded',
      quota: { limit: 'maxValueBytes', max: 40, needed: 41 },
    })
    assert.equal(store.set(k('a'), Buffer.alloc(40)).kind, 'applied')
    assert.equal(store.set(k('b'), Buffer.alloc(40)).kind, 'applied')
    assert.equal(store.bytes, 82 + 2 * O)
    assert.deepEqual(
      store.set(k('c'), Buffer.alloc(18)),
      { kind: 'error', code: 'QuotaExceeded', quota: { limit: 'maxBytes', max, needed: 101 + 3 * O } },
      '101 bytes',
    )
    assert.equal(store.set(k('c'), Buffer.alloc(17)).kind, 'applied', '100 bytes')
    // An overwrite counts what it adds; a smaller value frees bytes.
    assert.equal(store.set(k('a'), Buffer.alloc(10)).kind, 'applied')
    assert.equal(store.bytes, 70 + 3 * O)
    assert.equal(store.del(k('b')).kind, 'deleted')
    assert.equal(store.vdel(k('c'), Buffer.alloc(17)).kind, 'deleted')
    assert.equal(store.bytes, 11 + O)
    // A key with an expiry counts its own attributes as well.
    assert.equal(store.set(k('t'), Buffer.alloc(0), { expiryMs: 10 }).kind, 'applied')
    assert.equal(store.bytes, 12 + 2 * O + OWN_ATTRIBUTES_OVERHEAD_BYTES)
    now += 20
    // Expired bytes are collected before a SET is refused.
    assert.equal(store.set(k('d'), Buffer.alloc(40)).kind, 'applied')
    assert.equal(store.set(k('e'), Buffer.alloc(40)).kind, 'applied')
    assert.equal(store.bytes, 93 + 3 * O)
    store.close()
  })

  describe('through the service, with the low memory profile (16 MiB messages, as the emulator had before profiles)', function () {
    this.timeout(20_000)
    let emulator: Emulator
    let raw: RawClient
    const DEFAULT_MAX_VALUE_BYTES = MEMORY_PROFILES.low - 1024 * 1024
    before(async () => {
      emulator = await startEmulator({
        listen: { host: '127.0.0.1', port: 0 },
        memoryProfile: 'low',
        logLevel: 'error',
      })
      raw = await RawClient.connect(emulator.brokerUrl)
    })
    after(async () => {
      await raw?.close()
      await emulator?.stop()
    })

    it('answers a value over 15 MiB with the quota error, keeps serving, and stores one at the limit', async () => {
      const over = await raw.request(Request.set('big', Buffer.alloc(DEFAULT_MAX_VALUE_BYTES + 1)), {
        timeoutMs: 15_000,
      })
      assert.deepEqual(decodeExact(over.payload), { kind: 'error', value: 'ERR the quota has been exceeded' })
      assert.deepEqual((await raw.request(Request.get('big'))).payload, Reply.nil)
      const at = await raw.request(Request.set('big', Buffer.alloc(DEFAULT_MAX_VALUE_BYTES)), { timeoutMs: 15_000 })
      assert.deepEqual(at.payload, Reply.ok)
    })

    it('refuses a packet far over the limit before reading it whole: the client is told, a raw sender cut off, others served', async () => {
      const client = new StateStoreClient({ brokerUrl: emulator.brokerUrl, clientId: `quota-${process.pid}` })
      try {
        await client.ready({ timeoutMs: 5000 })
        await assert.rejects(
          client.set('huge', Buffer.alloc(DEFAULT_MAX_VALUE_BYTES * 2)),
          (err: unknown) => err instanceof ArgumentError && /Maximum Packet Size/.test(err.message),
        )
        assert.equal((await client.set('small', 'v')).applied, true)
      } finally {
        await client.close()
      }
      const sender = await mqtt.connectAsync(emulator.brokerUrl, {
        protocolVersion: 5,
        clientId: 'quota-raw',
        reconnectPeriod: 0,
      })
      const cut = new Promise<number | undefined>((resolve) =>
        sender.once('disconnect', (packet) => resolve(packet.reasonCode)),
      )
      sender.publish(REQUEST_TOPIC, Buffer.alloc(DEFAULT_MAX_VALUE_BYTES * 2), {
        qos: 1,
        properties: {
          responseTopic: 'clients/quota-raw/r',
          correlationData: Buffer.from('c'),
          contentType: CONTENT_TYPE,
        },
      })
      assert.equal(await cut, 0x95, 'DISCONNECT Packet too large')
      await sender.endAsync(true)
      assert.deepEqual((await raw.request(Request.get('small'))).payload, Reply.value(Buffer.from('v')))
    })
  })

  describe("the AIO broker's memory profiles", function () {
    this.timeout(30_000)
    const largest = async (memoryProfile: MemoryProfile | undefined) => {
      const emulator = await startEmulator({
        listen: { host: '127.0.0.1', port: 0 },
        ...(memoryProfile ? { memoryProfile } : {}),
        logLevel: 'error',
      })
      try {
        const c = mqtt.connect(emulator.brokerUrl, { protocolVersion: 5, clientId: 'profile', reconnectPeriod: 0 })
        const connack = await new Promise<mqtt.IConnackPacket>((resolve, reject) =>
          c.once('connect', resolve).once('error', reject),
        )
        await c.endAsync(true)
        return connack.properties?.maximumPacketSize
      } finally {
        await emulator.stop()
      }
    }

    it('announces the largest message of each profile as the Maximum Packet Size: medium (64 MiB) by default, tiny 4 MiB, high 256 MiB', async () => {
      assert.equal(await largest(undefined), 64 * 1024 * 1024)
      assert.equal(await largest('tiny'), 4 * 1024 * 1024)
      assert.equal(await largest('high'), 268_435_455)
    })

    it('stores a 20 MiB value by default (medium), as a cluster does, and refuses one over 3 MiB with tiny', async () => {
      for (const [memoryProfile, size, answer] of [
        [undefined, 20 * 1024 * 1024, Reply.ok],
        ['tiny', 3 * 1024 * 1024 + 1, null],
      ] as const) {
        const emulator = await startEmulator({
          listen: { host: '127.0.0.1', port: 0 },
          ...(memoryProfile ? { memoryProfile } : {}),
          logLevel: 'error',
        })
        try {
          const raw = await RawClient.connect(emulator.brokerUrl)
          const reply = await raw.request(Request.set('big', Buffer.alloc(size)), { timeoutMs: 15_000 })
          if (answer) assert.deepEqual(reply.payload, answer)
          else assert.deepEqual(decodeExact(reply.payload), { kind: 'error', value: 'ERR the quota has been exceeded' })
          await raw.close()
        } finally {
          await emulator.stop()
        }
      }
    })

    it('refuses a profile it does not know', async () => {
      await assert.rejects(
        startEmulator({ memoryProfile: 'huge' as MemoryProfile, logLevel: 'silent' }),
        /memoryProfile must be one of tiny, low, medium, high/,
      )
    })
  })
})

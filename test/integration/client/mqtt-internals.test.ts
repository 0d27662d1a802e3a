/**
 * The mqtt.js behaviour src/client/connection.ts and src/emulator/service/service.ts rely on beyond its
 * documented API, each checked on its own so that an mqtt.js release that changes one fails here
 * with a message naming what changed and what depends on it (package.json pins mqtt to the minor
 * versions these tests passed on). Documented API (removeOutgoingMessage, handleMessage, the
 * messageIdProvider option, the packetreceive event) is checked where we depend on a detail of it.
 */
import assert from 'node:assert/strict'
import mqtt, { type IClientOptions, type IPublishPacket, type MqttClient, type Packet } from 'mqtt'
import { FakeBroker } from './support/fake-broker'
import { eventually, until } from '../../support/wait'
import { mosquittoUrl } from '../../support/broker'
import { storeWithoutCopy } from '../../../src/transport/store-without-copy'
import { writeWholePackets } from '../../../src/transport/whole-packets'
import { generate } from 'mqtt-packet'
import { TrackingMessageIdProvider } from '../../../src/client/connection'

// eslint-disable-next-line @typescript-eslint/no-require-imports
const MQTT_VERSION = (require('mqtt/package.json') as { version: string }).version

/** The failure message: which mqtt.js behaviour changed, and what of ours depends on it. */
function changed(what: string, reliedOnBy: string): string {
  return `mqtt.js ${MQTT_VERSION} changed ${what}; ${reliedOnBy} depends on it. Adapt that code, then widen the mqtt range in package.json.`
}

describe(`mqtt.js ${MQTT_VERSION}: the behaviour the client and the emulator rely on`, function () {
  let broker: FakeBroker
  const clients: MqttClient[] = []
  before(async () => {
    broker = await FakeBroker.start()
  })
  beforeEach(() => {
    broker.connects.length = 0
    broker.auths.length = 0
    broker.publishes.length = 0
    broker.pubackCode = 0
  })
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.endAsync(true)))
  })
  after(() => broker?.stop())

  async function connected(options: IClientOptions = {}, url = broker.url): Promise<MqttClient> {
    const client = mqtt.connect(url, {
      protocolVersion: 5,
      clientId: `internals-${clients.length}`,
      reconnectPeriod: 50,
      ...options,
    })
    clients.push(client)
    client.on('error', () => {})
    await new Promise<void>((resolve) => client.once('connect', () => resolve()))
    return client
  }

  it('_sendPacket writes an AUTH packet as given (K8S-SAT re-authentication)', async () => {
    const client = await connected()
    const internal = client as unknown as { _sendPacket?: (packet: object) => void }
    assert.equal(
      typeof internal._sendPacket,
      'function',
      changed('or removed MqttClient#_sendPacket', 'Connection.reauthenticate (AUTH 0x19)'),
    )
    const token = Buffer.from('rotated-token')
    internal._sendPacket!({
      cmd: 'auth',
      reasonCode: 0x19,
      properties: { authenticationMethod: 'K8S-SAT', authenticationData: token },
    })
    const auth = await eventually(
      () => broker.auths[0],
      changed('what _sendPacket does with an AUTH packet', 'Connection.reauthenticate'),
      3000,
    )
    assert.equal(auth.reasonCode, 0x19, changed('the AUTH reason code _sendPacket writes', 'Connection.reauthenticate'))
    assert.ok(
      auth.properties?.authenticationData?.equals(token),
      changed('the AUTH properties _sendPacket writes', 'Connection.reauthenticate'),
    )
  })

  it('a reconnect sends options.properties.authenticationData as changed at run time (a fresh K8S-SAT token)', async () => {
    const client = await connected({
      properties: { authenticationMethod: 'K8S-SAT', authenticationData: Buffer.from('first') },
    })
    assert.ok(client.options.properties, changed('MqttClient#options.properties', 'Connection.onReconnect'))
    client.options.properties.authenticationData = Buffer.from('second')
    broker.dropAll()
    const again = await eventually(() => broker.connects[1], 'the reconnect', 5000)
    assert.equal(
      again.properties?.authenticationData?.toString(),
      'second',
      changed(
        'where a reconnect reads the CONNECT properties from (options.properties)',
        'Connection.onReconnect and reauthenticate',
      ),
    )
  })

  it('the reconnect timer is armed with options.reconnectPeriod as changed at run time (our backoff)', async () => {
    const client = await connected()
    const PERIOD = 4321
    client.options.reconnectPeriod = PERIOD
    const delays: unknown[] = []
    const realInterval = globalThis.setInterval
    const realTimeout = globalThis.setTimeout
    // Record the delays timers are armed with while the connection drops; mqtt.js arms the reconnect timer then.
    globalThis.setInterval = ((fn: () => void, ms?: number, ...rest: unknown[]) => (
      delays.push(ms),
      realInterval(fn, ms, ...rest)
    )) as typeof setInterval
    globalThis.setTimeout = ((fn: () => void, ms?: number, ...rest: unknown[]) => (
      delays.push(ms),
      realTimeout(fn, ms, ...rest)
    )) as typeof setTimeout
    try {
      const offline = new Promise<void>((resolve) => client.once('offline', () => resolve()))
      broker.dropAll()
      await offline
    } finally {
      globalThis.setInterval = realInterval
      globalThis.setTimeout = realTimeout
    }
    assert.ok(
      delays.includes(PERIOD),
      changed(
        `how the reconnect timer is armed (delays seen: ${JSON.stringify(delays)})`,
        "Connection's reconnect backoff (options.reconnectPeriod)",
      ),
    )
  })

  it('packetreceive reports a PUBACK before the publish callback runs, which gets the PUBLISH with its message id', async () => {
    const client = await connected()
    broker.pubackCode = 0x10
    const order: string[] = []
    client.on('packetreceive', (packet: Packet) => {
      if (packet.cmd === 'puback') order.push(`puback ${packet.messageId} 0x${(packet.reasonCode ?? 0).toString(16)}`)
    })
    const acked = await new Promise<{ messageId?: number }>((resolve, reject) =>
      client.publish('t', 'x', { qos: 1 }, (err, packet) => {
        order.push('callback')
        if (err) reject(err)
        else resolve(packet ?? {})
      }),
    )
    assert.equal(
      typeof acked.messageId,
      'number',
      changed(
        'what the publish callback receives (the stored PUBLISH with its messageId)',
        'Connection.publish (PUBACK 0x10)',
      ),
    )
    assert.deepEqual(
      order,
      [`puback ${acked.messageId} 0x10`, 'callback'],
      changed(
        'the order of packetreceive and the publish callback, or a PUBACK 0x10 is now an error',
        'Connection.publish (noSubscribers)',
      ),
    )
  })

  it('a messageIdProvider allocates the id synchronously inside publish(), and that id goes on the wire', async () => {
    const ids = new TrackingMessageIdProvider()
    const client = await connected({ messageIdProvider: ids })
    ids.last = undefined
    const done = new Promise<void>((resolve) => client.publish('t', 'x', { qos: 1 }, () => resolve()))
    const allocated = ids.last
    assert.equal(
      typeof allocated,
      'number',
      changed(
        'when publish() allocates a message id (no longer synchronously)',
        'Connection.publish (the id returned for forget())',
      ),
    )
    await done
    assert.equal(
      broker.publishes[0]?.messageId,
      allocated,
      changed('which allocated id a PUBLISH carries', 'Connection.publish'),
    )
  })

  it('while offline a QoS 1 publish waits in outgoing under its id, and removeOutgoingMessage drops it with an error', async () => {
    const ids = new TrackingMessageIdProvider()
    const client = await connected({ messageIdProvider: ids, reconnectPeriod: 60_000 })
    const offline = new Promise<void>((resolve) => client.once('offline', () => resolve()))
    broker.dropAll()
    await offline
    ids.last = undefined
    const removed = new Promise<Error | undefined>((resolve) =>
      client.publish('t', 'x', { qos: 1 }, (err) => resolve(err)),
    )
    const id = ids.last
    assert.equal(typeof id, 'number', changed('message id allocation while offline', 'Connection.publish / forget'))
    assert.ok(
      client.outgoing[id!],
      changed('MqttClient#outgoing (an offline publish no longer waits there under its id)', 'Connection.forget'),
    )
    client.removeOutgoingMessage(id!)
    const err = await removed
    assert.ok(
      err instanceof Error,
      changed('removeOutgoingMessage (the publish callback no longer gets an error)', 'Connection.forget'),
    )
    assert.equal(
      client.outgoing[id!],
      undefined,
      changed('removeOutgoingMessage (the publish stays in outgoing)', 'Connection.forget'),
    )
  })

  it('handleMessage, overridden, is called once per PUBLISH and holds the next until its callback runs (emulator back-pressure)', async function () {
    const url = await mosquittoUrl(this)
    const reader = await connected({ clientId: `internals-reader-${process.pid}` }, url)
    const writer = await connected({ clientId: `internals-writer-${process.pid}` }, url)
    const topic = `internals/${process.pid}`
    const handled: string[] = []
    let release: (() => void) | null = null
    reader.handleMessage = (packet: IPublishPacket, callback) => {
      handled.push(packet.payload.toString())
      release = () => callback()
    }
    await reader.subscribeAsync(topic, { qos: 1 })
    await writer.publishAsync(topic, 'one', { qos: 1 })
    await writer.publishAsync(topic, 'two', { qos: 1 })
    await eventually(
      () => (handled.length > 0 ? true : undefined),
      changed('handleMessage (an override is no longer called)', 'StateStoreService (request intake)'),
      3000,
    )
    // Absence is the outcome here: the second PUBLISH must wait for the first callback.
    await new Promise((r) => setTimeout(r, 200))
    assert.deepEqual(
      handled,
      ['one'],
      changed(
        'handleMessage back-pressure (the next message no longer waits for the callback)',
        'StateStoreService (pausing reads while requests wait for the disk)',
      ),
    )
    release!()
    await eventually(
      () => (handled.length === 2 ? true : undefined),
      changed('handleMessage (the callback no longer releases the next message)', 'StateStoreService'),
      3000,
    )
    assert.deepEqual(handled, ['one', 'two'])
    release!()
  })

  it('_storeAndSend puts a QoS 1 PUBLISH in outgoingStore and writes it; with storeWithoutCopy the stored one is the one sent (client and emulator)', async () => {
    const client = await connected()
    const internal = client as unknown as { _storeAndSend?: unknown; _writePacket?: unknown }
    assert.equal(
      typeof internal._storeAndSend,
      'function',
      changed(
        'or removed MqttClient#_storeAndSend',
        'storeWithoutCopy (src/transport/store-without-copy.ts, the client and the emulator)',
      ),
    )
    assert.equal(
      typeof internal._writePacket,
      'function',
      changed('or removed MqttClient#_writePacket', 'storeWithoutCopy'),
    )
    storeWithoutCopy(client)
    const stored: IPublishPacket[] = []
    const put = client.outgoingStore.put.bind(client.outgoingStore)
    client.outgoingStore.put = (packet, cb) => {
      stored.push(packet as IPublishPacket)
      return put(packet, cb)
    }
    const payload = Buffer.from('notification')
    const properties = { correlationData: Buffer.from('c1'), userProperties: { __ts: '1:0:n' } }
    await client.publishAsync('s/t', payload, { qos: 1, properties })
    assert.equal(
      stored.length,
      1,
      changed('where a QoS 1 PUBLISH is stored (no longer outgoingStore.put)', 'storeWithoutCopy'),
    )
    assert.equal(stored[0]!.payload, payload, 'storeWithoutCopy: the stored PUBLISH is a copy')
    assert.equal(stored[0]!.topic, 's/t')
    assert.equal(broker.publishes[0]?.topic, 's/t', 'the PUBLISH reaches the broker')
    assert.equal(broker.publishes[0]?.messageId, stored[0]!.messageId, 'with the stored message id')
  })

  it('_writePacket(packet, cb) writes with mqtt-packet and emits packetsend; with writeWholePackets each packet is one write of the same bytes (client and emulator)', async () => {
    const client = await connected()
    const internal = client as unknown as { _writePacket?: unknown; stream: { write(chunk: Buffer): boolean } }
    assert.equal(
      typeof internal._writePacket,
      'function',
      changed('or removed MqttClient#_writePacket', 'writeWholePackets (src/transport/whole-packets.ts)'),
    )
    writeWholePackets(client)
    const writes: Buffer[] = []
    const write = internal.stream.write.bind(internal.stream)
    internal.stream.write = (chunk: Buffer) => {
      writes.push(Buffer.from(chunk))
      return write(chunk)
    }
    const sent: Packet[] = []
    client.on('packetsend', (p) => sent.push(p))
    const payload = Buffer.from('notification')
    const properties = { contentType: 'application/octet-stream', userProperties: { __ts: '1:0:n', __protVer: '1.0' } }
    await client.publishAsync('s/whole', payload, { qos: 1, properties })
    const publish = sent.find((p) => p.cmd === 'publish') as IPublishPacket
    assert.ok(publish, 'packetsend heard the PUBLISH')
    assert.equal(writes.length, 1, 'one write for the whole PUBLISH')
    assert.deepEqual(writes[0], generate(publish, { protocolVersion: 5 }), "the bytes are mqtt-packet's own")
    assert.equal(broker.publishes.at(-1)?.topic, 's/whole', 'the broker reads the PUBLISH')
    assert.equal(broker.publishes.at(-1)?.messageId, publish.messageId)
  })

  it('writeWholePackets corks the socket once for the packets written in one tick, and uncorks it after', async () => {
    const client = await connected()
    writeWholePackets(client)
    const stream = (client as unknown as { stream: { cork(): void; writableCorked: number } }).stream
    const cork = stream.cork.bind(stream)
    let corks = 0
    stream.cork = () => {
      corks++
      cork()
    }
    const before = broker.publishes.length
    const sent = ['a', 'b', 'c'].map((t) => client.publishAsync(`s/tick/${t}`, Buffer.from(t), { qos: 1 }))
    assert.equal(corks, 1, 'one cork for three packets')
    await Promise.all(sent)
    assert.equal(stream.writableCorked, 0, 'uncorked once the tick is over')
    await until(() => broker.publishes.length - before === 3, 'the three PUBLISHes at the broker')
  })
})

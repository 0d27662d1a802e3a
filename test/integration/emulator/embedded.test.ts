import assert from 'node:assert/strict'
import { connect, Socket } from 'node:net'
import mqtt from 'mqtt'
import { Notification, notificationTopic, Prop, Reply, Request, SERVICE_CLIENTS_PREFIX } from '../../../src/protocol'
import { startBroker, startEmulator, type Emulator } from '../../../src/emulator'
import { RawClient } from './raw-client'

const text = (b: Buffer) => JSON.stringify(b.toString('latin1'))

/** The CONNACK reason code a connection attempt ends with (0 = accepted). */
async function connackCode(url: string, options: mqtt.IClientOptions): Promise<number> {
  const client = mqtt.connect(url, { protocolVersion: 5, reconnectPeriod: 0, connectTimeout: 3000, ...options })
  try {
    return await new Promise<number>((resolve, reject) => {
      client.once('connect', (packet) => resolve(packet.reasonCode ?? 0))
      client.once('error', (err) => {
        const code = (err as { code?: unknown }).code
        if (typeof code === 'number') resolve(code)
        else reject(err)
      })
    })
  } finally {
    await client.endAsync(true)
  }
}

async function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1')
    s.once('connect', () => {
      s.destroy()
      resolve(false)
    })
    s.once('error', () => resolve(true))
  })
}

describe('emulator with its embedded broker', function () {
  this.timeout(10_000)

  describe('client lifecycle', () => {
    let emulator: Emulator
    const clients: RawClient[] = []
    before(async () => {
      emulator = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, logLevel: 'silent' })
    })
    after(async () => {
      await Promise.all(clients.map((c) => c.close()))
      await emulator.stop()
    })

    it('forgets the KEYNOTIFY registrations of a client whose connection ends', async () => {
      const writer = await RawClient.connect(emulator.brokerUrl, 'writer')
      clients.push(writer)
      const first = await RawClient.connect(emulator.brokerUrl, 'watcher')
      assert.equal(text((await first.request(Request.keyNotify('watched'))).payload), text(Reply.ok))
      await first.close()
      // The same client id again, subscribed to its notifications but without registering again.
      const again = await RawClient.connect(emulator.brokerUrl, 'watcher')
      clients.push(again)
      assert.equal(
        text((await again.request(Request.keyNotifyStop('watched'))).payload),
        text(Reply.integer(0)),
        'nothing is registered any more',
      )
      assert.equal(text((await again.request(Request.keyNotify('sentinel'))).payload), text(Reply.ok))
      await writer.request(Request.set('watched', 'unseen'))
      await writer.request(Request.set('sentinel', 'seen'))
      const n = await again.nextNotification()
      assert.equal(n.key.toString(), 'sentinel', 'the old registration produced nothing')
      assert.equal(text(n.payload), text(Notification.set(Buffer.from('seen'))))
    })

    it('delivers notifications to clients that do not subscribe to them, as the Go and .NET SDKs do not (spec 1.4)', async () => {
      const writer = await RawClient.connect(emulator.brokerUrl, 'sdk-writer')
      const goLike = await RawClient.connect(emulator.brokerUrl, 'go-like', {}, { notifications: false })
      const dotnetLike = await RawClient.connect(
        emulator.brokerUrl,
        'dotnet-like',
        {},
        { notifications: `${SERVICE_CLIENTS_PREFIX}/dotnet-like/command/notify` },
      )
      clients.push(writer, goLike, dotnetLike)
      for (const c of [goLike, dotnetLike])
        assert.equal(text((await c.request(Request.keyNotify('sdk-key'))).payload), text(Reply.ok))
      const set = await writer.request(Request.set('sdk-key', 'v'))
      await writer.request(Request.del('sdk-key'))
      for (const c of [goLike, dotnetLike]) {
        const n1 = await c.nextNotification()
        assert.equal(n1.topic, notificationTopic(c.clientId, Buffer.from('sdk-key')))
        assert.equal(text(n1.payload), text(Notification.set(Buffer.from('v'))))
        assert.equal(n1.prop(Prop.timestamp), set.prop(Prop.timestamp))
        assert.equal(n1.qos, 1)
        assert.equal(text((await c.nextNotification()).payload), text(Notification.delete))
      }
    })

    it('sets TCP_NODELAY on every connection it accepts', async () => {
      const port = Number(new URL(emulator.brokerUrl).port)
      const original = Socket.prototype.setNoDelay
      const noDelay: Socket[] = []
      Socket.prototype.setNoDelay = function (this: Socket, on?: boolean) {
        if (on !== false) noDelay.push(this)
        return original.call(this, on)
      }
      let c: RawClient
      try {
        c = await RawClient.connect(emulator.brokerUrl)
      } finally {
        Socket.prototype.setNoDelay = original
      }
      clients.push(c)
      assert.ok(
        noDelay.some((s) => s.localPort === port),
        'the broker side of the connection',
      )
      assert.equal(text((await c.request(Request.get('x'))).payload), text(Reply.nil))
    })

    it('stops within bounds and frees its port', async () => {
      const own = await startEmulator({ logLevel: 'silent' })
      const port = Number(new URL(own.brokerUrl).port)
      const c = await RawClient.connect(own.brokerUrl)
      await c.request(Request.set('k', 'v'))
      await own.stop()
      await own.stop()
      assert.ok(await portIsFree(port))
      await c.close()
    })
  })

  describe('broker authentication', () => {
    let emulator: Emulator
    let url: string
    before(async () => {
      emulator = await startEmulator({
        listen: { port: 0 },
        brokerAuth: { users: { alice: 'secret' }, satTokens: ['good-token'] },
        logLevel: 'silent',
      })
      url = emulator.brokerUrl
    })
    after(() => emulator.stop())

    it('accepts a known user and refuses a wrong password or no credentials', async () => {
      assert.equal(await connackCode(url, { username: 'alice', password: 'secret' }), 0)
      assert.equal(await connackCode(url, { username: 'alice', password: 'wrong' }), 0x86)
      assert.equal(await connackCode(url, { username: 'mallory', password: 'secret' }), 0x86)
      assert.equal(await connackCode(url, {}), 0x87)
    })

    it('accepts K8S-SAT with a known token in the CONNECT and serves the client; refuses other tokens and methods', async () => {
      const sat = (token: string, method = 'K8S-SAT') => ({
        properties: { authenticationMethod: method, authenticationData: Buffer.from(token) },
      })
      assert.equal(await connackCode(url, sat('good-token')), 0)
      assert.equal(await connackCode(url, sat('bad-token')), 0x87)
      assert.equal(await connackCode(url, sat('good-token', 'SCRAM-SHA-1')), 0x8c)
      const c = await RawClient.connect(url, 'sat-client', sat('good-token'))
      try {
        assert.equal(text((await c.request(Request.set('k', 'v'))).payload), text(Reply.ok))
      } finally {
        await c.close()
      }
    })
  })

  it('stops even when the broker it serves through has gone away', async function () {
    this.timeout(5000)
    const broker = await startBroker({ port: 0 })
    const emulator = await startEmulator({ brokerUrl: broker.url, logLevel: 'silent' })
    const c = await RawClient.connect(broker.url)
    await c.request(Request.set('k', 'v'))
    await c.close()
    await broker.stop()
    await emulator.stop()
  })

  it('startBroker runs the broker alone', async () => {
    const broker = await startBroker({ port: 0 })
    try {
      assert.match(broker.url, /^mqtt:\/\/127\.0\.0\.1:\d+$/)
      assert.equal(await connackCode(broker.url, {}), 0)
    } finally {
      await broker.stop()
    }
    assert.ok(await portIsFree(broker.port))
  })
})

import assert from 'node:assert/strict'
import mqtt, { type MqttClient } from 'mqtt'
import { StateStoreClient, type KeyNotification } from '../../../src'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { Hlc } from '../../../src/hlc'
import { Notification, notificationTopic, Prop, PROTOCOL_VERSION, responseTopicFor } from '../../../src/protocol'
import { Backend, call, contextStore, uniquePrefix, type TestStore } from '../context/support'
import { until } from '../../support/wait'
import { pubackCode } from '../../integration/emulator/raw-client'

const YEAR_MS = 365 * 24 * 3600 * 1000

/** The neighbour's forgery: NOTIFY SET VALUE 1000000 stamped a year ahead by a node id of its own. */
function forgedProperties(): { userProperties: Record<string, string> } {
  return {
    userProperties: {
      [Prop.timestamp]: new Hlc(Date.now() + YEAR_MS, 0, 'fake').toString(),
      [Prop.protocolVersion]: PROTOCOL_VERSION,
    },
  }
}

async function neighbour(url: string): Promise<MqttClient> {
  return mqtt.connectAsync(url, { protocolVersion: 5, clientId: `neighbour-${process.pid}`, reconnectPeriod: 0 })
}

/**
 * What a neighbour on the same broker did under `npm start`: published a NOTIFY to a context
 * store's notification topic; the next "count" write then wrote 1000001 and a genuine SET 7 was
 * ignored as older. Each case sends a genuine change after the forgery and waits for it: the
 * forgery, published first on the same broker, would have arrived before it.
 */
function forgeryCase(
  name: string,
  start: (ctx: Mocha.Context) => Promise<{ url: string; stop: () => Promise<void> }>,
  refusedByBroker: boolean,
): void {
  describe(name, function () {
    this.timeout(20_000)
    let backend: { url: string; stop: () => Promise<void> }
    let store: TestStore
    let watcher: StateStoreClient
    let writer: StateStoreClient
    let attacker: MqttClient
    const prefix = uniquePrefix()
    const told: KeyNotification[] = []

    before(async function () {
      backend = await start(this)
      store = contextStore({ broker: backend.url, prefix, clientId: `ctx-${process.pid}` })
      await store.open()
      watcher = new StateStoreClient({ brokerUrl: backend.url, clientId: `watch-${process.pid}` })
      writer = new StateStoreClient({ brokerUrl: backend.url, clientId: `writer-${process.pid}` })
      await call((cb) => store.set('global', 'count', 1, cb))
      await watcher.observe(`${prefix}global/count`, (n) => told.push(n))
      attacker = await neighbour(backend.url)
    })
    after(async () => {
      await attacker?.endAsync(true)
      await watcher?.close()
      await writer?.close()
      await store?.close()
      await backend?.stop()
    })

    it('changes neither the context store cache nor what a watcher is told; a genuine write still is', async () => {
      const key = Buffer.from(`${prefix}global/count`)
      const forged = Notification.set(Buffer.from('1000000'))
      const publishes = [`ctx-${process.pid}`, `watch-${process.pid}`].map((id) =>
        pubackCode(
          attacker.publishAsync(notificationTopic(id, key), forged, { qos: 1, properties: forgedProperties() }),
        ),
      )
      const codes = await Promise.all(publishes)
      if (refusedByBroker)
        assert.deepEqual(
          codes,
          [0x87, 0x87],
          'the broker refuses a client publish to the notification topics as not authorized',
        )
      await writer.set(key, '7')
      await until(
        () => told.some((n) => n.value?.toString() === '7') && store.get('global', 'count') === 7,
        'the genuine SET 7 reaches the watcher and the cache',
      )
      assert.deepEqual(
        told.map((n) => n.value?.toString()),
        ['7'],
        'the watcher was told of the genuine write only',
      )
      await call((cb) => store.set('global', 'count', (store.get('global', 'count') as number) + 1, cb))
      assert.equal((await writer.get(key)).value?.toString(), '8')
      if (!refusedByBroker) assert.equal(watcher.droppedNotifications, 1, 'the client counted the forgery it dropped')
    })

    if (refusedByBroker) {
      it('also refuses a forged answer on a client response topic', async () => {
        const code = await pubackCode(
          attacker.publishAsync(responseTopicFor(`writer-${process.pid}`), Buffer.from('+OK\r\n'), { qos: 1 }),
        )
        assert.equal(code, 0x87)
      })
    }
  })
}

describe('security: notifications come from the service alone', () => {
  forgeryCase(
    'on the embedded broker, the broker refuses the forgery',
    async () => {
      const emulator: Emulator = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, logLevel: 'error' })
      return { url: emulator.brokerUrl, stop: () => emulator.stop() }
    },
    true,
  )
  forgeryCase(
    'on a broker without ACLs (mosquitto), the client drops a version further ahead than the service accepts',
    async (ctx) => {
      const backend = await Backend.start(ctx)
      return { url: backend.url, stop: () => backend.stop() }
    },
    false,
  )
})

import assert from 'node:assert/strict'
import mqtt, { type MqttClient } from 'mqtt'
import { StateStoreClient, type KeyNotification } from '../../../src'
import { Hlc } from '../../../src/hlc'
import { Notification, notificationTopic, Prop, PROTOCOL_VERSION } from '../../../src/protocol'
import { Backend, call, contextStore, uniquePrefix, type TestStore } from '../context/support'
import { until } from '../../support/wait'

/**
 * On a broker without ACLs (mosquitto), a notification stamped 55 s ahead, inside the clock's drift
 * limit, from a node id of the forger's own, was taken: a context store's cache held the forged value
 * and ignored the genuine writes after it as older, and a forgery re-sent every minute kept it there.
 * Now a notification from a node id no answer of the service carried is only a reason to read the
 * key: the forged value reaches no cache and no watcher, and the genuine write after it does.
 */
describe('security: a notification from an unknown node id is confirmed by a read', function () {
  this.timeout(30_000)
  let backend: Backend
  let store: TestStore
  let watcher: StateStoreClient
  let writer: StateStoreClient
  let attacker: MqttClient
  const prefix = uniquePrefix()
  const told: KeyNotification[] = []

  before(async function () {
    backend = await Backend.start(this)
    store = contextStore({ broker: backend.url, prefix, clientId: `ctx-node-${process.pid}` })
    await store.open()
    watcher = new StateStoreClient({ brokerUrl: backend.url, clientId: `watch-node-${process.pid}` })
    writer = new StateStoreClient({ brokerUrl: backend.url, clientId: `writer-node-${process.pid}` })
    await call((cb) => store.set('global', 'count', 1, cb))
    await watcher.observe(`${prefix}global/count`, (n) => told.push(n))
    attacker = await mqtt.connectAsync(backend.url, {
      protocolVersion: 5,
      clientId: `forger-${process.pid}`,
      reconnectPeriod: 0,
    })
  })
  after(async () => {
    await attacker?.endAsync(true)
    await watcher?.close()
    await writer?.close()
    await store?.close()
    await backend?.stop()
  })

  it('the forged value, 55 s ahead and sent twice, reaches neither the cache nor the watcher; the genuine writes after it do', async () => {
    const key = Buffer.from(`${prefix}global/count`)
    for (const round of [1, 2]) {
      const properties = {
        userProperties: {
          [Prop.timestamp]: new Hlc(Date.now() + 55_000, round, 'intruder').toString(),
          [Prop.protocolVersion]: PROTOCOL_VERSION,
        },
      }
      for (const id of [`ctx-node-${process.pid}`, `watch-node-${process.pid}`]) {
        await attacker.publishAsync(notificationTopic(id, key), Notification.set(Buffer.from('1000000')), {
          qos: 1,
          properties,
        })
      }
      const value = String(6 + round)
      await writer.set(key, value)
      await until(
        () => told.some((n) => n.value?.toString() === value) && store.get('global', 'count') === Number(value),
        `the genuine SET ${value} reaches the watcher and the cache`,
        15_000,
      )
      assert.ok(!told.some((n) => n.value?.toString() === '1000000'), 'the watcher was never told the forged value')
    }
    await call((cb) => store.set('global', 'count', (store.get('global', 'count') as number) + 1, cb))
    assert.equal((await writer.get(key)).value?.toString(), '9', 'the next write counts on from the genuine value')
  })
})

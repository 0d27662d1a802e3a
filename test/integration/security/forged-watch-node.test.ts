import assert from 'node:assert/strict'
import mqtt from 'mqtt'
import { StateStoreClient } from '../../../src/client'
import { Hlc } from '../../../src/hlc'
import { Notification, notificationTopic, Prop, PROTOCOL_VERSION } from '../../../src/protocol'
import {
  ALL,
  COMMON,
  flowWith,
  helper,
  lastStatus,
  listen,
  nextMessage,
  startStore,
  type Store,
} from '../nodes/support'
import { until } from '../../support/wait'
import { pubackCode } from '../emulator/raw-client'

/** ss-watch emitted a neighbour's forged NOTIFY as a change of the key; on the embedded broker it cannot be sent. */
describe('security: ss-watch emits the service notifications only', function () {
  this.timeout(20_000)
  let store: Store
  let writer: StateStoreClient
  before(async () => {
    store = await startStore()
    writer = new StateStoreClient({ brokerUrl: store.emulator.brokerUrl, clientId: 'forged-watch-writer' })
    await writer.ready({ timeoutMs: 5000 })
  })
  after(async () => {
    await helper.unload()
    await writer?.close()
    await store?.stop()
  })

  it('a forged NOTIFY from a neighbour is refused, and the next msg is the genuine change', async () => {
    await helper.load(
      ALL,
      flowWith(store.url, { id: 'watch', type: 'ss-watch', keys: 'sec/count', decode: 'auto' }, 1, {
        clientId: 'sec-watch',
      }),
    )
    const out = helper.getNode('out1')
    listen(out)
    await until(() => lastStatus(helper.getNode('watch')).text === `${COMMON}status.watching 1`, 'watching')
    const neighbour = await mqtt.connectAsync(store.emulator.brokerUrl, {
      protocolVersion: 5,
      clientId: 'forger',
      reconnectPeriod: 0,
    })
    try {
      const properties = {
        userProperties: {
          [Prop.timestamp]: new Hlc(Date.now() + 365 * 24 * 3600 * 1000, 0, 'fake').toString(),
          [Prop.protocolVersion]: PROTOCOL_VERSION,
        },
      }
      const code = await pubackCode(
        neighbour.publishAsync(
          notificationTopic('sec-watch', Buffer.from('sec/count')),
          Notification.set(Buffer.from('1000000')),
          { qos: 1, properties },
        ),
      )
      assert.equal(code, 0x87)
    } finally {
      await neighbour.endAsync(true)
    }
    const next = nextMessage(out)
    await writer.set('sec/count', '7')
    assert.equal((await next).payload, 7)
  })
})

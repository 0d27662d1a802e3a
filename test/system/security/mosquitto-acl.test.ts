import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import mqtt, { type MqttClient } from 'mqtt'
import { StateStoreClient, type KeyNotification } from '../../../src'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { Hlc } from '../../../src/hlc'
import { Notification, notificationTopic, Prop, PROTOCOL_VERSION, responseTopicFor } from '../../../src/protocol'
import { Mosquitto, mosquittoPath } from '../../support/mosquitto'
import { until } from '../../support/wait'
import { passwordFile } from './support'
import { pubackCode } from '../../integration/emulator/raw-client'

/** The ACL docs/security.md gives for mosquitto, word for word. */
const ACL = `# Every user: requests to the state store, answers and notifications read.
pattern write statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke
pattern read clients/%c/#
pattern read clients/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/+/command/notify/+

# The state store service alone: reads requests, writes answers and notifications.
user statestore
topic read statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke
topic write clients/#
`

/** The documented mosquitto ACL, tried: a neighbour's forged notification and answer go nowhere. */
describe('security: the mosquitto ACL of docs/security.md', function () {
  this.timeout(30_000)
  let mosquitto: Mosquitto
  let emulator: Emulator
  let watcher: StateStoreClient
  let neighbour: MqttClient
  const told: KeyNotification[] = []

  before(async function () {
    if (!mosquittoPath()) {
      if (process.env.CI) throw new Error('CI must provide mosquitto')
      this.skip()
    }
    const probe = new Mosquitto(0)
    const dir = probe.dir
    writeFileSync(join(dir, 'acl'), ACL)
    const passwd = passwordFile(dir, { statestore: 'svc-pw', alice: 'alice-pw', mallory: 'mallory-pw' })
    mosquitto = await Mosquitto.start({
      extraConfig: ['allow_anonymous false', `password_file ${passwd}`, `acl_file ${join(dir, 'acl')}`],
    })
    emulator = await startEmulator({
      brokerUrl: mosquitto.url,
      brokerUsername: 'statestore',
      brokerPassword: 'svc-pw',
      logLevel: 'error',
    })
    watcher = new StateStoreClient({
      brokerUrl: mosquitto.url,
      clientId: `acl-watch-${process.pid}`,
      username: 'alice',
      password: 'alice-pw',
    })
    await watcher.observe('acl/k', (n) => told.push(n))
    neighbour = await mqtt.connectAsync(mosquitto.url, {
      protocolVersion: 5,
      clientId: 'acl-neighbour',
      username: 'mallory',
      password: 'mallory-pw',
      reconnectPeriod: 0,
    })
  })
  after(async () => {
    await neighbour?.endAsync(true)
    await watcher?.close()
    await emulator?.stop()
    await mosquitto?.stop()
  })

  it('lets clients use the state store and refuses a neighbour forged notifications and answers', async () => {
    const forged = {
      qos: 1 as const,
      properties: {
        userProperties: {
          [Prop.timestamp]: new Hlc(Date.now(), 0, 'fake').toString(),
          [Prop.protocolVersion]: PROTOCOL_VERSION,
        },
      },
    }
    const codes = await Promise.all(
      [
        neighbour.publishAsync(
          notificationTopic(`acl-watch-${process.pid}`, Buffer.from('acl/k')),
          Notification.set(Buffer.from('forged')),
          forged,
        ),
        neighbour.publishAsync(responseTopicFor(`acl-watch-${process.pid}`), Buffer.from('+OK\r\n'), forged),
      ].map(pubackCode),
    )
    assert.deepEqual(codes, [0x87, 0x87])
    await watcher.set('acl/k', 'genuine')
    await until(() => told.length > 0, 'the genuine notification')
    assert.deepEqual(
      told.map((n) => n.value?.toString()),
      ['genuine'],
    )
  })
})

import assert from 'node:assert/strict'
import mqtt, { type MqttClient } from 'mqtt'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { adminResponseTopic } from '../../../src/emulator/admin/wire'
import { RemoteEmulatorAdmin } from '../../../src/emulator/admin'
import { pubackCode } from '../emulator/raw-client'

/**
 * The admin channel's response topics accepted any client's PUBLISH on the embedded broker: a
 * client could forge the answers an `export --admin` or a remote sidebar waits for (a key list of
 * its choosing). They are the service's alone now, as the state store's response topics are.
 */
describe("security: the admin channel's answers come from the emulator alone", function () {
  this.timeout(20_000)
  let emulator: Emulator
  let forger: MqttClient
  let admin: RemoteEmulatorAdmin | undefined

  before(async () => {
    emulator = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, adminOverMqtt: true, logLevel: 'error' })
    forger = await mqtt.connectAsync(emulator.brokerUrl, { protocolVersion: 5, clientId: 'forger', reconnectPeriod: 0 })
  })
  after(async () => {
    await admin?.close()
    await forger?.endAsync(true)
    await emulator?.stop()
  })

  it("refuses a client's PUBLISH to an admin response topic (PUBACK 0x87); the real answers still arrive", async () => {
    const found = await RemoteEmulatorAdmin.discover({ brokerUrl: emulator.brokerUrl, clientId: 'sidebar' }, 10_000)
    assert.ok(found, 'the admin channel answers')
    admin = found.admin
    const code = await pubackCode(
      forger.publishAsync(adminResponseTopic('sidebar-admin-000000'), '{"ok":true,"result":{"keys":[]}}', { qos: 1 }),
    )
    assert.equal(code, 0x87)
    assert.equal((await admin.listKeys({ pattern: '*', limit: 10 })).total, 0)
  })
})

// The admin channel's bound on key listings running at once: a burst beyond it is refused with "busy"
// instead of running every key scan together, and the channel serves again once they are answered.
import assert from 'node:assert/strict'
import mqtt, { type MqttClient } from 'mqtt'
import { AdminServer } from '../../../src/emulator/admin/server'
import { ADMIN_REQUEST_TOPIC, type AdminReply } from '../../../src/emulator/admin/wire'
import type { EmulatorAdmin } from '../../../src/emulator'
import { makeLogger } from '../../../src/emulator/logger'
import { until } from '../../support/wait'
import { startMqttBroker, type OwnBroker } from '../../support/broker'

/** An admin whose key scans wait until released, so that requests stay running for as long as the test wants. */
function heldAdmin() {
  const waiting: Array<() => void> = []
  const admin = {
    keyCount: 0,
    listKeys: () => new Promise((resolve) => waiting.push(() => resolve({ keys: [], matching: 0, total: 0 }))),
    inspect: () => null,
  } as unknown as EmulatorAdmin
  return { admin, waiting, releaseAll: () => waiting.splice(0).forEach((release) => release()) }
}

describe('emulator admin channel: concurrent requests are bounded', function () {
  this.timeout(30_000)
  let broker: OwnBroker
  let server: AdminServer
  let raw: MqttClient
  const held = heldAdmin()
  const replies: AdminReply[] = []
  const responseTopic = 'admin-limit-test/replies'

  before(async function () {
    broker = await startMqttBroker(this)
    server = await AdminServer.start({
      brokerUrl: broker.url,
      admin: held.admin,
      nodeId: 'limit-node',
      log: makeLogger('error'),
      maxConcurrent: 3,
    })
    raw = await mqtt.connectAsync(broker.url, { protocolVersion: 5, clientId: 'admin-limit-raw' })
    await raw.subscribeAsync(responseTopic, { qos: 1 })
    raw.on('message', (_topic, body) => replies.push(JSON.parse(body.toString()) as AdminReply))
  })
  after(async () => {
    held.releaseAll()
    await raw?.endAsync()
    await server?.stop()
    await broker?.stop()
  })

  const send = (n: number) => {
    for (let i = 0; i < n; i++)
      raw.publish(ADMIN_REQUEST_TOPIC, JSON.stringify({ op: 'listKeys' }), {
        qos: 1,
        properties: { responseTopic, correlationData: Buffer.from([i]) },
      })
  }

  it('refuses what is beyond the bound with a busy error, and answers the rest once their scans end', async () => {
    send(5)
    await until(() => held.waiting.length === 3 && replies.length === 2, '3 running scans and 2 refusals')
    for (const r of replies) {
      assert.equal(r.ok, false)
      assert.match(r.ok ? '' : r.error, /busy: 3 admin requests are running/)
    }
    held.releaseAll()
    await until(() => replies.length === 5, 'the 3 held answers')
    assert.deepEqual(
      replies.slice(2).map((r) => r.ok),
      [true, true, true],
    )
  })

  it('serves again once the running requests are answered', async () => {
    replies.length = 0
    send(3)
    await until(() => held.waiting.length === 3, '3 running scans')
    assert.equal(replies.length, 0, 'nothing refused while within the bound')
    held.releaseAll()
    await until(() => replies.length === 3, '3 answers')
    assert.ok(replies.every((r) => r.ok))
  })

  it('bounds only key listings: hello and inspect are answered while the listings fill the bound', async () => {
    replies.length = 0
    send(3)
    await until(() => held.waiting.length === 3, '3 running scans')
    raw.publish(ADMIN_REQUEST_TOPIC, JSON.stringify({ op: 'hello' }), {
      qos: 1,
      properties: { responseTopic, correlationData: Buffer.from('hello') },
    })
    raw.publish(ADMIN_REQUEST_TOPIC, JSON.stringify({ op: 'inspect', keyHex: '6b' }), {
      qos: 1,
      properties: { responseTopic, correlationData: Buffer.from('inspect') },
    })
    await until(() => replies.length === 2, 'the hello and inspect answers')
    assert.deepEqual(replies, [
      { ok: true, result: { nodeId: 'limit-node', keyCount: 0 } },
      { ok: true, result: null },
    ])
    held.releaseAll()
    await until(() => replies.length === 5, 'the 3 held answers')
    assert.ok(replies.every((r) => r.ok))
  })
})

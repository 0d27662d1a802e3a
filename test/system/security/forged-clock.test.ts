import assert from 'node:assert/strict'
import mqtt, { type MqttClient } from 'mqtt'
import { StateStoreClient, type KeyNotification } from '../../../src'
import { Hlc } from '../../../src/hlc'
import { Notification, notificationTopic, Prop, PROTOCOL_VERSION } from '../../../src/protocol'
import { Backend } from '../context/support'
import { pubackCode } from '../../integration/emulator/raw-client'
import { until } from '../../support/wait'

const AHEAD_MS = 55_000

/**
 * On a broker without ACLs, a notification stamped with the service's own node id and a `__ts` 55 s
 * ahead (inside the drift limit) was taken, and merged into the victim's clock: its next requests
 * carried the forged time, and the service's versions ran 54.6 s ahead for every client. A
 * notification is still taken; it moves the clock no further than an answer of the service or the
 * wall clock has, so the victim's next write is stamped about now.
 */
describe("security: a forged notification does not move a client's clock", function () {
  this.timeout(30_000)
  let backend: Backend
  let victim: StateStoreClient
  let attacker: MqttClient
  const told: KeyNotification[] = []

  before(async function () {
    backend = await Backend.start(this)
    victim = new StateStoreClient({ brokerUrl: backend.url, clientId: `clock-victim-${process.pid}` })
    await victim.observe('clock/watched', (n) => told.push(n))
    attacker = await mqtt.connectAsync(backend.url, {
      protocolVersion: 5,
      clientId: `clock-forger-${process.pid}`,
      reconnectPeriod: 0,
    })
  })
  after(async () => {
    await attacker?.endAsync(true)
    await victim?.close()
    await backend?.stop()
  })

  it('with the service node id and 55 s ahead: taken, and the next write is not ahead', async () => {
    const { version: first } = await victim.set('clock/mine', 'a')
    const forgedTs = new Hlc(Date.now() + AHEAD_MS, 0, first.nodeId).toString()
    const code = await pubackCode(
      attacker.publishAsync(
        notificationTopic(`clock-victim-${process.pid}`, Buffer.from('clock/watched')),
        Notification.set(Buffer.from('forged')),
        {
          qos: 1,
          properties: { userProperties: { [Prop.timestamp]: forgedTs, [Prop.protocolVersion]: PROTOCOL_VERSION } },
        },
      ),
    )
    assert.equal(code, 0, 'the broker has no ACL: the forgery is delivered')
    await until(() => told.length > 0, 'the forged notification to reach the client')
    const before = Date.now()
    const { version: next } = await victim.set('clock/mine', 'b')
    assert.ok(
      next.timestamp < before + AHEAD_MS / 2,
      `the next write's version is ${next.timestamp - before} ms ahead of the wall clock (the forgery was ${AHEAD_MS} ms ahead)`,
    )
  })
})

import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import mqtt, { type MqttClient } from 'mqtt'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { ADMIN_REQUEST_TOPIC } from '../../../src/emulator/admin/wire'
import { Reply, REQUEST_TOPIC, Request } from '../../../src/protocol'
import { publishRequest, RawClient } from '../emulator/raw-client'
import { until } from '../../support/wait'

/**
 * A user who may publish only to telemetry/app-2 had the service deliver bytes of its choosing (a
 * GET of its own key) to telemetry/line-1: the Response Topic published around the Publish rules;
 * the admin server did the same. Now a PUBLISH whose Response Topic the publisher may not
 * subscribe to is refused (PUBACK 0x87) and no answer goes there.
 */
describe('security: an answer goes only where the requester may subscribe', function () {
  this.timeout(20_000)
  let dir: string
  let emulator: Emulator
  let app2: MqttClient
  let observer: MqttClient
  const seen: string[] = []

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'security-response-'))
    const rules = join(dir, 'authorization.json')
    writeFileSync(
      rules,
      JSON.stringify({
        rules: [
          {
            principals: { usernames: ['app-2'] },
            brokerResources: [
              { method: 'Connect' },
              { method: 'Publish', topics: ['telemetry/app-2', ADMIN_REQUEST_TOPIC] },
              { method: 'Subscribe', topics: ['clients/{principal.clientId}/#'] },
            ],
            stateStoreResources: [{ method: 'ReadWrite', keyType: 'Pattern', keys: ['app-2/*'] }],
          },
          {
            principals: { usernames: ['ops'] },
            brokerResources: [{ method: 'Connect' }, { method: 'Subscribe', topics: ['#'] }],
          },
        ],
      }),
    )
    emulator = await startEmulator({
      listen: { host: '127.0.0.1', port: 0 },
      brokerAuth: { users: { 'app-2': 'pw2', ops: 'pw-ops' } },
      authorizationFile: rules,
      adminOverMqtt: true,
      logLevel: 'error',
    })
    observer = await mqtt.connectAsync(emulator.brokerUrl, {
      protocolVersion: 5,
      clientId: 'ops',
      username: 'ops',
      password: 'pw-ops',
      reconnectPeriod: 0,
    })
    await observer.subscribeAsync('#', { qos: 1 })
    observer.on('message', (topic, payload) => seen.push(`${topic} ${payload.toString('latin1')}`))
    app2 = await mqtt.connectAsync(emulator.brokerUrl, {
      protocolVersion: 5,
      clientId: 'app-2',
      username: 'app-2',
      password: 'pw2',
      reconnectPeriod: 0,
    })
  })
  after(async () => {
    await app2?.endAsync(true)
    await observer?.endAsync(true)
    await emulator?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  const publish = (topic: string, payload: Buffer, responseTopic: string): Promise<number> =>
    publishRequest(app2, topic, payload, responseTopic, Buffer.from('c0ffee', 'hex'))

  it('refuses a state store request or an admin request whose Response Topic the requester may not subscribe to', async () => {
    assert.equal(await publish(REQUEST_TOPIC, Request.get('app-2/k'), 'telemetry/line-1'), 0x87)
    assert.equal(await publish(REQUEST_TOPIC, Request.get('app-2/k'), 'clients/line-1/injected'), 0x87)
    assert.equal(await publish(ADMIN_REQUEST_TOPIC, Buffer.from('{"op":"hello"}'), 'telemetry/line-1'), 0x87)
  })

  it('still answers on a Response Topic the requester may subscribe to; nothing reached the others', async () => {
    const raw = await RawClient.connect(emulator.brokerUrl, 'app-2b', { username: 'app-2', password: 'pw2' })
    try {
      assert.deepEqual((await raw.request(Request.set('app-2/k', 'mine'))).payload, Reply.ok)
    } finally {
      await raw.close()
    }
    // ops sees the legitimate answer on clients/app-2b/…, published after any refused one would have been.
    await until(() => seen.some((line) => line.startsWith('clients/app-2b/')), 'ops sees the answer to app-2b')
    assert.deepEqual(
      seen.filter((line) => line.startsWith('telemetry/') || line.startsWith('clients/line-1/')),
      [],
    )
  })
})

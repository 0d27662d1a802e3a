import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import mqtt, { type MqttClient } from 'mqtt'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { ADMIN_REQUEST_TOPIC } from '../../../src/emulator/admin/wire'
import { REQUEST_TOPIC, Request } from '../../../src/protocol'
import { publishRequest } from '../emulator/raw-client'
import { until } from '../../support/wait'

/**
 * The Response Topic was checked against the requester's Subscribe rules only: a user who may
 * subscribe to `telemetry/#` but not publish there had the service publish its answer to a GET
 * (bytes of the user's choosing: the value of a key it may write) on `telemetry/line-1`. An answer
 * now goes only where the requester may publish too, under its own `clients/<client id>/`, or to
 * the state store's own answer space, where no client may publish (docs/security.md).
 */
describe('security: outside its own clients/<id>/, an answer goes only where the requester may publish as well as subscribe', function () {
  this.timeout(20_000)
  let dir: string
  let emulator: Emulator
  let reader: MqttClient
  let observer: MqttClient
  const seen: string[] = []
  const answers: string[] = []
  const scratch = 'scratch/reader-1'
  /** The .NET SDK's response topic: not under `services/`. */
  const dotnet = `clients/reader-1/${REQUEST_TOPIC}`

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'security-response-publish-'))
    const rules = join(dir, 'authorization.json')
    writeFileSync(
      rules,
      JSON.stringify({
        rules: [
          {
            principals: { usernames: ['reader'] },
            brokerResources: [
              { method: 'Connect' },
              { method: 'Publish', topics: ['scratch/{principal.clientId}', ADMIN_REQUEST_TOPIC] },
              {
                method: 'Subscribe',
                topics: ['telemetry/#', 'scratch/{principal.clientId}', 'clients/{principal.clientId}/#'],
              },
            ],
            stateStoreResources: [{ method: 'ReadWrite', keyType: 'Pattern', keys: ['reader/*'] }],
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
      brokerAuth: { users: { reader: 'pw', ops: 'pw-ops' } },
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
    reader = await mqtt.connectAsync(emulator.brokerUrl, {
      protocolVersion: 5,
      clientId: 'reader-1',
      username: 'reader',
      password: 'pw',
      reconnectPeriod: 0,
    })
    await reader.subscribeAsync([scratch, dotnet], { qos: 1 })
    reader.on('message', (topic, payload) => answers.push(`${topic} ${payload.toString('latin1')}`))
  })
  after(async () => {
    await reader?.endAsync(true)
    await observer?.endAsync(true)
    await emulator?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  const publish = (topic: string, payload: Buffer, responseTopic: string): Promise<number> =>
    publishRequest(reader, topic, payload, responseTopic, Buffer.from('0123456789abcdef0123456789abcdef', 'hex'))

  it('refuses a request whose Response Topic the requester may subscribe to but not publish to (PUBACK 0x87)', async () => {
    assert.equal(await publish(REQUEST_TOPIC, Request.set('reader/k', '{"temp": 999}'), scratch), 0)
    await until(
      () => answers.some((a) => a.startsWith(`${scratch} `)),
      'the answer on a topic the reader may publish to',
    )
    assert.equal(await publish(REQUEST_TOPIC, Request.get('reader/k'), 'telemetry/line-1'), 0x87)
    assert.equal(await publish(ADMIN_REQUEST_TOPIC, Buffer.from('{"op":"hello"}'), 'telemetry/line-1'), 0x87)
  })

  it("answers on the state store's own response topics (the .NET SDK's too), which no client may publish to", async () => {
    assert.equal(await publish(REQUEST_TOPIC, Request.get('reader/k'), dotnet), 0)
    await until(() => answers.some((a) => a.startsWith(`${dotnet} `)), 'the answer on the .NET response topic')
    // Published after the refused ones: once ops has it, nothing else came.
    await until(() => seen.some((line) => line.startsWith(`${dotnet} `)), 'ops sees the answer')
    assert.deepEqual(
      seen.filter((line) => line.startsWith('telemetry/')),
      [],
    )
  })
})

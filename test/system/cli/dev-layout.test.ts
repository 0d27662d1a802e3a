/**
 * `aio-statestore-emulator --dev DIR`: the AIO SDKs' development layout (a CA and certificates made
 * with openssl, a `.session` folder, an `.env` of AIO_* lines) and its listeners. The CLI connects
 * with nothing but DIR/.env's variables over TLS + SAT, and over TLS + X.509 with the `.session`
 * client certificate, whose subject gives it the attributes a BrokerAuthentication names, matched by
 * the BrokerAuthorization's rules. A wrong token is refused; a rotated token file counts at once.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { EmulatorProcess } from '../emulator/cli-process'
import { FROM_SOURCE, runCli, withoutAioEnv } from './run'
import { readDotEnv } from '../../support/dev-env'

describe("aio-statestore-emulator --dev: the SDKs' dev layout, over TLS + SAT and TLS + X.509", function () {
  this.timeout(60_000)
  let dir: string
  let emulator: EmulatorProcess
  let x509Port: string

  before(async function () {
    dir = mkdtempSync(join(tmpdir(), 'aio-dev-layout-'))
    const authn = join(dir, 'authn.yaml')
    writeFileSync(
      authn,
      [
        'apiVersion: mqttbroker.iotoperations.azure.com/v1',
        'kind: BrokerAuthentication',
        'metadata: { name: x509 }',
        'spec:',
        '  authenticationMethods:',
        '    - method: X509',
        '      x509Settings:',
        '        authorizationAttributes:',
        '          devClient:',
        '            subject: "CN = aio-statestore-dev-client"',
        '            attributes: { role: tester }',
        '',
      ].join('\n'),
    )
    const authz = join(dir, 'authz.yaml')
    writeFileSync(
      authz,
      JSON.stringify({
        rules: [
          {
            principals: { attributes: [{ role: 'tester' }] },
            brokerResources: [
              { method: 'Connect' },
              { method: 'Publish', topics: ['#'] },
              { method: 'Subscribe', topics: ['#'] },
            ],
            stateStoreResources: [
              { method: 'ReadWrite', keyType: 'Pattern', keys: ['{principal.attributes.role}/*', 'dev/*'] },
            ],
          },
          {
            principals: { clientIds: ['sat-*'] },
            brokerResources: [
              { method: 'Connect' },
              { method: 'Publish', topics: ['#'] },
              { method: 'Subscribe', topics: ['#'] },
            ],
            stateStoreResources: [{ method: 'ReadWrite', keyType: 'Pattern', keys: ['dev/*'] }],
          },
        ],
      }),
    )
    emulator = await EmulatorProcess.start([
      '--dev',
      join(dir, 'layout'),
      '--listen',
      '0',
      '--x509-listen',
      '0',
      '--sat-listen',
      '0',
      '--authn',
      authn,
      '--auth',
      authz,
      '--log-level',
      'warn',
    ])
    // The listeners' lines follow the ready line; the last one names the layout.
    await new Promise<void>((resolve, reject) => {
      const check = () => emulator.stdout.includes('dev layout') && resolve()
      emulator.child.stdout!.on('data', () => setImmediate(check))
      emulator.child.once('exit', () => reject(new Error(emulator.stderr)))
      check()
    })
    x509Port = /TLS \+ X\.509 on mqtts:\/\/127\.0\.0\.1:(\d+)/.exec(emulator.stdout)![1]!
  })
  after(async () => {
    await emulator?.kill('SIGTERM')
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it("lays out the SDKs' files and an .env for TLS + SAT", () => {
    const env = readDotEnv(join(dir, 'layout', '.env'))
    assert.deepEqual(Object.keys(env).sort(), [
      'AIO_BROKER_HOSTNAME',
      'AIO_BROKER_TCP_PORT',
      'AIO_MQTT_USE_TLS',
      'AIO_SAT_FILE',
      'AIO_TLS_CA_FILE',
    ])
    assert.equal(env.AIO_BROKER_HOSTNAME, 'localhost')
    assert.equal(env.AIO_MQTT_USE_TLS, 'true')
    assert.equal(env.AIO_SAT_FILE, join(dir, 'layout', '.session', 'token.txt'))
    for (const f of ['broker-ca.crt', 'client.crt', 'client.key', 'token.txt'])
      assert.ok(readFileSync(join(dir, 'layout', '.session', f)).length > 0, f)
  })

  it('set and get with only .env exported: TLS + SAT; a wrong token is refused, a rotated file counts at once', async () => {
    const env = withoutAioEnv({ ...readDotEnv(join(dir, 'layout', '.env')), AIO_MQTT_CLIENT_ID: 'sat-cli' })
    assert.equal((await runCli(FROM_SOURCE, ['set', 'dev/over-sat', 'v1'], { env })).code, 0)
    assert.deepEqual((await runCli(FROM_SOURCE, ['get', 'dev/over-sat'], { env })).stdout, Buffer.from('v1'))
    const wrong = join(dir, 'wrong-token')
    writeFileSync(wrong, 'not-the-token')
    const refused = await runCli(FROM_SOURCE, ['get', 'dev/over-sat', '--timeout', '1500'], {
      env: { ...env, AIO_SAT_FILE: wrong },
    })
    assert.equal(refused.code, 3)
    assert.match(refused.stderr, /not authorized/i)
    // Rotation: the token file now holds another token, which the listener accepts from the next CONNECT.
    writeFileSync(env.AIO_SAT_FILE!, 'rotated-token\n')
    assert.deepEqual((await runCli(FROM_SOURCE, ['get', 'dev/over-sat'], { env })).stdout, Buffer.from('v1'))
  })

  it("set and get over TLS + X.509 with the .session client certificate; its subject's attributes reach the rules", async () => {
    const session = join(dir, 'layout', '.session')
    const env = withoutAioEnv({
      AIO_BROKER_HOSTNAME: 'localhost',
      AIO_BROKER_TCP_PORT: x509Port,
      AIO_TLS_CA_FILE: join(session, 'broker-ca.crt'),
      AIO_TLS_CERT_FILE: join(session, 'client.crt'),
      AIO_TLS_KEY_FILE: join(session, 'client.key'),
    })
    assert.equal(
      (await runCli(FROM_SOURCE, ['set', 'tester/over-x509', 'v2'], { env })).code,
      0,
      'allowed by {principal.attributes.role}/*',
    )
    assert.deepEqual((await runCli(FROM_SOURCE, ['get', 'tester/over-x509'], { env })).stdout, Buffer.from('v2'))
    const noCert = await runCli(FROM_SOURCE, ['get', 'tester/over-x509', '--timeout', '1500'], {
      env: { ...env, AIO_TLS_CERT_FILE: '', AIO_TLS_KEY_FILE: '' },
    })
    assert.equal(noCert.code, 3, 'no client certificate: the handshake fails')
  })
})

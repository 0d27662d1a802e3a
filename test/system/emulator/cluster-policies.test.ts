/**
 * The cluster's resources on the emulator, end to end through its command line:
 * - a BrokerAuthorization YAML (clientIds and usernames principals; Read and ReadWrite; Pattern with
 *   `[0-9]` and `{principal.clientId}`; String with a literal `*`) applied by the embedded broker:
 *   mosquitto_rr's allowed requests answered, the others `-ERR not authorized`, a client no rule
 *   names refused at CONNECT; SUBSCRIBE and PUBLISH outside the rules refused with 0x87; the info
 *   log names the rule that decided.
 * - a Broker YAML with a Custom state store policy and dynamic mode: after the emulator is killed
 *   (kill -9) and started again with the same --persist file, exactly the keys the policy names or
 *   that were SET with the dynamic property are back.
 * - a bad file stops the emulator with the file, the line and what is wrong.
 */
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import mqtt from 'mqtt'
import { Hlc } from '../../../src/hlc'
import { Reply, Request } from '../../../src/protocol'
import { freePort } from '../../../dev/ports'
import { EmulatorProcess } from './cli-process'
import { RawClient } from '../../integration/emulator/raw-client'
import { until } from '../../support/wait'
import { Mosquitto, requireMosquitto } from '../../support/mosquitto'

const REQUEST_TOPIC = 'statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke'

function requireMosquittoClients(ctx: Mocha.Context): void {
  if (spawnSync('mosquitto_rr', ['--help']).error === undefined) return
  if (process.env.CI) throw new Error('CI must provide mosquitto_rr (apt-get install mosquitto-clients)')
  console.warn('      (skipped: mosquitto_rr is not installed; apt-get install mosquitto-clients to run these tests)')
  ctx.skip()
}

interface RrResult {
  code: number | null
  stdout: string
  stderr: string
}

/** One state store request with mosquitto_rr, as a user would type it. */
function rr(url: string, clientId: string, payload: Buffer, extra: string[] = []): Promise<RrResult> {
  const { hostname, port } = new URL(url)
  const args = [
    '-V',
    'mqttv5',
    '-h',
    hostname,
    '-p',
    port,
    '-i',
    clientId,
    '-q',
    '1',
    '-W',
    '5',
    '-N',
    '-t',
    REQUEST_TOPIC,
    '-e',
    `replies/${clientId}/1`,
  ]
  args.push('-D', 'publish', 'correlation-data', `${clientId}-${Date.now()}`)
  args.push(
    '-D',
    'publish',
    'user-property',
    '__ts',
    new Hlc(Date.now(), 0, clientId).toString(),
    '-m',
    payload.toString('latin1'),
    ...extra,
  )
  return new Promise((resolve) => {
    const child = spawn('mosquitto_rr', args, { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('latin1')))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.once('exit', (code) => resolve({ code, stdout, stderr }))
  })
}

const NOT_AUTHORIZED = Reply.error('not authorized').toString('latin1')

const AUTHORIZATION = `# Tried on the emulator before kubectl apply.
apiVersion: mqttbroker.iotoperations.azure.com/v1
kind: BrokerAuthorization
metadata:
  name: try-first
  namespace: azure-iot-operations
spec:
  authorizationPolicies:
    cache: Enabled
    rules:
      - principals:
          clientIds:
            - sensor-1
        brokerResources:
          - method: Connect
          - method: Subscribe
            topics: ["replies/{principal.clientId}/#"]
          - method: Publish
            topics: ["telemetry/{principal.clientId}", "replies/{principal.clientId}/#"]
        stateStoreResources:
          - method: Read
            keyType: Pattern
            keys: ["unit[0-9]"]
          - method: ReadWrite
            keyType: Pattern
            keys: ["devices/{principal.clientId}/*"]
      - principals:
          usernames:
            - alice
        brokerResources:
          - method: Connect
          - method: Subscribe
            topics: ["replies/#"]
          # mosquitto_rr's replies: an answer goes where its requester may publish too.
          - method: Publish
            topics: ["replies/{principal.clientId}/#"]
        stateStoreResources:
          - method: ReadWrite
            keyType: String
            keys: ["literal*"]
`

describe('the cluster resources on the emulator (command line, mosquitto_rr)', function () {
  this.timeout(60_000)
  let dir: string
  before(function () {
    requireMosquittoClients(this)
    dir = mkdtempSync(join(tmpdir(), 'emu-cluster-'))
  })
  after(() => dir && rmSync(dir, { recursive: true, force: true }))

  describe('a BrokerAuthorization resource', () => {
    let emulator: EmulatorProcess
    before(async () => {
      const file = join(dir, 'authz.yaml')
      writeFileSync(file, AUTHORIZATION)
      emulator = await EmulatorProcess.start([
        '--listen',
        '127.0.0.1:0',
        '--auth',
        file,
        '--user',
        'alice:alice-pw',
        '--user',
        'bob:bob-pw',
        '--log-level',
        'debug',
      ])
    })
    after(() => emulator?.kill('SIGTERM'))

    const bob = ['-u', 'bob', '-P', 'bob-pw']
    const alice = ['-u', 'alice', '-P', 'alice-pw']

    it('answers what the rules allow and refuses the rest with -ERR not authorized, by client id and by user name', async () => {
      const url = emulator.url
      // sensor-1 authenticates as bob, whom no rule names: its client id does.
      const cases: Array<[string, string[], Buffer, string]> = [
        ['sensor-1', bob, Request.set('devices/sensor-1/t', '21'), Reply.ok.toString('latin1')],
        ['sensor-1', bob, Request.get('devices/sensor-1/t'), Reply.value(Buffer.from('21')).toString('latin1')],
        ['sensor-1', bob, Request.get('devices/sensor-2/t'), NOT_AUTHORIZED],
        ['sensor-1', bob, Request.get('unit7'), Reply.nil.toString('latin1')],
        ['sensor-1', bob, Request.set('unit7', 'x'), NOT_AUTHORIZED],
        ['sensor-1', bob, Request.get('unitX'), NOT_AUTHORIZED],
        ['sensor-1', bob, Request.get('unit77'), NOT_AUTHORIZED],
        ['sensor-1', bob, Request.set('literal*', 'x'), NOT_AUTHORIZED],
        ['laptop', alice, Request.set('literal*', 'star'), Reply.ok.toString('latin1')],
        ['laptop', alice, Request.get('literal*'), Reply.value(Buffer.from('star')).toString('latin1')],
        ['laptop', alice, Request.set('literally', 'x'), NOT_AUTHORIZED],
        ['laptop', alice, Request.get('devices/sensor-1/t'), NOT_AUTHORIZED],
      ]
      for (const [clientId, credentials, payload, expected] of cases) {
        const result = await rr(url, clientId, payload, credentials)
        assert.equal(result.code, 0, `${clientId} ${JSON.stringify(payload.toString('latin1'))}: ${result.stderr}`)
        assert.equal(result.stdout, expected, `${clientId} ${JSON.stringify(payload.toString('latin1'))}`)
      }
      // The log names the rule that allowed a request, and says why one was refused: an allowed write
      // at info, an allowed read at debug (a store reading many keys at its start does not flood info).
      await until(
        () =>
          emulator.stderr.includes(
            'info  allowed SET from client "sensor-1" by try-first rules[0].stateStoreResources[1] ReadWrite Pattern ("devices/{principal.clientId}/*")',
          ),
        'the allowing rule in the log',
      )
      assert.ok(
        emulator.stderr.includes(
          'debug allowed GET from client "sensor-1" by try-first rules[0].stateStoreResources[0] Read Pattern ("unit[0-9]")',
        ),
        emulator.stderr,
      )
      assert.ok(!/info {2}allowed GET/.test(emulator.stderr), 'no allowed read at info')
      assert.ok(
        emulator.stderr.includes(
          'info  allowed SET from client "laptop" by try-first rules[1].stateStoreResources[0] ReadWrite String ("literal*")',
        ),
        emulator.stderr,
      )
      assert.ok(
        /refused SET from client "laptop": -ERR NotAuthorized \(no rule allows client "laptop", user "alice" to write key "literally"\)/.test(
          emulator.stderr,
        ),
        emulator.stderr,
      )
    })

    it('refuses at CONNECT a client that no rule names, whatever its password', async () => {
      const refused = await rr(emulator.url, 'stranger', Request.get('unit1'), bob)
      assert.notEqual(refused.code, 0)
      assert.match(refused.stderr, /not authori[sz]ed/i)
      assert.equal(refused.stdout, '')
      await until(
        () =>
          emulator.stderr.includes(
            'client "stranger" refused at CONNECT (0x87): no authorization rule gives client "stranger", user "bob" Connect',
          ),
        'the refusal in the log',
      )
    })

    it("refuses SUBSCRIBE and PUBLISH outside the rules' topics with reason code 0x87, as the AIO broker answers", async () => {
      const client = await mqtt.connectAsync(emulator.url, {
        protocolVersion: 5,
        clientId: 'sensor-1',
        username: 'bob',
        password: 'bob-pw',
        reconnectPeriod: 0,
      })
      try {
        assert.deepEqual(
          (await client.subscribeAsync('replies/sensor-1/x', { qos: 1 })).map((g) => g.qos),
          [1],
        )
        await assert.rejects(
          client.subscribeAsync('replies/sensor-2/x', { qos: 1 }),
          (err: Error & { packet?: { granted?: number[] } }) => err.packet?.granted?.[0] === 0x87,
        )
        await client.publishAsync('telemetry/sensor-1', 'ok', { qos: 1 })
        await assert.rejects(
          client.publishAsync('telemetry/sensor-2', 'no', { qos: 1 }),
          (err: Error & { code?: number }) => err.code === 0x87,
        )
      } finally {
        await client.endAsync()
      }
    })
  })

  describe('a Broker resource with a Custom state store policy', () => {
    const BROKER = `apiVersion: mqttbroker.iotoperations.azure.com/v1
kind: Broker
metadata:
  name: default
  namespace: azure-iot-operations
spec:
  persistence:
    maxSize: 10GiB
    dynamicSettings:
      userPropertyKey: aio-persistence
      userPropertyValue: "true"
    stateStore:
      mode: Custom
      stateStoreSettings:
        stateStoreResources:
          - keyType: Pattern
            keys: ["config/*", "line[0-9]"]
          - keyType: String
            keys: ["exact*"]
        dynamic:
          mode: Enabled
`

    it('keeps across a kill -9 and restart exactly the keys the policy names or that asked with the dynamic property', async () => {
      const brokerFile = join(dir, 'broker.yaml')
      const persist = join(dir, 'store.aof')
      writeFileSync(brokerFile, BROKER)
      const port = await freePort()
      const args = [
        '--listen',
        `127.0.0.1:${port}`,
        '--broker-config',
        brokerFile,
        '--persist',
        persist,
        '--log-level',
        'info',
      ]
      let emulator = await EmulatorProcess.start(args)
      const kept = ['config/a', 'config/b/c', 'line7', 'exact*', 'asked']
      const gone = ['other', 'line77', 'exactly', 'configx']
      try {
        assert.ok(
          emulator.stderr.includes(
            'state store persistence mode Custom: 3 key pattern(s) and the user property aio-persistence=true',
          ),
          emulator.stderr,
        )
        const c = await RawClient.connect(emulator.url)
        for (const key of [...kept, ...gone]) {
          const props: Record<string, string> = key === 'asked' ? { 'aio-persistence': 'true' } : {}
          assert.equal(
            (await c.request(Request.set(key, `v-${key}`), { props })).payload.toString(),
            Reply.ok.toString(),
          )
        }
        await c.close()
      } finally {
        await emulator.kill('SIGKILL')
      }
      emulator = await EmulatorProcess.start(args)
      try {
        const c = await RawClient.connect(emulator.url)
        for (const key of kept)
          assert.equal(
            (await c.request(Request.get(key))).payload.toString(),
            Reply.value(Buffer.from(`v-${key}`)).toString(),
            `${key} is back`,
          )
        for (const key of gone)
          assert.equal((await c.request(Request.get(key))).payload.toString(), Reply.nil.toString(), `${key} is gone`)
        await c.close()
        assert.ok(emulator.stderr.includes(`persistence: ${kept.length} key(s)`), emulator.stderr)
      } finally {
        await emulator.kill('SIGTERM')
      }
    })
  })

  it('stops on a bad file with the file, the line and what is wrong', async () => {
    const file = join(dir, 'bad.yaml')
    writeFileSync(file, AUTHORIZATION.replace('keyType: String', 'keyType: Strng'))
    const p = EmulatorProcess.spawn(['--listen', '127.0.0.1:0', '--auth', file])
    const { code } = await p.exit()
    assert.equal(code, 1)
    assert.match(
      p.stderr,
      /cannot start: .*bad\.yaml:39: spec\.authorizationPolicies\.rules\[1\]\.stateStoreResources\[0\]\.keyType: must be Pattern, String or Binary/,
    )
  })

  it('behind an external broker applies the state store rules alone, and says so when it starts', async function () {
    requireMosquitto(this)
    const file = join(dir, 'external.yaml')
    writeFileSync(file, AUTHORIZATION)
    const broker = await Mosquitto.start()
    let emulator: EmulatorProcess | null = null
    try {
      emulator = await EmulatorProcess.start(['--broker', broker.url, '--auth', file, '--log-level', 'info'])
      assert.match(
        emulator.stderr,
        /behind an external broker only the state store rules \(stateStoreResources\) apply/,
      )
      // mosquitto lets anyone connect; the emulator still judges keys, by the client id the request carries (__srcId, as the SDKs send it).
      const srcId = (id: string) => ['-D', 'publish', 'user-property', '__srcId', id]
      assert.equal(
        (await rr(broker.url, 'sensor-1', Request.set('devices/sensor-1/t', '1'), srcId('sensor-1'))).stdout,
        Reply.ok.toString('latin1'),
      )
      assert.equal(
        (await rr(broker.url, 'sensor-1', Request.set('unit1', '1'), srcId('sensor-1'))).stdout,
        NOT_AUTHORIZED,
      )
      // No user name is known behind another broker: a usernames principal grants nothing.
      assert.equal(
        (await rr(broker.url, 'laptop', Request.set('literal*', 'x'), [...srcId('laptop'), '-u', 'alice'])).stdout,
        NOT_AUTHORIZED,
      )
    } finally {
      await emulator?.kill('SIGTERM')
      await broker.stop()
    }
  })
})

/**
 * AIO's authorization documents as they stand (test/fixtures/aio-docs, pasted unchanged), with the
 * embedded broker's `--auth`:
 * - the state store example of "Configure MQTT broker authorization" with the SDK's mRPC guide
 *   (Option A, whose invoker rule gives the Subscribe on `clients/{principal.clientId}/#` that the
 *   page asks of a state store client): mosquitto_rr's 9 requests answered 9 of 9 with a Response
 *   Topic under `clients/<client id>/`, where the requester may subscribe but not publish (the
 *   rule of the last wave answered 1 of them); the SDKs' response topics and this package's client;
 * - the confused deputy still refused: an answer to `commands/contoso`, which the requester may
 *   read but not write, gets PUBACK 0x87 and one warning naming the rule to add;
 * - the mRPC guide's invoker and executor (Options A and B) answer each other: an ordinary
 *   executor publishes its answers with its own rights, the Response Topic rule is the service's;
 * - the page's "limit access based on client ID" (`brokerResources[].clientIds`).
 */
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import mqtt, { type MqttClient } from 'mqtt'
import { StateStoreClient } from '../../../src/client'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { Hlc } from '../../../src/hlc'
import { Reply, REQUEST_TOPIC, Request } from '../../../src/protocol'
import { publishRequest } from '../../integration/emulator/raw-client'
import { scaled } from '../../support/deadline'
import { until } from '../../support/wait'

const FIXTURES = join(__dirname, '..', '..', 'fixtures', 'aio-docs')
const fixture = (name: string) => readFileSync(join(FIXTURES, name), 'utf8')
/** The page's Binary key, base64 as written there. */
const BINARY_KEY = Buffer.from('xxxxxxxxxxxxxxxxxxxx', 'base64')

function requireMosquittoClients(ctx: Mocha.Context): void {
  if (spawnSync('mosquitto_rr', ['--help']).error === undefined) return
  if (process.env.CI) throw new Error('CI must provide mosquitto_rr (apt-get install mosquitto-clients)')
  console.warn('      (skipped: mosquitto_rr is not installed; apt-get install mosquitto-clients to run these tests)')
  ctx.skip()
}

interface RrResult {
  code: number | null
  stdout: Buffer
  stderr: string
}

/**
 * One state store request with mosquitto_rr. Its `-f` and `-s` send an empty payload (mosquitto
 * 2.0), and an argument from Node.js is UTF-8, so the payload (the Binary key is not UTF-8) goes
 * through a shell as `-m`, byte for byte.
 */
function rr(
  url: string,
  dir: string,
  who: { clientId: string; user: string },
  payload: Buffer,
  responseTopic: string,
  waitSec = 10,
): Promise<RrResult> {
  const { hostname, port } = new URL(url)
  const file = join(dir, `payload-${Math.random().toString(36).slice(2)}`)
  writeFileSync(file, payload)
  const args = [
    '-V',
    'mqttv5',
    '-h',
    hostname,
    '-p',
    port,
    '-i',
    who.clientId,
    '-u',
    who.user,
    '-P',
    `${who.user}-pw`,
    '-q',
    '1',
  ]
  args.push('-W', String(Math.ceil(scaled(waitSec * 1000) / 1000)), '-N', '-t', REQUEST_TOPIC, '-e', responseTopic)
  args.push('-D', 'publish', 'correlation-data', `${who.clientId}-${Date.now()}-${Math.random()}`)
  args.push('-D', 'publish', 'user-property', '__ts', new Hlc(Date.now(), 0, who.clientId).toString())
  return new Promise((resolve) => {
    const script = 'p="$(cat "$0"; printf x)"; exec mosquitto_rr "$@" -m "${p%x}"'
    const child = spawn('bash', ['-c', script, file, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    const out: Buffer[] = []
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => out.push(d))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.once('exit', (code) => resolve({ code, stdout: Buffer.concat(out), stderr }))
  })
}

describe("AIO's authorization documents as they stand, on the embedded broker", function () {
  this.timeout(scaled(90_000))
  let dir: string
  let emulator: Emulator
  const lines: string[] = []
  // A sensor of building 17 of contoso (the page's attributes), which is also an mRPC invoker (the guide's).
  const sensor = { clientId: '17-line-1', user: 'sensor' }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'aio-doc-policies-'))
    const file = join(dir, 'authz.yaml')
    writeFileSync(
      file,
      [
        fixture('authorization-state-store.json'),
        fixture('mrpc-option-a.yaml'),
        fixture('authorization-client-id.yaml'),
      ].join('\n---\n'),
    )
    emulator = await startEmulator({
      listen: { host: '127.0.0.1', port: 0 },
      authorizationFile: file,
      brokerAuth: {
        users: { sensor: 'sensor-pw', executor: 'executor-pw', b22: 'b22-pw' },
        attributes: {
          sensor: { building: '17', organization: 'contoso', role: 'rpc-invoker' },
          executor: { role: 'rpc-executor', executorId: 'temperature-service' },
          b22: { building: 'building22' },
        },
      },
      logLevel: 'debug',
      logBurst: Infinity,
      logger: (level, message) => lines.push(`${level} ${message}`),
    })
  })
  after(async () => {
    await emulator?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it("answers mosquitto_rr's requests 9 of 9 on a Response Topic under clients/<client id>/, where the requester may subscribe but not publish", async function () {
    requireMosquittoClients(this)
    const own = `clients/${sensor.clientId}/replies`
    const cases: Array<[Buffer, Buffer]> = [
      [Request.get('myreadkey'), Reply.nil],
      [Request.get('myotherkeyA'), Reply.nil],
      [Request.get('mynumerickeysuffix7'), Reply.nil],
      [Request.get(`clients/${sensor.clientId}/config`), Reply.nil],
      [Request.set(BINARY_KEY, 'v1'), Reply.ok],
      [Request.get(BINARY_KEY), Reply.value(Buffer.from('v1'))],
      [Request.set('myreadkey', 'x'), Reply.error('not authorized')],
      [Request.get('mynumerickeysuffix77'), Reply.error('not authorized')],
      [Request.keyNotify(`clients/${sensor.clientId}/config`), Reply.ok],
    ]
    // One after another, as typed: each mosquitto_rr connects with the same client id.
    const results: RrResult[] = []
    for (const [payload] of cases) results.push(await rr(emulator.brokerUrl, dir, sensor, payload, own))
    const answered = results.filter((r, i) => r.code === 0 && r.stdout.equals(cases[i]![1])).length
    assert.equal(
      answered,
      cases.length,
      results
        .map(
          (r, i) =>
            `${JSON.stringify(cases[i]![0].toString('latin1'))}: ${r.code} ${JSON.stringify(r.stdout.toString('latin1'))} ${r.stderr}`,
        )
        .join('\n'),
    )
  })

  it('refuses the confused deputy: an answer to a topic the requester may read but not write gets PUBACK 0x87, and one warning names the rule to add', async () => {
    const client = await mqtt.connectAsync(emulator.brokerUrl, {
      protocolVersion: 5,
      clientId: sensor.clientId,
      username: 'sensor',
      password: 'sensor-pw',
      reconnectPeriod: 0,
    })
    const seen: string[] = []
    try {
      await client.subscribeAsync('commands/contoso', { qos: 1 })
      client.on('message', (topic) => seen.push(topic))
      const before = lines.length
      for (let i = 0; i < 3; i++) {
        const code = await publishRequest(
          client,
          REQUEST_TOPIC,
          Request.get('myreadkey'),
          'commands/contoso',
          Buffer.from(`deputy-${i}`.padEnd(16, '.')),
        )
        assert.equal(code, 0x87, 'the requester learns it from the PUBACK')
      }
      const warned = lines
        .slice(before)
        .filter((l) => l.startsWith('warn') && l.includes('Response Topic "commands/contoso" refused (0x87)'))
      assert.equal(warned.length, 1, lines.slice(before).join('\n'))
      assert.match(
        warned[0]!,
        /add to the client's rule: brokerResources: \[\{ method: Publish, topics: \["commands\/contoso"\] \}\], or use a Response Topic under clients\/17-line-1\/#/,
      )
      // The requester may not subscribe to another client's space: the answer could not reach it.
      assert.equal(
        await publishRequest(
          client,
          REQUEST_TOPIC,
          Request.get('myreadkey'),
          'clients/17-line-2/replies',
          Buffer.from('deputy-other....'),
        ),
        0x87,
      )
      // Published after the refused ones: once its answer is in, nothing came to commands/contoso.
      await client.subscribeAsync(`clients/${sensor.clientId}/after`, { qos: 1 })
      assert.equal(
        await publishRequest(
          client,
          REQUEST_TOPIC,
          Request.get('myreadkey'),
          `clients/${sensor.clientId}/after`,
          Buffer.from('after...........'),
        ),
        0,
      )
      await until(() => seen.includes(`clients/${sensor.clientId}/after`), 'the answer under its own clients/ space')
      assert.deepEqual(
        seen.filter((t) => t === 'commands/contoso'),
        [],
      )
    } finally {
      await client.endAsync(true)
    }
  })

  it("answers on the official clients' response topics, and serves this package's client under the pasted policy", async () => {
    const raw: MqttClient = await mqtt.connectAsync(emulator.brokerUrl, {
      protocolVersion: 5,
      clientId: '17-sdk',
      username: 'sensor',
      password: 'sensor-pw',
      reconnectPeriod: 0,
    })
    const answers: string[] = []
    const sdkTopics = [
      `clients/17-sdk/${REQUEST_TOPIC}/response`, // Go
      `clients/17-sdk/services/${REQUEST_TOPIC}/response`, // Rust
      `clients/17-sdk/${REQUEST_TOPIC}`, // .NET
    ]
    try {
      raw.on('message', (topic, payload) => answers.push(`${topic} ${payload.toString('latin1')}`))
      await raw.subscribeAsync(sdkTopics, { qos: 1 })
      for (const [i, topic] of sdkTopics.entries()) {
        assert.equal(
          await publishRequest(
            raw,
            REQUEST_TOPIC,
            Request.get('myreadkey'),
            topic,
            Buffer.from(`sdk-${i}`.padEnd(16, '.')),
          ),
          0,
          topic,
        )
      }
      await until(
        () => sdkTopics.every((t) => answers.includes(`${t} ${Reply.nil.toString('latin1')}`)),
        'an answer on each SDK topic',
      )
    } finally {
      await raw.endAsync(true)
    }

    const client = new StateStoreClient({
      brokerUrl: emulator.brokerUrl,
      clientId: '17-node-red',
      username: 'sensor',
      password: 'sensor-pw',
    })
    try {
      await client.ready()
      await client.set(BINARY_KEY, 'from-node-red')
      assert.equal((await client.get(BINARY_KEY)).value?.toString(), 'from-node-red')
      assert.equal((await client.get('myreadkey')).value, null)
      await assert.rejects(
        client.set('myreadkey', 'x'),
        (err: Error & { code?: string }) => err.code === 'NotAuthorized',
      )
    } finally {
      await client.close()
    }
  })

  it("lets the mRPC guide's invoker and executor answer each other: an executor publishes its answers with its own rights", async () => {
    const executor = await mqtt.connectAsync(emulator.brokerUrl, {
      protocolVersion: 5,
      clientId: 'temp-svc-0',
      username: 'executor',
      password: 'executor-pw',
      reconnectPeriod: 0,
    })
    const invoker = await mqtt.connectAsync(emulator.brokerUrl, {
      protocolVersion: 5,
      clientId: '17-invoker',
      username: 'sensor',
      password: 'sensor-pw',
      reconnectPeriod: 0,
    })
    try {
      await executor.subscribeAsync('commands/temperature-service/+', { qos: 1 })
      executor.on('message', (_topic, payload, packet) => {
        const props = packet.properties!
        void executor.publishAsync(props.responseTopic!, Buffer.from(`status of ${payload.toString()}`), {
          qos: 1,
          properties: { correlationData: props.correlationData! },
        })
      })
      const responseTopic = 'clients/17-invoker/commands/temperature-service/getStatus'
      await invoker.subscribeAsync(responseTopic, { qos: 1 })
      const answered = new Promise<string>((resolve) =>
        invoker.once('message', (_t, payload) => resolve(payload.toString())),
      )
      const code = await publishRequest(
        invoker,
        'commands/temperature-service/getStatus',
        Buffer.from('line-1'),
        responseTopic,
        Buffer.from('mrpc............'),
      )
      assert.equal(code, 0, 'the invoker may publish a command with its own response topic')
      assert.equal(await answered, 'status of line-1')
    } finally {
      await invoker.endAsync(true)
      await executor.endAsync(true)
    }
  })

  it("reads Option B and the page's per-resource clientIds: a building22 client connects only with an id that begins with building22", async () => {
    const b = join(dir, 'option-b.yaml')
    writeFileSync(b, fixture('mrpc-option-b.yaml'))
    const other = await startEmulator({
      listen: { host: '127.0.0.1', port: 0 },
      authorizationFile: b,
      logLevel: 'silent',
    })
    await other.stop()
    const connect = (clientId: string) =>
      mqtt
        .connectAsync(emulator.brokerUrl, {
          protocolVersion: 5,
          clientId,
          username: 'b22',
          password: 'b22-pw',
          reconnectPeriod: 0,
        })
        .then(
          async (c) => {
            await c.endAsync(true)
            return 'connected'
          },
          (err: Error & { code?: number }) => `refused ${err.code}`,
        )
    assert.equal(await connect('building22-press-4'), 'connected')
    assert.equal(await connect('building23-press-4'), 'refused 135')
  })
})

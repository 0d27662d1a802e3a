/**
 * The config dialog's Test connection button: its admin endpoint (POST /ss-config/test) against a
 * real mosquitto with a password file and a TLS listener (the emulator serving the state store
 * through it), a plain mosquitto with no state store behind it, a port that is not MQTT, and a
 * closed port. It reports connected / no state store / not MQTT / TLS on one side only /
 * not authorized (mosquitto's answer to a wrong password) / refused / TLS error, uses the deployed password when the dialog shows the
 * saved-password placeholder, and never puts a credential in its answer or in any log. GET
 * /ss-config/broker tells what ${VAR} in the broker field is, only when it is a broker URL.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ALL, helper as nodeHelper } from '../../integration/nodes/support'
import { freePort } from '../../../dev/ports'
import { makeCerts, tlsListener, type TestCerts } from '../../support/certs'
import { Mosquitto, requireMosquitto } from '../../support/mosquitto'
import { coreNode, passwordFile } from './support'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { createServer, type Server } from 'node:net'

const PASSWORD = 'correct-horse-battery-staple'
const WRONG = 'tr0ub4dor-and-3'

/** node-red-node-test-helper's request(): supertest on the admin app the nodes registered their endpoints on. */
interface Supertest {
  post(path: string): Supertest
  get(path: string): Supertest
  send(body: unknown): Supertest
  query(q: Record<string, string>): Supertest
  expect(status: number): Promise<{ body: unknown }>
}
const helper = nodeHelper as typeof nodeHelper & { request(): Supertest }

interface Answer {
  result: string
  reason?: string
}

describe("security: the config dialog's Test connection endpoint", function () {
  this.timeout(30_000)
  let dir: string
  let pki: TestCerts
  let broker: Mosquitto
  let withPassword: string
  let withTls: string
  let closed: string
  let service: Emulator
  let bare: Mosquitto
  let notMqtt: Server

  before(async function () {
    requireMosquitto(this)
    dir = mkdtempSync(join(tmpdir(), 'security-test-button-'))
    pki = makeCerts()
    const file = passwordFile(dir, { alice: PASSWORD })
    let [plain, tls] = [0, 0]
    broker = await Mosquitto.startOnFreePorts(2, (ports) => {
      ;[plain, tls] = ports as [number, number]
      return {
        port: plain,
        extraConfig: [
          'per_listener_settings true',
          `listener ${plain} 127.0.0.1`,
          'allow_anonymous false',
          `password_file ${file}`,
          ...tlsListener(tls, pki),
          'allow_anonymous true',
        ],
      }
    })
    withPassword = `mqtt://127.0.0.1:${plain}`
    withTls = `mqtts://127.0.0.1:${tls}`
    closed = `mqtt://127.0.0.1:${await freePort()}`
    // The state store behind the broker: the emulator's service, attached as a client of it.
    service = await startEmulator({ brokerUrl: withPassword, brokerUsername: 'alice', brokerPassword: PASSWORD })
    bare = await Mosquitto.start()
    notMqtt = createServer((socket) =>
      socket.once('data', () => socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n')),
    )
    await new Promise<void>((resolve) => notMqtt.listen(0, '127.0.0.1', resolve))
    await helper.load(
      [...ALL, coreNode('network/05-tls.js')],
      [
        { id: 'tab', type: 'tab', label: 'test button' },
        { id: 'tlsGood', type: 'tls-config', ca: pki.caFile, verifyservercert: true },
        { id: 'tlsWrong', type: 'tls-config', ca: pki.otherCaFile, verifyservercert: true },
        { id: 'cfg', type: 'ss-config', broker: withPassword },
      ],
      { cfg: { username: 'alice', password: PASSWORD } },
    )
  })
  after(async () => {
    await helper.unload()
    await service?.stop()
    await bare?.stop()
    notMqtt?.close()
    await broker?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
    if (pki) rmSync(pki.dir, { recursive: true, force: true })
  })

  async function test(body: Record<string, unknown>): Promise<Answer> {
    const res = await helper.request().post('/ss-config/test').send(body).expect(200)
    const text = JSON.stringify(res.body)
    for (const secret of [PASSWORD, WRONG]) assert.ok(!text.includes(secret), 'no credential in the answer')
    return res.body as Answer
  }

  it('connected with the right password, not authorized (naming the client id) with a wrong one', async () => {
    assert.deepEqual(await test({ broker: withPassword, credentials: { username: 'alice', password: PASSWORD } }), {
      result: 'connected',
    })
    // mosquitto refuses a wrong password with 0x87 Not authorized, which an authorization policy
    // answers too: the text names both causes and the client id refused.
    const wrong = await test({ broker: withPassword, credentials: { username: 'alice', password: WRONG } })
    assert.equal(wrong.result, 'notAuthorized', JSON.stringify(wrong))
    assert.equal((await test({ broker: withPassword })).result, 'notAuthorized', 'no credentials')
  })

  it('uses the deployed password when the dialog shows the saved-password placeholder', async () => {
    assert.deepEqual(
      await test({ id: 'cfg', broker: withPassword, credentials: { username: 'alice', password: '__PWRD__' } }),
      { result: 'connected' },
    )
  })

  it('no state store on a broker without one (plain mosquitto), not connected; connected where one answers', async () => {
    assert.deepEqual(await test({ broker: bare.url }), { result: 'noService' })
    assert.deepEqual(await test({ broker: withPassword, credentials: { username: 'alice', password: PASSWORD } }), {
      result: 'connected',
    })
  })

  it('not MQTT on a port that answers something else, or nothing (mqtt:// on the TLS port); mqtts:// on a plain port is told apart', async () => {
    assert.deepEqual(await test({ broker: `mqtt://127.0.0.1:${(notMqtt.address() as { port: number }).port}` }), {
      result: 'notMqtt',
    })
    assert.deepEqual(await test({ broker: withTls.replace('mqtts:', 'mqtt:') }), { result: 'notMqtt' })
    assert.deepEqual(await test({ broker: bare.url.replace('mqtt:', 'mqtts:'), usetls: true, tls: 'tlsGood' }), {
      result: 'tlsUnexpected',
    })
  })

  it('refused on a closed port, with the reason', async () => {
    const answer = await test({ broker: closed })
    assert.equal(answer.result, 'refused')
    assert.match(answer.reason ?? '', /ECONNREFUSED/)
  })

  it("a TLS error with a CA that did not sign the broker's certificate; connected with the right CA", async () => {
    const wrong = await test({ broker: withTls, usetls: true, tls: 'tlsWrong' })
    assert.equal(wrong.result, 'tls', JSON.stringify(wrong))
    assert.match(wrong.reason ?? '', /certificate/i)
    assert.deepEqual(await test({ broker: withTls, usetls: true, tls: 'tlsGood' }), { result: 'connected' })
    assert.equal((await test({ broker: withTls, usetls: true, tls: 'not-deployed' })).result, 'tlsNotDeployed')
  })

  it('resolves ${VAR} in the broker field only to a broker URL, without user info', async () => {
    process.env.SS_TEST_BUTTON_URL = 'mqtt://someone:hunter2@broker.example:1883'
    process.env.SS_TEST_BUTTON_OTHER = 'not a url, maybe a secret'
    try {
      const url = await helper.request().get('/ss-config/broker').query({ value: '${SS_TEST_BUTTON_URL}' }).expect(200)
      assert.deepEqual(url.body, { resolved: 'mqtt://broker.example:1883' })
      const other = await helper
        .request()
        .get('/ss-config/broker')
        .query({ value: '${SS_TEST_BUTTON_OTHER}' })
        .expect(200)
      assert.deepEqual(other.body, { resolved: null })
      const plain = await helper
        .request()
        .get('/ss-config/broker')
        .query({ value: 'mqtt://127.0.0.1:1883' })
        .expect(200)
      assert.deepEqual(plain.body, { resolved: null })
    } finally {
      delete process.env.SS_TEST_BUTTON_URL
      delete process.env.SS_TEST_BUTTON_OTHER
    }
  })

  it("tells where a blank Broker URL connects: npm start's broker (AIO_STATESTORE_URL) when set, else 127.0.0.1:1883", async () => {
    const blank = async () => (await helper.request().get('/ss-config/broker').query({ value: '' }).expect(200)).body
    const saved = process.env.AIO_STATESTORE_URL
    try {
      delete process.env.AIO_STATESTORE_URL
      assert.deepEqual(await blank(), { resolved: 'mqtt://127.0.0.1:1883' })
      process.env.AIO_STATESTORE_URL = bare.url
      assert.deepEqual(await blank(), { resolved: bare.url })
      // And Test connection with a blank field goes there (a broker with no state store behind it).
      assert.deepEqual(await test({ broker: '' }), { result: 'noService' })
    } finally {
      if (saved === undefined) delete process.env.AIO_STATESTORE_URL
      else process.env.AIO_STATESTORE_URL = saved
    }
  })

  it('logged no credential', () => {
    const node = helper.getNode('cfg')
    const calls = [...node.warn.getCalls(), ...node.error.getCalls()].map((c) => JSON.stringify(c.args))
    for (const secret of [PASSWORD, WRONG])
      assert.ok(!calls.some((c) => c.includes(secret)), 'no credential in a node log')
  })
})

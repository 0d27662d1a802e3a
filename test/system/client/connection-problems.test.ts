/**
 * What the connection tells about a broker it cannot use as one: a session another connection
 * keeps taking over (the same client id twice), a port that does not speak MQTT, TLS on one side
 * only. Each is a typed `problem` on the status, with a reason that says what to change.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { createServer as createTlsServer } from 'node:tls'
import { StateStoreClient, type ConnectionStatus } from '../../../src/client'
import { NoServiceError, TimeoutError } from '../../../src/diagnostics/errors'
import { Mosquitto, requireMosquitto } from '../../support/mosquitto'
import { makeCerts, type TestCerts } from '../../support/certs'
import { sleep } from '../../support/wait'
import { ClientPool, statusWhere, uniqueId } from '../../support/clients'
import { FakeBroker } from '../../integration/client/support/fake-broker'

function listen(server: Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)),
  )
}

describe('client connection: problems it names', function () {
  this.timeout(30_000)
  const pool = new ClientPool()
  const servers: Server[] = []
  let certs: TestCerts
  before(() => {
    certs = makeCerts()
  })
  afterEach(async () => {
    await pool.closeAll()
    for (const s of servers.splice(0)) s.close()
  })

  async function firstFailure(url: string, tls = false): Promise<ConnectionStatus> {
    const client = pool.create(url, {
      reconnectMinMs: 60_000,
      reconnectMaxMs: 60_000,
      connectTimeoutMs: 3000,
      ...(tls ? { tls: { ca: certs.ca } } : {}),
    })
    return statusWhere(client, (s) => s.state === 'disconnected')
  }

  it('a port that answers CONNECT with something else (an HTTP server): notMqtt, naming the port', async () => {
    const http = createServer((socket) =>
      socket.once('data', () => socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n')),
    )
    servers.push(http)
    const port = await listen(http)
    const status = await firstFailure(`mqtt://127.0.0.1:${port}`)
    assert.equal(status.problem, 'notMqtt')
    assert.match(
      status.reason ?? '',
      new RegExp(`127\\.0\\.0\\.1:${port} gave no MQTT answer: check the broker URL's port`),
    )
    assert.doesNotMatch(status.reason ?? '', /header flag bits/, "not mqtt.js's parser error")
  })

  it('mqtt:// to a TLS port (it closes without a byte): notMqtt, suggesting mqtts://', async () => {
    const tls = createTlsServer(
      { cert: readFileSync(certs.serverCertFile), key: readFileSync(certs.serverKeyFile) },
      (s) => s.resume(),
    )
    servers.push(tls)
    const port = await listen(tls)
    const status = await firstFailure(`mqtt://127.0.0.1:${port}`)
    assert.equal(status.problem, 'notMqtt')
    assert.match(status.reason ?? '', /use mqtts:\/\/ if the port expects TLS/)
  })

  it('mqtt:// to a port that answers with a TLS record: tlsExpected', async () => {
    // A TLS alert record (content type 0x15), as some TLS servers send for a plain-text hello.
    const alert = createServer((socket) =>
      socket.once('data', () => socket.end(Buffer.from([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x46]))),
    )
    servers.push(alert)
    const port = await listen(alert)
    const status = await firstFailure(`mqtt://127.0.0.1:${port}`)
    assert.equal(status.problem, 'tlsExpected')
    assert.match(status.reason ?? '', /speaks TLS: use mqtts:\/\//)
  })

  it('mqtts:// to a plain MQTT port: tlsUnexpected, suggesting mqtt://', async function () {
    requireMosquitto(this)
    const broker = await Mosquitto.start()
    try {
      const status = await firstFailure(`mqtts://127.0.0.1:${broker.port}`, true)
      assert.equal(status.problem, 'tlsUnexpected')
      assert.match(status.reason ?? '', /the port may not speak TLS; use mqtt:\/\//)
    } finally {
      await broker.stop()
    }
  })

  it('a refused port is not called "not MQTT"', async () => {
    const closed = createServer()
    const port = await listen(closed)
    closed.close()
    const status = await firstFailure(`mqtt://127.0.0.1:${port}`)
    assert.equal(status.problem, undefined)
    assert.equal((status.error as { code?: string } | undefined)?.code, 'ECONNREFUSED')
  })

  it('DISCONNECT 0x8E: named at once, and every takeover in a row doubles the wait before reconnecting', async () => {
    const broker = await FakeBroker.start()
    try {
      const client = pool.create(broker.url, { reconnectMinMs: 100, reconnectMaxMs: 200 })
      await client.ready({ timeoutMs: 5000 })
      const waits: number[] = []
      for (let i = 0; i < 4; i++) {
        const connects = broker.connects.length
        broker.disconnectAll(0x8e)
        const status = await statusWhere(client, (s) => s.state === 'disconnected')
        const closedAt = performance.now()
        assert.equal(status.problem, 'takenOver')
        assert.match(
          status.reason ?? '',
          /took the session over \(DISCONNECT 0x8E\): give each client its own client id/,
        )
        await statusWhere(client, (s) => s.state === 'connected')
        assert.equal(broker.connects.length, connects + 1, 'one reconnect per takeover')
        waits.push(performance.now() - closedAt)
      }
      // backoffDelay(n, 100, 60000) lies between 100·2^n/2 and 100·2^n: at least 100, 200, 400, 800 ms;
      // without the takeover rule it would stay within reconnectMaxMs (200 ms) every time.
      assert.ok(waits[3]! >= 800, `waits ${waits.map(Math.round).join(', ')} ms`)
      assert.equal(client.status.problem, undefined, 'connected again: no problem left on the status')
    } finally {
      await broker.stop()
    }
  })

  it('no state store behind the broker (PUBACK 0x10): a service check says so on the status; requests fail at once but the one that found it out', async () => {
    const broker = await FakeBroker.start()
    try {
      broker.pubackCode = 0x10
      const client = pool.create(broker.url, { checkService: true, requestTimeoutMs: 1500 })
      const status = await statusWhere(client, (s) => s.problem === 'noService')
      assert.equal(status.state, 'connected')
      assert.match(status.reason ?? '', /no state store service is subscribed to the request topic/)
      // Known absent since the check: a request fails at once, with a typed error.
      const first = await client.get('k').then(
        () => null,
        (e: unknown) => e,
      )
      assert.ok(first instanceof NoServiceError, String(first))
      assert.equal(first.code, 'NoService')
      assert.equal(first.kind, 'connection')
      assert.equal(await client.checkService(), 'none')

      // The broker now delivers the requests (a service subscribed), so the status clears at the next check.
      broker.pubackCode = 0
      await statusWhere(client, (s) => s.state === 'connected' && s.problem === undefined, 10_000)

      // Without the check: the request that finds no service keeps trying (a restarting service is
      // back within its timeout); one sent once that is known fails at once.
      const plain = pool.create(broker.url, { requestTimeoutMs: 1500 })
      await plain.ready({ timeoutMs: 5000 })
      broker.pubackCode = 0x10
      const finder = plain.get('a').then(
        () => null,
        (e: unknown) => e,
      )
      // The status tells what a request found out, service check or not.
      await statusWhere(plain, (s) => s.problem === 'noService', 5000)
      const later = await plain.get('b').then(
        () => null,
        (e: unknown) => e,
      )
      assert.ok(later instanceof NoServiceError, String(later))
      assert.ok((await finder) instanceof TimeoutError, 'the finder waited its whole timeout, re-sending')
    } finally {
      await broker.stop()
    }
  })

  it('two connections with one client id: each is told its session was taken over, and their reconnects back off', async function () {
    requireMosquitto(this)
    this.timeout(40_000)
    const broker = await Mosquitto.start()
    const clientId = uniqueId('clash')
    const clients = new ClientPool()
    try {
      const seen: ConnectionStatus[] = []
      for (let i = 0; i < 2; i++) {
        // The client's own reconnect settings (500 ms to its 2 s cap), as a config node has them.
        const c = new StateStoreClient({ brokerUrl: broker.url, clientId })
        c.on('status', (s) => seen.push(s))
        clients.add(c)
      }
      const windowMs = 12_000
      await sleep(windowMs)
      const takeovers = broker.log
        .split('\n')
        .filter((line) => line.includes(`Client ${clientId} already connected, closing old connection`)).length
      const told = seen.filter((s) => s.problem === 'takenOver')
      assert.ok(told.length > 0, 'a status with problem takenOver')
      // mosquitto 2.0.11 closes the old connection without DISCONNECT 0x8E: the client names the pattern.
      assert.match(
        told[0]!.reason ?? '',
        new RegExp(
          `client id "${clientId}" (took|is most likely taking) the session over.*give each client its own client id`,
        ),
      )
      // Reconnecting at the configured 0.5–1 s after every takeover gives some 20 to 30 in 12 s;
      // doubling the wait after each takeover in a row, up to the 2 s cap, leaves about one a second.
      console.log(`      ${takeovers} session takeovers in ${windowMs / 1000} s`)
      assert.ok(takeovers >= 2, `the clash happened (${takeovers} takeovers)`)
      assert.ok(takeovers <= 16, `${takeovers} takeovers in ${windowMs / 1000} s`)
    } finally {
      await clients.closeAll()
      await broker.stop()
    }
  })
})

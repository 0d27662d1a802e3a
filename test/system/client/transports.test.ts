/**
 * Every transport the client accepts, against the emulator: mqtts (mosquitto with a TLS listener
 * that requires a client certificate: CA, certificate, encrypted key with passphrase, server
 * name, rejectUnauthorized), ws and wss (aedes behind a WebSocket server).
 */
import assert from 'node:assert/strict'
import { readFileSync, rmSync } from 'node:fs'
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import { createWebSocketStream, WebSocketServer } from 'ws'
import { startBroker, startEmulator, type EmbeddedBroker, type Emulator } from '../../../src/emulator'
import { freePort } from '../../../dev/ports'
import { Mosquitto, requireMosquitto } from '../../support/mosquitto'
import { makeCerts, tlsListener, type TestCerts } from '../../support/certs'
import { ClientPool, statusWhere } from '../../support/clients'

describe('client transports', function () {
  const pool = new ClientPool()
  let certs: TestCerts
  before(() => {
    certs = makeCerts({ serverAltNames: ['DNS:localhost'], clientKeyPassphrase: 'client-key-secret' })
  })
  afterEach(() => pool.closeAll())
  after(() => rmSync(certs.dir, { recursive: true, force: true }))

  describe('mqtts (mosquitto requiring client certificates)', function () {
    let broker: Mosquitto
    let emulator: Emulator
    let tlsUrl: string

    before(async function () {
      requireMosquitto(this)
      const plain = await freePort()
      const tls = await freePort()
      broker = await Mosquitto.start({
        port: plain,
        extraConfig: [
          `listener ${plain} 127.0.0.1`,
          ...tlsListener(tls, certs),
          'require_certificate true',
          'allow_anonymous true',
        ],
      })
      tlsUrl = `mqtts://127.0.0.1:${tls}`
      emulator = await startEmulator({ brokerUrl: broker.url, logLevel: 'error' })
    })
    after(async () => {
      await emulator?.stop()
      await broker?.stop()
    })

    it('connects with CA, client certificate, encrypted key, passphrase and server name', async function () {
      const client = await pool.ready(tlsUrl, {
        tls: {
          ca: [certs.ca],
          cert: certs.clientCert,
          key: certs.clientKey,
          passphrase: certs.passphrase,
          servername: 'localhost',
        },
      })
      await client.set('over-tls', 'yes')
      assert.equal((await client.get('over-tls')).value?.toString(), 'yes')
    })

    it('refuses a server whose certificate does not name the host, unless told the server name', async function () {
      const client = pool.create(tlsUrl, {
        tls: { ca: certs.ca, cert: certs.clientCert, key: certs.clientKey, passphrase: certs.passphrase },
      })
      const status = await statusWhere(client, (s) => s.state === 'disconnected')
      assert.match(status.reason ?? '', /altnames|hostname|IP/i)
    })

    it('is refused by the broker without a client certificate', async function () {
      const client = pool.create(tlsUrl, { tls: { ca: certs.ca, servername: 'localhost' } })
      const status = await statusWhere(client, (s) => s.state === 'disconnected')
      // The broker's TLS alert, by its code: "certificate required" in TLS 1.3; TLS 1.2 has no such
      // alert and sends "handshake failure".
      const error: NodeJS.ErrnoException | undefined = status.error
      const code = error?.code
      assert.ok(
        code === 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED' || code === 'ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE',
        `refused for another reason: ${code} ${status.reason}`,
      )
    })

    it('accepts an unknown CA only with rejectUnauthorized false', async function () {
      const strict = pool.create(tlsUrl, {
        tls: { cert: certs.clientCert, key: certs.clientKey, passphrase: certs.passphrase, servername: 'localhost' },
      })
      const status = await statusWhere(strict, (s) => s.state === 'disconnected')
      assert.match(status.reason ?? '', /certificate/i)
      const lax = await pool.ready(tlsUrl, {
        tls: { cert: certs.clientCert, key: certs.clientKey, passphrase: certs.passphrase, rejectUnauthorized: false },
      })
      assert.equal((await lax.set('lax', '1')).applied, true)
    })
  })

  describe('ws and wss (aedes behind a WebSocket server)', function () {
    let broker: EmbeddedBroker
    let emulator: Emulator
    const servers: HttpServer[] = []
    const wsUrls: { ws: string; wss: string } = { ws: '', wss: '' }

    before(async () => {
      broker = await startBroker({ port: 0 })
      emulator = await startEmulator({ brokerUrl: broker.url, logLevel: 'error' })
      const plain = createHttpServer()
      const secure = createHttpsServer({
        cert: readFileSync(certs.serverCertFile),
        key: readFileSync(certs.serverKeyFile),
      })
      for (const server of [plain, secure]) {
        const wss = new WebSocketServer({ server })
        wss.on('connection', (socket, request) => {
          request.socket.setNoDelay(true)
          broker.aedes.handle(createWebSocketStream(socket))
        })
        await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
        servers.push(server)
      }
      wsUrls.ws = `ws://127.0.0.1:${(plain.address() as { port: number }).port}/mqtt`
      wsUrls.wss = `wss://127.0.0.1:${(secure.address() as { port: number }).port}/mqtt`
    })
    after(async () => {
      await pool.closeAll()
      for (const server of servers) {
        server.closeAllConnections()
        await new Promise((resolve) => server.close(resolve))
      }
      await emulator?.stop()
      await broker?.stop()
    })

    it('works over ws://', async function () {
      const client = await pool.ready(wsUrls.ws)
      await client.set('over-ws', 'yes')
      assert.equal((await client.get('over-ws')).value?.toString(), 'yes')
    })

    it('works over wss:// with a CA and server name', async function () {
      const client = await pool.ready(wsUrls.wss, { tls: { ca: certs.ca, servername: 'localhost' } })
      await client.set('over-wss', 'yes')
      assert.equal((await client.get('over-wss')).value?.toString(), 'yes')
    })
  })
})

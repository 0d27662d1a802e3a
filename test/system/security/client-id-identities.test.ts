import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import mqtt, { type IClientOptions } from 'mqtt'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { prepareDevLayout, type DevLayout } from '../../../src/emulator/dev-layout'
import { Reply, Request } from '../../../src/protocol'
import { RawClient } from '../../integration/emulator/raw-client'

/**
 * A second X.509 client from the same CA (`CN=intruder`) took over the `--dev` client
 * certificate's client id, and a SAT client with another token took over a SAT client's id: only
 * user names were compared. A client id held by one authenticated identity (a user name, a
 * certificate subject, a service account token's subject) is now refused to every other, whatever
 * port and method it comes by; the same identity may still take its own session over.
 */
describe('security: a connected client id cannot be taken by another identity, of any kind', function () {
  this.timeout(30_000)
  let dir: string
  let layout: DevLayout
  let emulator: Emulator
  let x509Url: string
  let satUrl: string
  let intruderCert: Buffer
  let intruderKey: Buffer
  let otherTokenFile: string
  const lines: string[] = []

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'security-identities-'))
    layout = prepareDevLayout(dir)
    // A second client certificate from the same CA, as anyone with a certificate of the CA has.
    const broker = join(layout.dir, '.broker')
    const openssl = (...args: string[]) => {
      const r = spawnSync('openssl', args, { cwd: broker, encoding: 'utf8' })
      assert.equal(r.status, 0, r.stderr)
    }
    openssl(
      'req',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      'intruder.key',
      '-out',
      'intruder.csr',
      '-subj',
      '/CN=intruder',
    )
    openssl(
      'x509',
      '-req',
      '-in',
      'intruder.csr',
      '-CA',
      layout.caFile,
      '-CAkey',
      'ca.key',
      '-CAserial',
      'ca.srl',
      '-out',
      'intruder.crt',
      '-days',
      '1',
    )
    intruderCert = readFileSync(join(broker, 'intruder.crt'))
    intruderKey = readFileSync(join(broker, 'intruder.key'))
    // A second service account's token, accepted by the same SAT listener.
    otherTokenFile = join(dir, 'other-token')
    writeFileSync(otherTokenFile, 'another-service-account-token\n')
    const tls = { certFile: layout.brokerCertFile, keyFile: layout.brokerKeyFile }
    emulator = await startEmulator({
      listen: { host: '127.0.0.1', port: 0 },
      brokerAuth: { users: { alice: 'alice-pw', mallory: 'mallory-pw' } },
      tlsListeners: [
        { port: 0, ...tls, clientCaFile: layout.caFile, authentication: { method: 'x509' } },
        {
          port: 0,
          ...tls,
          authentication: { method: 'sat', tokenFiles: [{ file: layout.tokenFile }, { file: otherTokenFile }] },
        },
      ],
      logLevel: 'info',
      logger: (_, message) => lines.push(message),
    })
    ;[x509Url, satUrl] = emulator.tlsUrls as [string, string]
  })
  after(async () => {
    await emulator?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  const ca = () => readFileSync(layout.caFile)
  const devCertificate = (): IClientOptions => ({
    ca: ca(),
    cert: readFileSync(layout.clientCertFile),
    key: readFileSync(layout.clientKeyFile),
  })
  const intruderCertificate = (): IClientOptions => ({ ca: ca(), cert: intruderCert, key: intruderKey })
  const token = (file: string): IClientOptions => ({
    ca: ca(),
    properties: { authenticationMethod: 'K8S-SAT', authenticationData: readFileSync(file) },
  })

  /** The CONNACK reason code of a CONNECT (0 when accepted; the connection is then ended). */
  async function connectCode(url: string, clientId: string, options: IClientOptions): Promise<number> {
    return mqtt
      .connectAsync(url, { protocolVersion: 5, clientId, reconnectPeriod: 0, connectTimeout: 10_000, ...options })
      .then(
        async (c) => {
          await c.endAsync(true)
          return 0
        },
        (err: Error & { code?: number }) => err.code ?? -1,
      )
  }

  /** Connects the holder, has each intruder refused (0x87), and checks the holder still gets answers. */
  async function holds(
    url: string,
    clientId: string,
    options: IClientOptions,
    intruders: Array<[url: string, options: IClientOptions, who: string]>,
  ) {
    const holder = await RawClient.connect(url, clientId, options)
    try {
      assert.deepEqual((await holder.request(Request.set(`held/${clientId}`, 'mine'))).payload, Reply.ok)
      for (const [intruderUrl, intruderOptions, who] of intruders) {
        assert.equal(await connectCode(intruderUrl, clientId, intruderOptions), 0x87, `${who} is refused the client id`)
      }
      // Not kicked off: still answered on its own connection.
      assert.equal((await holder.request(Request.get(`held/${clientId}`))).payload.toString(), '$4\r\nmine\r\n')
    } finally {
      await holder.close()
    }
  }

  it('an X.509 client id: refused to another certificate of the same CA, to a SAT client and to a user', async () => {
    await holds(x509Url, 'plc-x509', devCertificate(), [
      [x509Url, intruderCertificate(), 'CN=intruder'],
      [satUrl, token(layout.tokenFile), 'a service account'],
      [emulator.brokerUrl, { username: 'alice', password: 'alice-pw' }, 'user alice'],
    ])
    // The log names both identities; the refused client is told neither.
    assert.ok(
      lines.some((l) =>
        /refused at CONNECT \(0x87\).*\(certificate "CN=intruder issued by CN=aio-statestore-dev-ca"; held by certificate "CN=aio-statestore-dev-client/.test(
          l,
        ),
      ),
      lines.join('\n'),
    )
  })

  it('a SAT client id: refused to another token, to a certificate and to a user', async () => {
    await holds(satUrl, 'plc-sat', token(layout.tokenFile), [
      [satUrl, token(otherTokenFile), 'another service account'],
      [x509Url, devCertificate(), 'the dev certificate'],
      [emulator.brokerUrl, { username: 'mallory', password: 'mallory-pw' }, 'user mallory'],
    ])
  })

  it('a user name client id: refused to another user, to a certificate and to a SAT client', async () => {
    await holds(emulator.brokerUrl, 'plc-user', { username: 'alice', password: 'alice-pw' }, [
      [emulator.brokerUrl, { username: 'mallory', password: 'mallory-pw' }, 'user mallory'],
      [x509Url, intruderCertificate(), 'CN=intruder'],
      [satUrl, token(otherTokenFile), 'a service account'],
    ])
  })

  it('each identity may still take its own session over', async () => {
    for (const [url, options] of [
      [x509Url, devCertificate()],
      [satUrl, token(layout.tokenFile)],
      [emulator.brokerUrl, { username: 'alice', password: 'alice-pw' }],
    ] as Array<[string, IClientOptions]>) {
      const first = await RawClient.connect(url, 'restarting', options)
      const again = await RawClient.connect(url, 'restarting', options)
      try {
        assert.deepEqual((await again.request(Request.set('restarted', 'yes'))).payload, Reply.ok)
        assert.equal((await first.disconnected).reasonCode, 0x8e, 'the first connection was taken over')
      } finally {
        await again.close()
        await first.close()
      }
    }
  })
})

/**
 * Under `--dev` the plain port has no authentication: a client there has claimed nothing, so it
 * may not take the id of a client that proved who it is on a TLS listener.
 */
describe('security: an unauthenticated client cannot take an authenticated client id', function () {
  this.timeout(30_000)
  let dir: string
  let layout: DevLayout
  let emulator: Emulator

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'security-identities-dev-'))
    layout = prepareDevLayout(dir)
    emulator = await startEmulator({
      listen: { host: '127.0.0.1', port: 0 },
      tlsListeners: [
        {
          port: 0,
          certFile: layout.brokerCertFile,
          keyFile: layout.brokerKeyFile,
          clientCaFile: layout.caFile,
          authentication: { method: 'x509' },
        },
      ],
      logLevel: 'error',
    })
  })
  after(async () => {
    await emulator?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it("refuses a plain-port CONNECT with the certificate client's id; plain clients still share ids among themselves", async () => {
    const options = {
      ca: readFileSync(layout.caFile),
      cert: readFileSync(layout.clientCertFile),
      key: readFileSync(layout.clientKeyFile),
    }
    const holder = await RawClient.connect(emulator.tlsUrls[0]!, 'dev-client', options)
    try {
      const err = await mqtt
        .connectAsync(emulator.brokerUrl, {
          protocolVersion: 5,
          clientId: 'dev-client',
          username: 'anyone',
          reconnectPeriod: 0,
        })
        .then(
          async (c) => {
            await c.endAsync(true)
            return null
          },
          (e: Error & { code?: number }) => e,
        )
      assert.equal(err?.code, 0x87)
      assert.deepEqual((await holder.request(Request.set('dev/k', 'v'))).payload, Reply.ok)
    } finally {
      await holder.close()
    }
    // Without authentication a client id proves nothing: the plain port keeps MQTT's takeover.
    const first = await RawClient.connect(emulator.brokerUrl, 'plain-client')
    const second = await RawClient.connect(emulator.brokerUrl, 'plain-client')
    await first.disconnected
    await Promise.all([first.close(), second.close()])
  })
})

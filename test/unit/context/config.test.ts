import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { resolveConfig } from '../../../src/context/config'

describe('context store config: settings.js names to client options', () => {
  const logger = () => {}

  it('defaults: local broker, prefix from the user directory, a client id unique per user directory and stable', () => {
    const a = resolveConfig({ settings: { userDir: '/home/me/.node-red' }, logger })
    assert.equal(a.client.brokerUrl, 'mqtt://127.0.0.1:1883')
    assert.equal(a.prefix, 'nodered/.node-red/')
    assert.equal(a.cache, true)
    assert.equal(a.persist, true)
    assert.equal(a.requestTimeoutMs, 10000)
    assert.match(a.client.clientId, /^nodered-context-[A-Za-z0-9_.-]+-[0-9a-f]{8}$/)
    assert.equal(
      resolveConfig({ settings: { userDir: '/home/me/.node-red' }, logger }).client.clientId,
      a.client.clientId,
    )
    assert.notEqual(
      resolveConfig({ settings: { userDir: '/srv/other/.node-red' }, logger }).client.clientId,
      a.client.clientId,
    )
  })

  it("the config node's names: broker, credentials, TLS files, SAT token file, keepalive, session, timeouts", () => {
    const dir = mkdtempSync(join(tmpdir(), 'ctx-config-'))
    for (const f of ['ca.crt', 'client.crt', 'client.key']) writeFileSync(join(dir, f), `${f} bytes`)
    const r = resolveConfig({
      broker: 'mqtts://aio-broker:18883',
      clientId: 'mine',
      username: 'u',
      password: 'p',
      ca: join(dir, 'ca.crt'),
      cert: join(dir, 'client.crt'),
      key: join(dir, 'client.key'),
      servername: 'aio-broker',
      verifyservercert: false,
      satTokenFile: '/var/run/secrets/tokens/broker-sat',
      keepalive: 30,
      cleanStart: false,
      sessionExpiry: 3600,
      requestTimeout: 2500,
      maxInFlight: 50,
      prefix: 'shared/',
      cache: false,
      persist: false,
      logger,
    })
    assert.deepEqual(
      {
        ...r.client,
        logger: undefined,
        tls: {
          ...r.client.tls,
          ca: String(r.client.tls?.ca),
          cert: String(r.client.tls?.cert),
          key: String(r.client.tls?.key),
        },
      },
      {
        brokerUrl: 'mqtts://aio-broker:18883',
        clientId: 'mine',
        username: 'u',
        password: 'p',
        satTokenFile: '/var/run/secrets/tokens/broker-sat',
        keepaliveSec: 30,
        cleanStart: false,
        sessionExpirySec: 3600,
        requestTimeoutMs: 2500,
        maxInFlight: 50,
        logger: undefined,
        tls: {
          ca: 'ca.crt bytes',
          cert: 'client.crt bytes',
          key: 'client.key bytes',
          servername: 'aio-broker',
          rejectUnauthorized: false,
        },
      },
    )
    assert.deepEqual([r.prefix, r.cache, r.persist], ['shared/', false, false])
  })

  it('embedded: no broker URL until the emulator runs', () => {
    const r = resolveConfig({ embedded: true, broker: 'mqtt://ignored:1', logger })
    assert.equal(r.embedded, true)
    assert.equal(r.client.brokerUrl, undefined)
  })

  it('refuses numbers that are not positive, and a TLS file that cannot be read, naming the setting', () => {
    assert.throws(() => resolveConfig({ requestTimeout: -1, logger }), /requestTimeout must be a positive number/)
    assert.throws(
      () => resolveConfig({ keepalive: 'soon' as unknown as number, logger }),
      /keepalive must be a positive number/,
    )
    assert.throws(() => resolveConfig({ ca: '/nonexistent/ca.crt', logger }), /cannot read the ca file: ENOENT/)
    assert.equal(resolveConfig({ sessionExpiry: 0, logger }).client.sessionExpirySec, undefined)
  })

  it("settings left out take the AIO SDKs' environment, with a client id of its own beside the config node's", () => {
    const dir = mkdtempSync(join(tmpdir(), 'ctx-aio-env-'))
    writeFileSync(join(dir, 'ca.crt'), 'ca bytes')
    writeFileSync(join(dir, 'token'), 'a.b.c')
    const env = {
      AIO_BROKER_HOSTNAME: 'aio-broker',
      AIO_BROKER_TCP_PORT: '18883',
      AIO_TLS_CA_FILE: join(dir, 'ca.crt'),
      AIO_SAT_FILE: join(dir, 'token'),
      AIO_MQTT_CLIENT_ID: 'node-red-0',
      AIO_MQTT_SESSION_EXPIRY: '600',
    }
    const r = resolveConfig({ logger }, env)
    assert.equal(r.client.brokerUrl, 'mqtts://aio-broker:18883')
    assert.equal(r.client.clientId, 'node-red-0-context')
    assert.equal(r.client.satTokenFile, join(dir, 'token'))
    assert.equal(r.client.sessionExpirySec, 600)
    assert.deepEqual(r.client.tls, { ca: Buffer.from('ca bytes') })
    // Its own settings win, and its own credentials leave the environment's out.
    const own = resolveConfig(
      { broker: 'mqtt://other:1883', clientId: 'mine', username: 'u', password: 'p', logger },
      env,
    )
    assert.deepEqual(
      [own.client.brokerUrl, own.client.clientId, own.client.satTokenFile, own.client.username],
      ['mqtt://other:1883', 'mine', undefined, 'u'],
    )
    assert.equal(
      resolveConfig({ logger }, { AIO_STATESTORE_URL: 'mqtt://127.0.0.1:1999' }).client.brokerUrl,
      'mqtt://127.0.0.1:1999',
    )
    assert.throws(
      () => resolveConfig({ logger }, { AIO_SAT_FILE: join(dir, 'missing') }),
      /^Error: state store context: AIO_SAT_FILE=".*missing": cannot read the file \(ENOENT\)$/,
    )
  })
})

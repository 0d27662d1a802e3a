import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { resolveConfig } from '../../src/context/config'

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
    assert.equal(resolveConfig({ settings: { userDir: '/home/me/.node-red' }, logger }).client.clientId, a.client.clientId)
    assert.notEqual(resolveConfig({ settings: { userDir: '/srv/other/.node-red' }, logger }).client.clientId, a.client.clientId)
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
      { ...r.client, logger: undefined, tls: { ...r.client.tls, ca: String(r.client.tls?.ca), cert: String(r.client.tls?.cert), key: String(r.client.tls?.key) } },
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
        tls: { ca: 'ca.crt bytes', cert: 'client.crt bytes', key: 'client.key bytes', servername: 'aio-broker', rejectUnauthorized: false },
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
    assert.throws(() => resolveConfig({ keepalive: 'soon' as unknown as number, logger }), /keepalive must be a positive number/)
    assert.throws(() => resolveConfig({ ca: '/nonexistent/ca.crt', logger }), /cannot read the ca file: ENOENT/)
    assert.equal(resolveConfig({ sessionExpiry: 0, logger }).client.sessionExpirySec, undefined)
  })
})

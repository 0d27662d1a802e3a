import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ArgumentError } from '../../../src/diagnostics/errors'
import {
  AIO_VARIABLES,
  EnvironmentError,
  environmentAuth,
  environmentTls,
  readAioEnvironment,
} from '../../../src/client'

function refused(env: NodeJS.ProcessEnv, variable: string, value: string, problem: string): void {
  assert.throws(
    () => {
      const aio = readAioEnvironment(env)
      environmentAuth(aio)
      environmentTls(aio)
    },
    (err: unknown) => {
      assert.ok(err instanceof EnvironmentError && err instanceof ArgumentError, String(err))
      assert.equal(err.variable, variable)
      assert.equal(err.value, value)
      assert.equal(err.problem, problem)
      assert.ok(err.message.startsWith(`${variable}=${JSON.stringify(value)}: `), err.message)
      return true
    },
  )
}

describe("the AIO SDKs' connection environment", () => {
  let dir: string
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'aio-env-'))
    writeFileSync(join(dir, 'ca.crt'), 'CA')
    writeFileSync(join(dir, 'token'), 'a.b.c\n')
    writeFileSync(join(dir, 'password'), 'pw\n')
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  it("lists the fourteen variables of the SDKs' reference page", () => {
    assert.equal(new Set(AIO_VARIABLES).size, 14)
  })

  it("an empty environment sets nothing: the caller's own defaults apply", () => {
    assert.deepEqual(readAioEnvironment({}), {})
    assert.deepEqual(
      readAioEnvironment({ AIO_BROKER_HOSTNAME: '', AIO_SAT_FILE: ' ' }),
      {},
      'blank is unset, as the deploy guides use it to switch SAT off',
    )
  })

  it("takes the SDKs' defaults beside a host name: port 8883 with TLS", () => {
    assert.equal(readAioEnvironment({ AIO_BROKER_HOSTNAME: 'aio-broker' }).brokerUrl, 'mqtts://aio-broker:8883')
    assert.equal(
      readAioEnvironment({ AIO_BROKER_HOSTNAME: 'aio-broker', AIO_BROKER_TCP_PORT: '18883' }).brokerUrl,
      'mqtts://aio-broker:18883',
    )
    assert.equal(
      readAioEnvironment({ AIO_BROKER_HOSTNAME: 'localhost', AIO_BROKER_TCP_PORT: '1883', AIO_MQTT_USE_TLS: 'false' })
        .brokerUrl,
      'mqtt://localhost:1883',
    )
    assert.equal(
      readAioEnvironment({ AIO_BROKER_HOSTNAME: '::1', AIO_MQTT_USE_TLS: 'False' }).brokerUrl,
      'mqtt://[::1]:8883',
    )
  })

  it('AIO_STATESTORE_URL, a whole URL, wins over the host name', () => {
    const aio = readAioEnvironment({ AIO_STATESTORE_URL: 'mqtt://127.0.0.1:1999', AIO_BROKER_HOSTNAME: 'aio-broker' })
    assert.equal(aio.brokerUrl, 'mqtt://127.0.0.1:1999')
    assert.equal(aio.brokerVariable, 'AIO_STATESTORE_URL')
  })

  it('reads every other variable, and the files they name', () => {
    const aio = readAioEnvironment({
      AIO_BROKER_HOSTNAME: 'h',
      AIO_MQTT_CLIENT_ID: 'node-red-0',
      AIO_MQTT_KEEP_ALIVE: '30',
      AIO_MQTT_SESSION_EXPIRY: '0',
      AIO_MQTT_CLEAN_START: 'true',
      AIO_MQTT_USERNAME: 'u',
      AIO_SAT_FILE: join(dir, 'token'),
      AIO_TLS_CA_FILE: join(dir, 'ca.crt'),
    })
    assert.deepEqual(
      {
        clientId: aio.clientId,
        keepaliveSec: aio.keepaliveSec,
        sessionExpirySec: aio.sessionExpirySec,
        cleanStart: aio.cleanStart,
      },
      { clientId: 'node-red-0', keepaliveSec: 30, sessionExpirySec: 0, cleanStart: true },
    )
    assert.deepEqual(
      environmentAuth(aio),
      { username: 'u', satTokenFile: join(dir, 'token') },
      'a username may go with a SAT, as in the SDKs',
    )
    assert.deepEqual(environmentTls(aio), { ca: Buffer.from('CA') })
    const withPassword = environmentAuth(
      readAioEnvironment({ AIO_MQTT_USERNAME: 'u', AIO_MQTT_PASSWORD_FILE: join(dir, 'password') }),
    )
    assert.equal(withPassword.password, 'pw', 'without the line end')
  })

  it('names the variable, its value and the problem', () => {
    refused({ AIO_BROKER_HOSTNAME: 'h', AIO_BROKER_TCP_PORT: 'eighty' }, 'AIO_BROKER_TCP_PORT', 'eighty', 'number')
    refused({ AIO_BROKER_TCP_PORT: '70000' }, 'AIO_BROKER_TCP_PORT', '70000', 'number')
    refused({ AIO_MQTT_USE_TLS: 'yes' }, 'AIO_MQTT_USE_TLS', 'yes', 'boolean')
    refused({ AIO_MQTT_KEEP_ALIVE: '-1' }, 'AIO_MQTT_KEEP_ALIVE', '-1', 'number')
    refused({ AIO_STATESTORE_URL: 'http://x' }, 'AIO_STATESTORE_URL', 'http://x', 'url')
    refused({ AIO_TLS_CA_FILE: join(dir, 'missing.crt') }, 'AIO_TLS_CA_FILE', join(dir, 'missing.crt'), 'file')
    refused({ AIO_SAT_FILE: join(dir, 'missing') }, 'AIO_SAT_FILE', join(dir, 'missing'), 'file')
    refused(
      { AIO_SAT_FILE: join(dir, 'token'), AIO_MQTT_PASSWORD_FILE: join(dir, 'password') },
      'AIO_SAT_FILE',
      join(dir, 'token'),
      'exclusive',
    )
    refused({ AIO_TLS_KEY_FILE: 'k' }, 'AIO_TLS_KEY_FILE', 'k', 'pair')
    refused({ AIO_TLS_CERT_FILE: 'c' }, 'AIO_TLS_CERT_FILE', 'c', 'pair')
  })
})

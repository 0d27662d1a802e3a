import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connectionFrom } from '../../../src/cli/connection'
import { UsageError } from '../../../src/cli/exit'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { Reply } from '../../../src/protocol'
import { mosquittoUrl } from '../../support/broker'
import { makeCerts } from '../../support/certs'
import { Responder } from '../../integration/client/support/responder'
import { cliBehaviour } from './behaviour'
import { FROM_SOURCE, runCli, startCli, withoutAioEnv } from './run'

cliBehaviour('aio-statestore (from source) against the emulator', () => FROM_SOURCE)

describe('aio-statestore: help, connection and failures', function () {
  this.timeout(60_000)
  let emulator: Emulator
  before(async () => {
    emulator = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, logLevel: 'error' })
  })
  after(async () => {
    await emulator?.stop()
  })

  it('has --help for every command, and the overview lists them', async () => {
    const overview = await runCli(FROM_SOURCE, ['--help'])
    assert.equal(overview.code, 0)
    const commands = ['get', 'set', 'del', 'vdel', 'watch', 'keys', 'lock', 'export', 'import']
    for (const c of commands) assert.match(overview.stdout.toString(), new RegExp(`^  ${c} +\\S`, 'm'), c)
    assert.match(overview.stdout.toString(), /AIO_BROKER_HOSTNAME/)
    for (const c of commands) {
      const r = await runCli(FROM_SOURCE, [c, '--help'])
      assert.equal(r.code, 0, c)
      assert.match(r.stdout.toString(), new RegExp(`^Usage: aio-statestore ${c} `), c)
      assert.match(r.stdout.toString(), /--broker <url>/, c)
    }
    assert.equal((await runCli(FROM_SOURCE, [])).code, 2, 'no command is a usage error')
  })

  it("connects where the AIO SDKs' environment variables say, flags winning", async () => {
    const url = new URL(emulator.brokerUrl)
    const env = withoutAioEnv({
      AIO_BROKER_HOSTNAME: url.hostname,
      AIO_BROKER_TCP_PORT: url.port,
      AIO_MQTT_USE_TLS: 'false',
      AIO_MQTT_CLIENT_ID: 'cli-from-env',
    })
    assert.equal((await runCli(FROM_SOURCE, ['set', 'env/key', 'v'], { env })).code, 0)
    assert.deepEqual((await runCli(FROM_SOURCE, ['get', 'env/key'], { env })).stdout, Buffer.from('v'))
    // A --broker flag overrides the environment.
    const wrongPort = { ...env, AIO_BROKER_TCP_PORT: '1' }
    assert.equal(
      (await runCli(FROM_SOURCE, ['get', 'env/key', '--broker', emulator.brokerUrl], { env: wrongPort })).code,
      0,
    )
  })

  it('takes connection flags before the command too, and names a wrong variable with its value', async () => {
    assert.equal((await runCli(FROM_SOURCE, ['--broker', emulator.brokerUrl, 'set', 'cli/before', 'v'])).code, 0)
    assert.deepEqual(
      (await runCli(FROM_SOURCE, [`--broker=${emulator.brokerUrl}`, '--timeout', '5000', 'get', 'cli/before'])).stdout,
      Buffer.from('v'),
    )
    assert.deepEqual(
      (
        await runCli(FROM_SOURCE, ['get', 'cli/before'], {
          env: withoutAioEnv({ AIO_STATESTORE_URL: emulator.brokerUrl }),
        })
      ).stdout,
      Buffer.from('v'),
      'AIO_STATESTORE_URL keeps working',
    )
    const wrong = await runCli(FROM_SOURCE, ['get', 'cli/before'], {
      env: withoutAioEnv({ AIO_BROKER_HOSTNAME: 'h', AIO_BROKER_TCP_PORT: 'eighty' }),
    })
    assert.equal(wrong.code, 2)
    assert.match(wrong.stderr, /^aio-statestore: AIO_BROKER_TCP_PORT="eighty": expected a whole number/)
  })

  it('--tls-server-name: the laptop recipe, a port-forward to 127.0.0.1 of a broker whose certificate names aio-broker', async () => {
    const pki = makeCerts({ serverAltNames: ['DNS:aio-broker'] })
    const token = join(pki.dir, 'token')
    writeFileSync(token, 'laptop-token')
    const cluster = await startEmulator({
      listen: { host: '127.0.0.1', port: 0 },
      logLevel: 'error',
      tlsListeners: [
        {
          port: 0,
          certFile: pki.serverCertFile,
          keyFile: pki.serverKeyFile,
          authentication: { method: 'sat', tokenFiles: [{ file: token }] },
        },
      ],
    })
    try {
      const flags = ['--broker', cluster.tlsUrls[0]!, '--ca-file', pki.caFile, '--sat-file', token, '--timeout', '3000']
      const without = await runCli(FROM_SOURCE, [...flags, 'set', 'laptop/k', 'v'])
      assert.equal(without.code, 3)
      assert.match(without.stderr, /altnames/)
      assert.equal(
        (await runCli(FROM_SOURCE, [...flags, '--tls-server-name', 'aio-broker', 'set', 'laptop/k', 'v'])).code,
        0,
      )
    } finally {
      await cluster.stop()
      rmSync(pki.dir, { recursive: true, force: true })
    }
  })

  it('reads the connection settings as the SDKs name them', () => {
    const dir = mkdtempSync(join(tmpdir(), 'aio-ss-cli-env-'))
    try {
      const password = join(dir, 'password')
      writeFileSync(password, 's3cret\n')
      const { options, timeoutMs } = connectionFrom(
        { timeout: '2500' },
        {
          AIO_BROKER_HOSTNAME: 'aio-broker',
          AIO_MQTT_USERNAME: 'me',
          AIO_MQTT_PASSWORD_FILE: password,
          AIO_MQTT_KEEP_ALIVE: '30',
          AIO_MQTT_SESSION_EXPIRY: '0',
          AIO_MQTT_CLEAN_START: 'false',
        },
      )
      assert.equal(options.brokerUrl, 'mqtts://aio-broker:8883', 'TLS and port 8883 unless told otherwise, as the SDKs')
      assert.equal(options.username, 'me')
      assert.equal(options.password, 's3cret', 'the line end of the file is not part of the password')
      assert.equal(options.keepaliveSec, 30)
      assert.equal(options.sessionExpirySec, 0)
      assert.equal(options.cleanStart, false)
      assert.equal(timeoutMs, 2500)
      assert.match(options.clientId, /^aio-statestore-cli-[0-9a-f]{8}$/)
      assert.throws(
        () => connectionFrom({}, { AIO_SAT_FILE: password, AIO_MQTT_PASSWORD_FILE: password }),
        UsageError,
        'a password and a SAT at once',
      )
      assert.throws(() => connectionFrom({ 'cert-file': password }, {}), UsageError, 'a certificate without its key')
      assert.throws(() => connectionFrom({}, { AIO_MQTT_USE_TLS: 'yes', AIO_BROKER_HOSTNAME: 'h' }), UsageError)
      assert.throws(
        () => connectionFrom({ 'password-file': join(dir, 'missing') }, {}),
        /^UsageError: cannot read the password file \(--password-file\) .*missing: ENOENT$/,
      )
      assert.throws(
        () => connectionFrom({}, { AIO_TLS_CA_FILE: join(dir, 'missing.crt') }),
        /^UsageError: cannot read the CA file \(AIO_TLS_CA_FILE\) .*missing\.crt: ENOENT$/,
      )
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('exits 3 with one line when it cannot connect', async () => {
    const r = await runCli(FROM_SOURCE, ['get', 'k', '--broker', 'mqtt://127.0.0.1:1', '--timeout', '500'])
    assert.equal(r.code, 3)
    assert.match(r.stderr, /^aio-statestore: cannot connect to mqtt:\/\/127\.0\.0\.1:1: .+\n$/)
  })

  it('reports a refused port at its first refusal, not after its timeout', async () => {
    // With an hour's timeout, the command ends only if the refusal ends it.
    const r = await runCli(FROM_SOURCE, ['get', 'k', '--broker', 'mqtt://127.0.0.1:1', '--timeout', '3600000'])
    assert.equal(r.code, 3)
    assert.match(
      r.stderr,
      /^aio-statestore: cannot connect to mqtt:\/\/127\.0\.0\.1:1: connect ECONNREFUSED 127\.0\.0\.1:1\n$/,
    )
  })

  it('keys exits 3 saying so where the state store has no SCAN', async function () {
    const url = await mosquittoUrl(this)
    const responder = await Responder.start(url, () => ({ payload: Reply.error('unknown command') }))
    try {
      const r = await runCli(FROM_SOURCE, ['keys', '*', '--broker', url])
      assert.equal(r.code, 3)
      assert.match(r.stderr, /^aio-statestore: this state store does not support SCAN .+\n$/)
    } finally {
      await responder.stop()
    }
  })

  it('lock forwards SIGTERM to the command, releases the lock and exits as the command did', async () => {
    const job = startCli(FROM_SOURCE, [
      'lock',
      'cli/signalled',
      '--broker',
      emulator.brokerUrl,
      '--',
      process.execPath,
      '-e',
      "console.error('job running');setTimeout(()=>{},60000)",
    ])
    await job.waitForStderr('job running')
    job.child.kill('SIGTERM')
    const ended = await job.ended
    assert.equal(ended.code, 128 + 15, ended.stderr)
    assert.equal(
      (await runCli(FROM_SOURCE, ['get', 'cli/signalled', '--broker', emulator.brokerUrl])).code,
      1,
      'released',
    )
  })

  it('lock --wait gives up with exit 3 while another holds the lock', async () => {
    const holder = startCli(FROM_SOURCE, [
      'lock',
      'cli/busy',
      '--broker',
      emulator.brokerUrl,
      '--',
      process.execPath,
      '-e',
      "console.error('holding');setTimeout(()=>{},60000)",
    ])
    try {
      await holder.waitForStderr('holding')
      const r = await runCli(FROM_SOURCE, [
        'lock',
        'cli/busy',
        '--wait',
        '300',
        '--broker',
        emulator.brokerUrl,
        '--',
        process.execPath,
        '-e',
        'process.exit(0)',
      ])
      assert.equal(r.code, 3)
      assert.match(r.stderr, /timed out/)
    } finally {
      holder.child.kill('SIGINT')
      await holder.ended
    }
  })
})

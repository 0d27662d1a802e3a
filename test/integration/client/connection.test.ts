/**
 * The connection: what goes into CONNECT, K8S-SAT token handling (read at every connect,
 * re-authentication when the file changes), authentication failures, TCP_NODELAY, status, the
 * bounds of ready() and close(), and the backoff curve.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { StateStoreClient, type ConnectionStatus } from '../../../src/client'
import { backoffDelay } from '../../../src/client/backoff'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { ArgumentError, CancelledError, ConnectionError, TimeoutError } from '../../../src/diagnostics/errors'
import { freePort } from '../../../dev/ports'
import { ClientPool, statusWhere, uniqueId } from '../../support/clients'
import { eventually } from '../../support/wait'
import { FakeBroker } from './support/fake-broker'

describe('client connection (scripted broker)', function () {
  let broker: FakeBroker
  let dir: string
  const pool = new ClientPool()
  before(async () => {
    broker = await FakeBroker.start()
    dir = mkdtempSync(join(tmpdir(), 'client-sat-'))
  })
  beforeEach(() => {
    broker.connects.length = 0
    broker.auths.length = 0
    broker.decide = () => 0
  })
  afterEach(() => pool.closeAll())
  after(async () => {
    await broker?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('connects with MQTT 5 and the options given: client id, clean start, keepalive, session expiry, credentials', async function () {
    const client = await pool.ready(broker.url, {
      keepaliveSec: 30,
      sessionExpirySec: 120,
      username: 'user',
      password: 'secret',
    })
    const [connect] = broker.connects
    assert.equal(connect!.protocolVersion, 5)
    assert.equal(connect!.clientId, client.clientId)
    assert.equal(connect!.clean, true)
    assert.equal(connect!.keepalive, 30)
    assert.equal(connect!.properties?.sessionExpiryInterval, 120)
    assert.equal(connect!.username, 'user')
    assert.equal(connect!.password?.toString(), 'secret')
    assert.equal(connect!.properties?.authenticationMethod, undefined)
    await pool.ready(broker.url, { cleanStart: false })
    assert.equal(broker.connects[1]!.clean, false)
  })

  it('K8S-SAT: sends the token file at every connect, fails as authFailed while refused, re-authenticates when the file changes', async function () {
    const tokenFile = join(dir, 'token')
    writeFileSync(tokenFile, 'expired-token\n')
    broker.decide = (c) =>
      c.properties?.authenticationData?.toString() === 'good-1' ||
      c.properties?.authenticationData?.toString() === 'good-2'
        ? 0
        : 0x87
    const client = pool.create(broker.url, { satTokenFile: tokenFile })
    const refused = await statusWhere(client, (s) => s.problem === 'authFailed')
    assert.ok(refused.state === 'disconnected' || refused.state === 'reconnecting')
    assert.match(refused.reason ?? '', /Not authorized/i)
    assert.equal(broker.connects[0]!.properties?.authenticationMethod, 'K8S-SAT')
    assert.equal(
      broker.connects[0]!.properties?.authenticationData?.toString(),
      'expired-token',
      'trimmed file content',
    )
    // Still retrying with the refused token...
    await eventually(() => (broker.connects.length >= 3 ? true : undefined), 'retries', 5000)
    // ... until the kubelet writes a new one: the next connect carries it.
    writeFileSync(tokenFile, 'good-1')
    await client.ready({ timeoutMs: 5000 })
    assert.notEqual(client.status.problem, 'authFailed')
    assert.equal(broker.connects.at(-1)!.properties?.authenticationData?.toString(), 'good-1')

    // Rotated while connected: MQTT 5 re-authentication with the new token.
    writeFileSync(tokenFile, 'good-2')
    const auth = await eventually(() => broker.auths[0], 'an AUTH packet', 5000)
    assert.equal(auth.reasonCode, 0x19)
    assert.equal(auth.properties?.authenticationMethod, 'K8S-SAT')
    assert.equal(auth.properties?.authenticationData?.toString(), 'good-2')
    assert.equal(client.status.state, 'connected')
    // And a reconnect uses it too.
    const connects = broker.connects.length
    broker.dropAll()
    await statusWhere(client, (s) => s.state !== 'connected')
    await client.ready({ timeoutMs: 5000 })
    assert.equal(broker.connects.length, connects + 1)
    assert.equal(broker.connects.at(-1)!.properties?.authenticationData?.toString(), 'good-2')
  })

  it('reports its status: connecting, connected, disconnected with a reason, reconnecting, connected, closed', async function () {
    const client = pool.create(broker.url)
    const states: ConnectionStatus[] = []
    client.on('status', (s) => states.push(s))
    assert.equal(client.status.state, 'connecting')
    await client.ready({ timeoutMs: 5000 })
    broker.dropAll()
    await statusWhere(client, (s) => s.state === 'reconnecting')
    await client.ready({ timeoutMs: 5000 })
    await client.close()
    const names = states.map((s) => s.state)
    assert.deepEqual(names.slice(0, 1), ['connected'])
    assert.ok(
      names.indexOf('disconnected') > 0 && names.indexOf('reconnecting') > names.indexOf('disconnected'),
      names.join(' → '),
    )
    assert.deepEqual(names.slice(-2), ['connected', 'closed'])
    assert.ok(states.find((s) => s.state === 'disconnected')?.reason)
  })

  it('sets TCP_NODELAY on its socket', async function () {
    const calls: Array<{ socket: Socket; on: boolean | undefined }> = []
    const original = Socket.prototype.setNoDelay
    Socket.prototype.setNoDelay = function (this: Socket, on?: boolean) {
      calls.push({ socket: this, on })
      return original.call(this, on)
    }
    try {
      await pool.ready(broker.url)
    } finally {
      Socket.prototype.setNoDelay = original
    }
    // The client's own socket is the one whose far end is the broker's port (the broker's sockets face the client's port).
    assert.ok(calls.some((c) => c.on === true && c.socket.remotePort === broker.port))
  })

  it('close() is bounded and leaves nothing behind while a CONNECT goes unanswered', async function () {
    broker.decide = () => null
    const client = pool.create(broker.url)
    await eventually(() => broker.connects[0], 'the CONNECT', 5000)
    const pending = client.get('k', { timeoutMs: 60_000 })
    await client.close()
    await assert.rejects(pending, ConnectionError)
    assert.equal(client.status.state, 'closed')
    const attempts = broker.connects.length
    await new Promise((r) => setTimeout(r, 300))
    assert.equal(broker.connects.length, attempts, 'no reconnect after close')
  })

  it('close() is bounded while reconnecting to a broker that is gone', async function () {
    const client = pool.create(`mqtt://127.0.0.1:${await freePort()}`)
    await statusWhere(client, (s) => s.state === 'reconnecting')
    await client.close()
    assert.equal(client.status.state, 'closed')
  })

  it('ready() times out with the reason, and is cancelled by a signal', async function () {
    broker.decide = () => 0x86
    const client = pool.create(broker.url, { username: 'who', password: 'wrong' })
    const err = await client.ready({ timeoutMs: 1000 }).catch((e: unknown) => e)
    assert.ok(err instanceof TimeoutError)
    assert.match(err.message, /authentication failed/)
    const controller = new AbortController()
    setTimeout(() => controller.abort(), 50)
    await assert.rejects(client.ready({ signal: controller.signal }), CancelledError)
    const req = await client.get('k', { timeoutMs: 100 }).catch((e: unknown) => e)
    assert.ok(req instanceof TimeoutError)
    assert.match(req.message, /not connected/)
  })

  it('connectionWaitMs: a request while disconnected fails with the reason, at once (0) or after the wait, not at its timeout', async function () {
    const url = `mqtt://127.0.0.1:${await freePort()}`
    const now = pool.create(url, { connectionWaitMs: 0, requestTimeoutMs: 60_000 })
    await statusWhere(now, (s) => s.state === 'reconnecting' && s.reason !== undefined)
    const atOnce = await now.get('k').catch((e: unknown) => e)
    assert.ok(atOnce instanceof ConnectionError, `a ConnectionError, got ${String(atOnce)}`)
    assert.match(atOnce.message, /GET request failed: not connected \(.*ECONNREFUSED/)
    // A wait shorter than the timeout (60 s, longer than this test may run) ends the request with the reason.
    const later = pool.create(url, { connectionWaitMs: 300, requestTimeoutMs: 60_000 })
    const waited = await later.set('k', 'v').catch((e: unknown) => e)
    assert.ok(waited instanceof ConnectionError, `a ConnectionError, got ${String(waited)}`)
    assert.match(waited.message, /not connected after waiting 300 ms/)
    assert.deepEqual(later.load, { inFlight: 0, queued: 0 }, 'nothing left pending')
  })

  it('connectionWaitMs as long as the timeout: the request waits its whole timeout, then fails with the reason, not a TimeoutError', async function () {
    const url = `mqtt://127.0.0.1:${await freePort()}`
    const client = pool.create(url, { connectionWaitMs: 5000, requestTimeoutMs: 300 })
    await statusWhere(client, (s) => s.state === 'reconnecting' && s.reason !== undefined)
    const failed = await client.get('k').catch((e: unknown) => e)
    assert.ok(failed instanceof ConnectionError, `a ConnectionError, got ${String(failed)}`)
    assert.equal(failed.code, 'NotConnected')
    assert.match(failed.message, /GET request failed: not connected after waiting 300 ms \(.*ECONNREFUSED/)
    assert.deepEqual(client.load, { inFlight: 0, queued: 0 }, 'nothing left pending')
  })

  it('connectionWaitMs: a request made while connecting is sent once the connection comes within the wait', async function () {
    const client = pool.create(broker.url, { connectionWaitMs: 1000 })
    assert.notEqual(client.status.state, 'connected')
    const sent = client.get('k', { timeoutMs: 1500 }).catch((e: unknown) => e)
    // The scripted broker answers no request: a timeout (sent, no response) proves it left the wait.
    const err = await sent
    assert.ok(err instanceof TimeoutError, `sent and timed out, got ${String(err)}`)
    assert.match(err.message, /no response/)
  })

  it('refuses unusable options at construction', function () {
    const base = { brokerUrl: broker.url, clientId: 'x' }
    assert.throws(() => new StateStoreClient({ ...base, brokerUrl: 'http://example' }), ArgumentError)
    assert.throws(() => new StateStoreClient({ ...base, brokerUrl: 'not a url' }), ArgumentError)
    assert.throws(() => new StateStoreClient({ ...base, clientId: '' }), ArgumentError)
    assert.throws(() => new StateStoreClient({ ...base, clientId: 'a/b' }), ArgumentError)
    assert.throws(() => new StateStoreClient({ ...base, maxInFlight: 0 }), ArgumentError)
    assert.throws(() => new StateStoreClient({ ...base, reconnectMinMs: 1000, reconnectMaxMs: 10 }), ArgumentError)
  })

  it('backs off exponentially with jitter, up to the maximum', function () {
    for (let attempt = 0; attempt < 12; attempt++) {
      const ceiling = Math.min(10_000, 500 * 2 ** attempt)
      assert.equal(
        backoffDelay(attempt, 500, 10_000, () => 0),
        Math.round(ceiling / 2),
      )
      assert.equal(
        backoffDelay(attempt, 500, 10_000, () => 1),
        ceiling,
      )
      const d = backoffDelay(attempt, 500, 10_000)
      assert.ok(d >= ceiling / 2 && d <= ceiling)
    }
  })
})

describe('client connection (emulator broker with authentication)', function () {
  let emulator: Emulator
  let dir: string
  const pool = new ClientPool()
  before(async () => {
    emulator = await startEmulator({
      listen: { host: '127.0.0.1', port: 0 },
      brokerAuth: { users: { alice: 'wonderland' }, satTokens: ['sat-token-1'] },
      logLevel: 'error',
    })
    dir = mkdtempSync(join(tmpdir(), 'client-auth-'))
  })
  afterEach(() => pool.closeAll())
  after(async () => {
    await emulator?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('works with a username and password, and reports a wrong password as authFailed', async function () {
    const good = await pool.ready(emulator.brokerUrl, { username: 'alice', password: Buffer.from('wonderland') })
    await good.set('k', 'v')
    assert.equal((await good.get('k')).value?.toString(), 'v')
    const bad = pool.create(emulator.brokerUrl, { username: 'alice', password: 'guess' })
    const status = await statusWhere(bad, (s) => s.problem === 'authFailed')
    assert.match(status.reason ?? '', /user name or password|not authorized/i)
  })

  it('works with a K8S-SAT token file', async function () {
    const tokenFile = join(dir, 'token')
    writeFileSync(tokenFile, 'sat-token-1\n')
    const client = await pool.ready(emulator.brokerUrl, { satTokenFile: tokenFile, clientId: uniqueId('sat') })
    assert.equal((await client.set('sat', 'ok')).applied, true)
    writeFileSync(join(dir, 'other'), 'nope')
    const refused = pool.create(emulator.brokerUrl, { satTokenFile: join(dir, 'other') })
    await statusWhere(refused, (s) => s.problem === 'authFailed')
  })
})

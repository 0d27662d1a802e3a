import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import mqtt from 'mqtt'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { Reply, Request } from '../../../src/protocol'
import { RawClient } from '../emulator/raw-client'

/**
 * Any authenticated user could connect with the client id a rule names (`admin-app`), kick the real
 * one off and inherit its rights. On the embedded broker, another user's CONNECT with a client id in
 * use is refused as not authorized, and the holder stays connected; the same user may still take
 * its own session over (a restart).
 */
describe('security: a connected client id cannot be borrowed by another user', function () {
  this.timeout(20_000)
  let dir: string
  let emulator: Emulator
  let holder: RawClient

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'security-takeover-'))
    const rules = join(dir, 'authorization.json')
    writeFileSync(
      rules,
      JSON.stringify({
        rules: [
          {
            principals: { usernames: ['alice', 'mallory'] },
            brokerResources: [
              { method: 'Connect' },
              { method: 'Subscribe', topics: ['clients/{principal.clientId}/#'] },
            ],
          },
          {
            principals: { clientIds: ['admin-app'] },
            stateStoreResources: [{ method: 'ReadWrite', keyType: 'Pattern', keys: ['*'] }],
          },
        ],
      }),
    )
    emulator = await startEmulator({
      listen: { host: '127.0.0.1', port: 0 },
      brokerAuth: { users: { alice: 'alice-pw', mallory: 'mallory-pw' } },
      authorizationFile: rules,
      logLevel: 'error',
    })
    holder = await RawClient.connect(emulator.brokerUrl, 'admin-app', { username: 'alice', password: 'alice-pw' })
    assert.deepEqual((await holder.request(Request.set('TOPSECRET', 'x'))).payload, Reply.ok)
  })
  after(async () => {
    await holder?.close()
    await emulator?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it("refuses another user's CONNECT with the holder's client id, and the holder keeps its connection", async () => {
    const err = await mqtt
      .connectAsync(emulator.brokerUrl, {
        protocolVersion: 5,
        clientId: 'admin-app',
        username: 'mallory',
        password: 'mallory-pw',
        reconnectPeriod: 0,
      })
      .then(
        async (c) => {
          await c.endAsync(true)
          return null
        },
        (e: Error & { code?: number }) => e,
      )
    assert.ok(err, 'the CONNECT is refused')
    assert.equal(err.code, 0x87)
    // The holder was not kicked off: it still gets answers.
    assert.equal((await holder.request(Request.get('TOPSECRET'))).payload.toString(), '$1\r\nx\r\n')
  })

  it('lets the same user take its own session over', async () => {
    const again = await RawClient.connect(emulator.brokerUrl, 'admin-app', { username: 'alice', password: 'alice-pw' })
    try {
      assert.equal((await again.request(Request.get('TOPSECRET'))).payload.toString(), '$1\r\nx\r\n')
    } finally {
      await again.close()
    }
  })
})

import assert from 'node:assert/strict'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { Reply, Request } from '../../../src/protocol'
import { decodeExact } from '../../../src/resp'
import { RawClient } from '../emulator/raw-client'

/**
 * The globs that froze the emulator on V8's backtracking RegExp (29.8 s for one SCAN over a 43-byte
 * key; more than two minutes for a 400-byte key, SIGTERM ignored), through the real service: each
 * SCAN is answered, and another client's GET sent while it runs is answered too. With the old
 * matcher neither answer comes before mocha's timeout.
 */
describe('security: a SCAN or key browser glob cannot freeze the emulator', function () {
  this.timeout(10_000)
  let emulator: Emulator
  let attacker: RawClient
  let neighbour: RawClient

  before(async () => {
    emulator = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, admin: true, logLevel: 'error' })
    attacker = await RawClient.connect(emulator.brokerUrl)
    neighbour = await RawClient.connect(emulator.brokerUrl)
    for (const [key, value] of [
      ['x'.repeat(43), 'v'],
      ['a'.repeat(400), 'v'],
      ['mine', 'kept'],
    ]) {
      assert.deepEqual((await neighbour.request(Request.set(key!, value!))).payload, Reply.ok)
    }
  })
  after(async () => {
    await attacker?.close()
    await neighbour?.close()
    await emulator?.stop()
  })

  for (const pattern of ['*?*?*?*?*?*?*?*?*?*?*?*?!', '*a*a*a*a*a*a*b']) {
    it(`SCAN ${pattern} is answered, and a GET sent during it too`, async () => {
      const scan = attacker.request(Request.scan(pattern, null))
      const get = neighbour.request(Request.get('mine'))
      const [scanned, got] = await Promise.all([scan, get])
      const answer = decodeExact(scanned.payload)
      assert.equal(answer.kind, 'array')
      assert.deepEqual(decodeExact(got.payload), { kind: 'bulk', value: Buffer.from('kept') })
    })
  }

  it('the key browser (admin listKeys, the sidebar) answers the same globs', async () => {
    for (const pattern of ['*?*?*?*?*?*?*?*?*?*?*?*?!', '*a*a*a*a*a*a*b']) {
      const page = await emulator.admin!.listKeys({ pattern })
      assert.equal(page.matching, 0)
    }
  })
})

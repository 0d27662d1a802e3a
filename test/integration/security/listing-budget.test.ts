import assert from 'node:assert/strict'
import { setImmediate as turn } from 'node:timers/promises'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { EmulatorAdmin, RemoteEmulatorAdmin } from '../../../src/emulator/admin'
import { Keyspace } from '../../../src/emulator/core/keyspace'
import { HybridLogicalClock } from '../../../src/hlc'
import { Reply, Request } from '../../../src/protocol'
import { decodeExact } from '../../../src/resp'
import { RawClient } from '../emulator/raw-client'

/**
 * A key listing is a walk on a time budget that pauses in the middle of one key's match. The
 * pattern `*` and a thousand `?` before a `!` costs a million steps per 1,000 key bytes: over 600
 * keys of 4,000 bytes the sidebar's listing froze Node-RED (embedded emulator) 19.6 s; over
 * `--admin` MQTT 20 keys of 60,000 bytes froze the emulator 13.9 s. Each listing matched every key
 * whole before it looked at the clock. Asserted without time: the event loop turns during the
 * listing of a single key, and a GET sent while a listing runs is answered before it.
 */
const FREEZER = `*${'?'.repeat(1000)}!`

/** What settled first of two promises. */
async function firstOf(a: Promise<unknown>, b: Promise<unknown>): Promise<string[]> {
  const order: string[] = []
  await Promise.all([a.then(() => order.push('a')), b.then(() => order.push('b'))])
  return order
}

describe('security: every key listing is budgeted', function () {
  this.timeout(60_000)

  it('a listing yields to the event loop in the middle of one long key', async () => {
    const store = new Keyspace({ clock: new HybridLogicalClock() })
    store.set(Buffer.from('x'.repeat(4000)), Buffer.from('v'))
    const admin = new EmulatorAdmin(store, { stepMs: 0 })
    let turns = 0
    let listing = true
    const ticker = (async () => {
      while (listing) {
        await turn()
        turns++
      }
    })()
    const page = await admin.listKeys({ pattern: FREEZER })
    listing = false
    await ticker
    assert.equal(page.matching, 0)
    // Some four million steps: a pause every 4,096 of them.
    assert.ok(turns >= 100, `the event loop turned ${turns} times during the listing of one key`)
  })

  describe('through an emulator', () => {
    let emulator: Emulator
    let neighbour: RawClient

    before(async () => {
      emulator = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, adminOverMqtt: true, logLevel: 'error' })
      neighbour = await RawClient.connect(emulator.brokerUrl)
      for (const key of ['a'.repeat(60_000), 'mine']) {
        assert.deepEqual((await neighbour.request(Request.set(key, 'v'))).payload, Reply.ok)
      }
    })
    after(async () => {
      await neighbour?.close()
      await emulator?.stop()
    })

    const get = async () =>
      assert.deepEqual(decodeExact((await neighbour.request(Request.get('mine'))).payload), {
        kind: 'bulk',
        value: Buffer.from('v'),
      })

    it('the sidebar in the same process (admin listKeys): a GET sent during the listing is answered first', async () => {
      const listing = emulator.admin!.listKeys({ pattern: FREEZER })
      assert.deepEqual(await firstOf(listing, get()), ['b', 'a'])
      assert.equal((await listing).matching, 0)
    })

    it('over --admin MQTT: a GET sent during the listing is answered first', async () => {
      const found = await RemoteEmulatorAdmin.discover({ brokerUrl: emulator.brokerUrl, clientId: 'listing-budget' })
      assert.ok(found, 'the admin channel answers')
      // The GET goes once the emulator has begun the listing.
      const admin = emulator.admin!
      const listKeys = admin.listKeys.bind(admin)
      let begun!: () => void
      const listingBegun = new Promise<void>((resolve) => (begun = resolve))
      admin.listKeys = (query) => {
        begun()
        return listKeys(query)
      }
      try {
        const listing = found.admin.listKeys({ pattern: FREEZER })
        await listingBegun
        assert.deepEqual(await firstOf(listing, get()), ['b', 'a'])
        assert.equal((await listing).matching, 0)
      } finally {
        admin.listKeys = listKeys
        await found.admin.close()
      }
    })
  })
})

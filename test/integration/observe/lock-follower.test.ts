// The sidebar's lock entries follow the store, not only their own lease: a release by another
// node or runtime, an expiry and a new leader show at once (real emulator, real clients and leases).
import assert from 'node:assert/strict'
import { LockFollower, StoreActivity, type LockRecord } from '../../../src/observe'
import { StateStoreClient } from '../../../src/client'
import { Lease } from '../../../src/locks'
import { startEmulator, type Emulator } from '../../../src/emulator'

describe('observe: lock entries follow the store', function () {
  this.timeout(10_000)
  let emulator: Emulator
  let ours: StateStoreClient
  let theirs: StateStoreClient

  before(async () => {
    emulator = await startEmulator({ listen: { host: '127.0.0.1', port: 0 } })
    ours = new StateStoreClient({ brokerUrl: emulator.brokerUrl, clientId: `follower-ours-${process.pid}` })
    theirs = new StateStoreClient({ brokerUrl: emulator.brokerUrl, clientId: `follower-theirs-${process.pid}` })
    await Promise.all([ours.ready({ timeoutMs: 5000 }), theirs.ready({ timeoutMs: 5000 })])
  })
  after(async () => {
    await Promise.all([ours?.close(), theirs?.close()])
    await emulator?.stop()
  })

  /** Resolves with the entry once a change makes `test` true of it. */
  function until(activity: StoreActivity, id: string, test: (r: LockRecord) => boolean): Promise<LockRecord> {
    return new Promise((resolve) => {
      const check = () => {
        const r = activity.locks.get(id)
        if (r && test(r)) {
          activity.off('change', check)
          resolve(r)
        }
      }
      activity.on('change', check)
      check()
    })
  }

  it('shows a lease released by another holder as free, and the next holder when one takes it', async () => {
    const activity = new StoreActivity()
    const follower = new LockFollower(activity, ours)
    const lease = new Lease(ours, 'follow/pump', { holder: 'node-a', leaseMs: 30_000 })
    try {
      activity.trackLease('a', 'follow/pump', 'lease', 'node-a', 30_000, lease)
      assert.equal((await lease.tryAcquire()).acquired, true)
      await until(activity, 'a/follow/pump', (r) => r.held)
      // Another runtime deletes the key (a release by another node, an operator).
      const freed = until(activity, 'a/follow/pump', (r) => r.currentHolder === null)
      await theirs.del('follow/pump')
      const free = await freed
      assert.equal(free.held, false, 'no longer shown as held by this runtime')
      assert.equal(free.expiresAt, null)
      const taken = until(activity, 'a/follow/pump', (r) => r.currentHolder === 'node-b')
      await theirs.set('follow/pump', 'node-b', { condition: 'NX' })
      assert.equal((await taken).held, false)
    } finally {
      await lease.close()
      await follower.close()
    }
  })

  it('shows an expired lease as free when the store expires it', async () => {
    const activity = new StoreActivity()
    const follower = new LockFollower(activity, ours)
    const lease = new Lease(ours, 'follow/short', { holder: 'node-a', leaseMs: 300 })
    try {
      activity.trackLease('a', 'follow/short', 'lease', 'node-a', 300, lease)
      const held = until(activity, 'a/follow/short', (r) => r.held)
      assert.equal((await lease.tryAcquire()).acquired, true)
      await held
      const expired = await until(activity, 'a/follow/short', (r) => !r.held && r.currentHolder === null)
      assert.equal(expired.fencingToken, null)
    } finally {
      await lease.close()
      await follower.close()
    }
  })
})

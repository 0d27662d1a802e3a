import assert from 'node:assert/strict'
import { StateStoreClient } from '../../../src/client'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { ArgumentError } from '../../../src/diagnostics/errors'
import { LeaderElection, type LeaderLoss } from '../../../src/locks'
import { scaled } from '../../support/deadline'
import { eventually, until } from '../../support/wait'

/**
 * The HA overlay's candidates (deploy/overlays/ha/settings-ha.js) are elected on one key, which holds
 * the leader's name: two candidates started with one name both led within 4 s (a renewal SET NEX
 * overwrites an equal value), and anyone who may write the leader key ended the active's term, upon
 * which the active exited. Now each candidate holds its name (exclusiveCandidate): a second of one name
 * is refused; and a term overwritten while it held (rideOutOverwrite) is ridden out for a term and
 * taken back when nobody renewed the stray write.
 */
describe('security: HA candidates hold distinct names, and a stray write does not bounce the leader', function () {
  this.timeout(120_000)
  const TERM_MS = scaled(1000)
  let emulator: Emulator
  const clients: StateStoreClient[] = []
  const elections: LeaderElection[] = []
  let n = 0

  before(async () => {
    emulator = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, logLevel: 'error' })
  })
  afterEach(async () => {
    await Promise.all(elections.splice(0).map((e) => e.close()))
    await Promise.all(clients.splice(0).map((c) => c.close()))
  })
  after(async () => emulator?.stop())

  async function client(): Promise<StateStoreClient> {
    const c = new StateStoreClient({ brokerUrl: emulator.brokerUrl, clientId: `ha-identity-${n++}` })
    clients.push(c)
    await c.ready({ timeoutMs: 10_000 })
    return c
  }
  async function candidate(position: string, name: string): Promise<LeaderElection> {
    const e = new LeaderElection(await client(), position, {
      candidate: name,
      termMs: TERM_MS,
      exclusiveCandidate: true,
      rideOutOverwrite: true,
    })
    elections.push(e)
    return e
  }
  const renewed = (e: LeaderElection) => new Promise<void>((resolve) => e.lease.once('renewed', () => resolve()))
  const overwrite = (e: LeaderElection) =>
    new Promise<{ holder: Buffer | null }>((resolve) => e.once('overwritten', resolve))
  const reclaim = (e: LeaderElection) => new Promise<void>((resolve) => e.once('reclaimed', () => resolve()))
  const losses = (e: LeaderElection): LeaderLoss[] => {
    const seen: LeaderLoss[] = []
    e.on('lost', (l) => seen.push(l))
    return seen
  }

  it('two candidates of one name: the second campaign is refused naming the name, and only the first leads', async () => {
    const first = await candidate('ha1/leader', 'node-red-0')
    const second = await candidate('ha1/leader', 'node-red-0')
    await first.campaign()
    await assert.rejects(
      second.campaign(),
      (err: unknown) =>
        err instanceof ArgumentError &&
        /the candidate name node-red-0 is held by another running candidate/.test(err.message),
    )
    assert.equal(second.isLeader, false)
    assert.equal(await second.tryCampaign().catch(() => false), false, 'a single attempt is refused too')
    // A renewal later the first still leads, alone.
    await renewed(first)
    assert.equal(first.isLeader, true)
    assert.equal(second.isLeader, false)
    assert.equal((await second.leader())?.toString(), 'node-red-0')
  })

  it('a name left by a candidate that died is free a term later', async () => {
    const dead = await candidate('ha2/leader', 'node-red-0')
    await dead.campaign()
    // Stops renewing without releasing anything: what kill -9 leaves.
    await dead.close()
    const restarted = await candidate('ha2/leader', 'node-red-0')
    await eventually(
      async () => ((await restarted.tryCampaign().catch(() => false)) ? true : undefined),
      'the restarted candidate elected under its old name',
      10 * TERM_MS,
      100,
    )
    assert.equal(restarted.isLeader, true)
  })

  it('a stray write to the leader key while the term holds: the leader says so, stays leader a term, and takes the key back', async () => {
    const leader = await candidate('ha3/leader', 'node-red-0')
    const lost = losses(leader)
    await leader.campaign()
    const overwritten = overwrite(leader)
    const reclaimed = reclaim(leader)
    const stray = await client()
    await stray.set('ha3/leader', 'intruder')
    const { holder } = await overwritten
    assert.equal(holder?.toString(), 'intruder')
    assert.equal(leader.isLeader, true, 'still leader while it waits a term')
    await reclaimed
    assert.deepEqual(lost, [], 'the term was never given up')
    assert.equal(leader.isLeader, true)
    assert.equal((await stray.get('ha3/leader')).value?.toString(), 'node-red-0')
    // And it renews as before.
    await renewed(leader)
    assert.equal(leader.isLeader, true)
  })

  it('an overwrite that is renewed is a leader: the term is lost a term later', async () => {
    const leader = await candidate('ha4/leader', 'node-red-0')
    const lost = losses(leader)
    await leader.campaign()
    const other = await client()
    const overwritten = overwrite(leader)
    let renewing = true
    const renewals = (async () => {
      while (renewing) {
        await other.set('ha4/leader', 'node-red-9', { expiryMs: TERM_MS })
        await new Promise((resolve) => setTimeout(resolve, TERM_MS / 4))
      }
    })()
    try {
      await overwritten
      await until(() => lost.length > 0, 'the term lost', 10 * TERM_MS)
      assert.equal(lost[0]!.reason, 'anotherHolder')
      assert.equal(leader.isLeader, false)
    } finally {
      renewing = false
      await renewals
    }
  })
})

/**
 * Leases, locks and leader election against the emulator, over mosquitto and the embedded
 * broker: mutual exclusion between racing clients, hand-over on release and on expiry with
 * strictly greater tokens, automatic renewal and its loss, fenced edits, failover.
 */
import assert from 'node:assert/strict'
import type { KeyNotification, SetResult, StateStoreClient } from '../../../src/client'
import { keyLockName, LeaderElection, Lease, Lock, updateKey, type LeaseLoss } from '../../../src/locks'
import { ArgumentError, CancelledError, TimeoutError } from '../../../src/diagnostics/errors'
import { Hlc } from '../../../src/hlc'
import { ClientPool, uniqueId } from '../../support/clients'
import { eventually } from '../../support/wait'
import { scaled } from '../../support/deadline'
import { onEveryBroker } from './support/topology'
import { startEmulator, type Emulator } from '../../../src/emulator'

/**
 * Registers an afterEach that closes what a test passed to the returned function (leases,
 * elections), then the pool's clients, so that nothing a failed test opened outlives it.
 */
function closedAfterEach(pool: ClientPool): <T extends { close(): Promise<void> }>(opened: T) => T {
  const open: Array<{ close(): Promise<void> }> = []
  afterEach(async () => {
    await Promise.all(open.splice(0).map((o) => o.close()))
    await pool.closeAll()
  })
  return (opened) => {
    open.push(opened)
    return opened
  }
}

onEveryBroker('leases', (t) => {
  const pool = new ClientPool()
  const closing = closedAfterEach(pool)
  const lease = (c: StateStoreClient, name: string, options: ConstructorParameters<typeof Lease>[2] = {}) =>
    closing(new Lease(c, name, options))

  it('try-acquires, reports the holder, renews with a greater token, releases', async function () {
    const a = await pool.ready(t.url)
    const b = await pool.ready(t.url)
    const name = uniqueId('lease')
    const la = lease(a, name, { leaseMs: 5000 })
    const lb = lease(b, name, { leaseMs: 5000, holder: 'b-holder' })
    const events: string[] = []
    la.on('acquired', () => events.push('acquired'))
    la.on('renewed', () => events.push('renewed'))
    la.on('released', () => events.push('released'))

    const got = await la.tryAcquire()
    assert.equal(got.acquired, true)
    assert.ok(got.fencingToken && la.fencingToken?.equals(got.fencingToken))
    assert.deepEqual(await lb.tryAcquire(), { acquired: false, fencingToken: null })
    assert.equal((await lb.holder()).holder?.toString(), a.clientId)

    assert.equal(await la.renew(), true)
    assert.ok(Hlc.compare(la.fencingToken!, got.fencingToken) > 0)
    assert.equal(await lb.release(), false, 'VDEL with another holder value removes nothing')
    assert.equal(await la.release(), true)
    assert.equal(la.fencingToken, null)
    assert.equal((await la.holder()).holder, null)
    assert.deepEqual(events, ['acquired', 'renewed', 'released'])
    assert.equal((await lb.tryAcquire()).acquired, true)
    await lb.release()
  })

  it('renews automatically past its lease time, and reports "lost" when a renewal fails', async function () {
    const a = await pool.ready(t.url)
    const b = await pool.ready(t.url)
    const name = uniqueId('lease')
    const la = lease(a, name, { leaseMs: 1000, renewPeriodMs: 200 })
    let renewals = 0
    la.on('renewed', () => (renewals += 1))
    await la.tryAcquire()
    await eventually(() => (renewals >= 6 ? true : undefined), 'six renewals', 5000)
    // Six renewals at 200 ms cover more than the 1000 ms lease: still ours.
    assert.equal((await b.get(name)).value?.toString(), a.clientId)

    const lost = new Promise<LeaseLoss>((resolve) => la.once('lost', resolve))
    // Someone else takes the key (as if our lease had lapsed): the next renewal is refused.
    await b.set(name, 'usurper')
    const { reason, message } = await lost
    assert.equal(reason, 'anotherHolder')
    assert.match(message, /another holder/)
    assert.equal(la.fencingToken, null)
    const before = renewals
    await new Promise((r) => setTimeout(r, 250))
    assert.equal(renewals, before, 'renewal stopped after the first failure')
  })

  it('stops renewing at once, with "lost", when its client closes', async function () {
    const a = await pool.ready(t.url)
    const la = lease(a, uniqueId('lease'), { leaseMs: 10_000, renewPeriodMs: 5000 })
    await la.tryAcquire()
    const lost = new Promise<LeaseLoss>((resolve) => la.once('lost', resolve))
    await a.close()
    assert.equal((await lost).reason, 'clientClosed')
    assert.match((await lost).message, /client was closed/)
    assert.equal(la.fencingToken, null)
  })

  it('followKey: a delete by someone else ends the lease at once; no renewal writes the key back, and a waiter gets it', async function () {
    const a = await pool.ready(t.url)
    const b = await pool.ready(t.url)
    const c = await pool.ready(t.url)
    const name = uniqueId('lease')
    // Held until the delete however busy the machine: a lease that lapsed first would be written anew.
    const held = lease(a, name, { leaseMs: scaled(1000), renewPeriodMs: 200, followKey: true })
    const seen: string[] = []
    const watching = await c.observe(name, (n) => seen.push(n.operation === 'SET' ? n.value!.toString() : 'DELETE'))
    await held.tryAcquire()
    // Renewed twice: its own SETs are heard, the follow is armed.
    let renewals = 0
    const renewed = new Promise<void>((resolve) => held.on('renewed', () => ++renewals === 2 && resolve()))
    await renewed
    const lost = new Promise<LeaseLoss>((resolve) => held.once('lost', resolve))
    const waiting = new Lock(c, name, { holder: 'waiter', leaseMs: 1000, renewPeriodMs: 200 })
    const acquired = waiting.acquire({ timeoutMs: 10_000 })
    const beforeDelete = seen.length
    await b.del(name)
    const why = await lost
    assert.equal(why.deleted, true)
    assert.equal(why.reason, 'deleted')
    assert.match(why.message, /deleted by someone else/)
    assert.equal(held.fencingToken, null)
    await acquired
    // The waiter renews twice: had the first holder renewed meanwhile, a renewal of the waiter would be refused.
    let waiterRenewals = 0
    const waiterRenewed = new Promise<void>((resolve, reject) => {
      waiting.lease.on('renewed', () => ++waiterRenewals === 2 && resolve())
      waiting.lease.on('lost', ({ reason }) => reject(new Error(reason)))
    })
    await waiterRenewed
    await waiting.release()
    await eventually(() => (seen.at(-1) === 'DELETE' ? true : undefined), 'the waiter released', 3000)
    const afterDelete = seen.slice(seen.indexOf('DELETE', beforeDelete) + 1)
    assert.ok(
      !afterDelete.includes(a.clientId),
      `nothing wrote the first holder's value back: ${afterDelete.join(', ')}`,
    )
    assert.ok(afterDelete.includes('waiter'))
    await watching.close()
  })

  it('followKey: another value written over the key ends the lease with "another holder", and leaves that value', async function () {
    const a = await pool.ready(t.url)
    const b = await pool.ready(t.url)
    const name = uniqueId('lease')
    const held = lease(a, name, { leaseMs: 10_000, renewPeriodMs: 5000, followKey: true })
    await held.tryAcquire()
    // Our own SET is heard before the overwrite (notifications of one key arrive in order).
    const lost = new Promise<LeaseLoss>((resolve) => held.once('lost', resolve))
    await b.set(name, 'usurper')
    const why = await lost
    assert.equal(why.deleted, false)
    assert.equal(why.reason, 'anotherHolder')
    assert.equal((await b.get(name)).value?.toString(), 'usurper')
  })

  it('observes holder changes', async function () {
    const a = await pool.ready(t.url)
    const b = await pool.ready(t.url)
    const name = uniqueId('lease')
    const changes: string[] = []
    const watcher = lease(b, name)
    const observation = await watcher.observe((c) => changes.push(c.holder?.toString() ?? 'free'))
    const la = lease(a, name, { leaseMs: 200 })
    await la.tryAcquire()
    await la.release()
    await la.tryAcquire()
    await eventually(() => (changes.length >= 4 ? true : undefined), 'expiry', 3000)
    assert.deepEqual(changes, [a.clientId, 'free', a.clientId, 'free'], 'the last one is the expiry')
    await observation.close()
  })

  it('refuses a renewal period that is not shorter than the lease', async function () {
    const a = await pool.ready(t.url)
    assert.throws(() => new Lease(a, 'x', { leaseMs: 100, renewPeriodMs: 100 }), ArgumentError)
    assert.throws(() => new Lease(a, '', {}), ArgumentError)
    assert.throws(() => new Lease(a, 'x', { leaseMs: -1 }), ArgumentError)
  })
})

onEveryBroker('locks', (t) => {
  const pool = new ClientPool()
  afterEach(() => pool.closeAll())

  for (const followKey of [false, true]) {
    it(`lets exactly one of several racing clients hold the lock at a time, with ever greater tokens${followKey ? ' (followKey)' : ''}`, async function () {
      const name = uniqueId('lock')
      const clients = await Promise.all([0, 1, 2].map(() => pool.ready(t.url)))
      let holders = 0
      let maxHolders = 0
      const tokens: Hlc[] = []
      const rounds = 4
      await Promise.all(
        clients.map(async (c) => {
          const lock = new Lock(c, name, { leaseMs: 5000, followKey })
          for (let i = 0; i < rounds; i++) {
            const token = await lock.acquire({ timeoutMs: 10_000 })
            holders += 1
            maxHolders = Math.max(maxHolders, holders)
            tokens.push(token)
            assert.equal((await c.get(name)).value?.toString(), c.clientId)
            await new Promise((r) => setTimeout(r, 5))
            holders -= 1
            assert.equal(await lock.release(), true)
          }
        }),
      )
      assert.equal(maxHolders, 1)
      assert.equal(tokens.length, clients.length * rounds)
      for (let i = 1; i < tokens.length; i++)
        assert.ok(Hlc.compare(tokens[i]!, tokens[i - 1]!) > 0, `token ${i} is greater than the one before`)
    })
  }

  it('takes a free lock with one SET, and keeps its key watched across acquisitions instead of registering it anew', async function () {
    const verbs: string[] = []
    const c = await pool.ready(t.url, { metrics: { record: (verb) => verbs.push(verb) } })
    const name = uniqueId('lock')
    const first = new Lock(c, name, { holder: 'h:0', leaseMs: 5000, followKey: true })
    await first.acquire({ timeoutMs: 10_000 })
    assert.deepEqual(verbs, ['SET'], 'held on the answer to one SET')
    // The follow registers the key after the answer, and reads it once.
    await eventually(() => (verbs.includes('GET') ? true : undefined), 'the registration and its read', 5000)
    assert.deepEqual(verbs, ['SET', 'KEYNOTIFY', 'GET'])
    assert.equal(await first.release(), true)
    verbs.length = 0
    for (let i = 1; i <= 3; i++) {
      const lock = new Lock(c, name, { holder: `h:${i}`, leaseMs: 5000, followKey: true })
      await lock.acquire({ timeoutMs: 10_000 })
      assert.equal(await lock.release(), true)
    }
    assert.deepEqual(
      verbs,
      ['SET', 'VDEL', 'SET', 'VDEL', 'SET', 'VDEL'],
      'no KEYNOTIFY anew, no STOP between acquisitions',
    )
  })

  it('a waiter registers the key once; a later wait of the same client waits on that registration', async function () {
    const verbs: string[] = []
    const a = await pool.ready(t.url)
    const b = await pool.ready(t.url, { metrics: { record: (verb) => verbs.push(verb) } })
    const name = uniqueId('lock')
    for (let round = 0; round < 2; round++) {
      const holder = new Lock(a, name, { leaseMs: 10_000 })
      await holder.acquire({ timeoutMs: 5000 })
      const waiting = new Lock(b, name, { leaseMs: 5000 }).acquire({ timeoutMs: 10_000 })
      await eventually(
        () => (verbs.filter((v) => v === 'SET').length >= (round === 0 ? 2 : 3) ? true : undefined),
        'the waiter to try',
        5000,
      )
      assert.equal(await holder.release(), true)
      await waiting
      assert.equal(await b.vdel(name, b.clientId).then((r) => r.deleted), 1)
    }
    // Round 1: SET (refused), KEYNOTIFY, SET (refused), then the SET after the DELETE. Round 2: a refused SET, the SET after the DELETE.
    assert.equal(verbs.filter((v) => v === 'KEYNOTIFY').length, 1, verbs.join(' '))
    assert.ok(!verbs.includes('KEYNOTIFY STOP'), verbs.join(' '))
  })

  it('hands the lock to a waiter when the holder never releases and its lease expires', async function () {
    const a = await pool.ready(t.url)
    const b = await pool.ready(t.url)
    const name = uniqueId('lock')
    const crashed = new Lock(a, name, { leaseMs: 300 })
    const t1 = await crashed.acquire({ timeoutMs: 2000 })
    const waiter = new Lock(b, name, { leaseMs: 5000 })
    const t2 = await waiter.acquire({ timeoutMs: 5000 })
    assert.ok(Hlc.compare(t2, t1) > 0)
    assert.equal((await b.get(name)).value?.toString(), b.clientId)
    await waiter.release()
  })

  it('gives up with TimeoutError, or CancelledError on abort, while the lock is held', async function () {
    const a = await pool.ready(t.url)
    const b = await pool.ready(t.url)
    const name = uniqueId('lock')
    const holder = new Lock(a, name, { leaseMs: 10_000 })
    await holder.acquire()
    const waiter = new Lock(b, name)
    await assert.rejects(waiter.acquire({ timeoutMs: 200 }), TimeoutError)
    const controller = new AbortController()
    const pending = waiter.acquire({ signal: controller.signal })
    setTimeout(() => controller.abort(), 100)
    await assert.rejects(pending, CancelledError)
    const closing = waiter.acquire().then(
      () => null,
      (e: unknown) => e,
    )
    await new Promise((r) => setTimeout(r, 50))
    await b.close()
    assert.equal(((await closing) as Error | null)?.name, 'ConnectionError')
    await holder.release()
  })

  it('edits a key under the lock: concurrent increments are never lost', async function () {
    const clients = await Promise.all([0, 1, 2].map(() => pool.ready(t.url)))
    const name = uniqueId('lock')
    const counter = uniqueId('counter')
    const perClient = 5
    await Promise.all(
      clients.map(async (c) => {
        const lock = new Lock(c, name, { leaseMs: 5000 })
        for (let i = 0; i < perClient; i++) {
          const result = await lock.edit(counter, (current) => String(Number(current?.toString() ?? '0') + 1), {
            timeoutMs: 10_000,
          })
          assert.equal('applied' in result && result.applied, true)
        }
      }),
    )
    assert.equal((await clients[0]!.get(counter)).value?.toString(), String(clients.length * perClient))
    // null from the edit function deletes; the lock is released in every case.
    const lock = new Lock(clients[0]!, name)
    const removed = await lock.edit(counter, () => null)
    assert.equal('deleted' in removed && removed.deleted, 1)
    await assert.rejects(
      lock.edit(counter, () => {
        throw new Error('edit failed')
      }),
      /edit failed/,
    )
    assert.equal((await clients[0]!.get(name)).value, null, 'released after a failing edit')
  })

  it('updates a key under its lock: simultaneous updates of one client and one holder are never lost, each told what it replaced', async function () {
    const client = await pool.ready(t.url)
    const counter = uniqueId('counter')
    let sessions = 0
    const updates = await Promise.all(
      Array.from({ length: 12 }, () =>
        updateKey(client, counter, (current) => String(Number(current?.toString() ?? '0') + 1), {
          holdValue: () => `holder:${++sessions}`,
          leaseMs: 5000,
          timeoutMs: 15_000,
        }),
      ),
    )
    assert.equal((await client.get(counter)).value?.toString(), '12')
    const replaced = updates.map((u) => Number(u.previous?.toString() ?? '0')).sort((a, b) => a - b)
    assert.deepEqual(
      replaced,
      Array.from({ length: 12 }, (_, i) => i),
    )
    for (const u of updates) assert.equal(Number(u.value.toString()), Number(u.previous?.toString() ?? '0') + 1)
    assert.equal((await client.get(keyLockName(counter))).value, null, 'the lock is released')
  })

  it('writes an edit with the fencing token its function was told, though a renewal meanwhile minted a greater one', async function () {
    const c = await pool.ready(t.url)
    const lock = new Lock(c, uniqueId('lock'), { leaseMs: 3000, renewPeriodMs: 50 })
    const counter = uniqueId('counter')
    let written: Hlc | string | undefined
    const set = c.set.bind(c)
    // The lease's own renewals are SETs too (of the lock's key, unfenced): only the counter's counts.
    c.set = (key, value, options) => {
      if (String(key) === counter) written = options?.fencingToken
      return set(key, value, options)
    }
    let told: Hlc | undefined
    await lock.edit(counter, async (_current, { fencingToken }) => {
      told = fencingToken
      await new Promise((resolve) => lock.lease.once('renewed', resolve))
      return '1'
    })
    assert.ok(told && written, 'the edit wrote')
    assert.equal(String(written), told.toString(), 'the write carried the token the function was told')
  })
})

onEveryBroker('leader election', (t) => {
  const pool = new ClientPool()
  const closing = closedAfterEach(pool)
  const election = (c: StateStoreClient, position: string, termMs: number) =>
    closing(new LeaderElection(c, position, { termMs }))

  it('elects one leader, renews its term, and fails over when the leader stops renewing', async function () {
    const a = await pool.ready(t.url)
    const b = await pool.ready(t.url)
    const position = uniqueId('position')
    const ea = election(a, position, 1000)
    const eb = election(b, position, 1000)
    const seenByB: string[] = []
    eb.on('leader', ({ leader }) => seenByB.push(leader?.toString() ?? 'none'))
    const elected = new Promise<Hlc>((resolve) => ea.once('elected', ({ fencingToken }) => resolve(fencingToken)))

    const t1 = await ea.campaign({ timeoutMs: 2000 })
    assert.ok(t1.equals(await elected))
    assert.equal(ea.isLeader, true)
    assert.equal(await eb.tryCampaign(), false)
    assert.equal((await eb.leader())?.toString(), a.clientId)

    // B waits; A keeps renewing (term 1000 ms, renewal every 333 ms), so B stays a follower past a whole term.
    const campaign = eb.campaign({ timeoutMs: 10_000 })
    let bWon = false
    void campaign.then(
      () => (bWon = true),
      () => {},
    )
    await new Promise((r) => setTimeout(r, 1500))
    assert.equal(bWon, false, 'a renewing leader keeps its position')
    assert.equal(ea.isLeader, true)

    // A stops renewing (a hung process): its term lapses and B takes over.
    const lost = new Promise<string>((resolve) => ea.once('lost', ({ reason }) => resolve(reason)))
    await ea.close()
    assert.equal(await lost, 'closed')
    const t2 = await campaign
    assert.ok(Hlc.compare(t2, t1) > 0)
    assert.equal(eb.isLeader, true)
    assert.equal((await ea.leader())?.toString(), b.clientId)
    await eventually(() => (seenByB.at(-1) === b.clientId ? true : undefined), 'B to see itself lead', 3000)
    assert.ok(seenByB.includes(a.clientId))
  })

  it('stands for the position: campaigns again after losing a term, until stopped', async function () {
    const a = await pool.ready(t.url)
    const b = await pool.ready(t.url)
    const position = uniqueId('position')
    const ea = election(a, position, 600)
    let campaigns = 0
    const losses: string[] = []
    ea.on('lost', ({ reason }) => losses.push(reason))
    const stop = new AbortController()
    const standing = ea.stand({ signal: stop.signal, onCampaign: () => (campaigns += 1) })
    await eventually(() => (ea.isLeader ? true : undefined), 'A elected', 3000)
    assert.equal(campaigns, 1)

    // B takes the key over: A's next renewal is refused, the term is lost, and A campaigns again.
    await b.set(position, 'usurper')
    await eventually(() => (campaigns === 2 ? true : undefined), 'a second campaign', 3000)
    assert.equal(losses[0], 'anotherHolder')
    assert.equal(ea.isLeader, false)
    await b.del(position)
    await eventually(() => (ea.isLeader ? true : undefined), 'A elected again', 3000)

    // Stopping ends the candidacy and keeps the term; a resignation then is not followed by a campaign.
    stop.abort()
    await standing
    assert.equal(ea.isLeader, true)
    assert.equal(await ea.resign(), true)
    assert.equal(campaigns, 2)
  })

  it('ends a candidacy on resign and when the client closes', async function () {
    const a = await pool.ready(t.url)
    const b = await pool.ready(t.url)
    const position = uniqueId('position')
    const ea = election(a, position, 10_000)
    const eb = election(b, position, 10_000)
    const errors: Error[] = []
    const standingA = ea.stand({ signal: new AbortController().signal, onError: (e) => errors.push(e) })
    await eventually(() => (ea.isLeader ? true : undefined), 'A elected', 3000)
    const standingB = eb.stand({ signal: new AbortController().signal, onError: (e) => errors.push(e) })
    await ea.resign()
    await standingA
    await eventually(() => (eb.isLeader ? true : undefined), 'B elected after A resigned', 3000)
    await b.close()
    await standingB
    assert.deepEqual(errors, [])
  })

  it('hands over at once when the leader resigns', async function () {
    const a = await pool.ready(t.url)
    const b = await pool.ready(t.url)
    const position = uniqueId('position')
    const ea = election(a, position, 10_000)
    const eb = election(b, position, 10_000)
    await ea.campaign()
    const campaign = eb.campaign({ timeoutMs: 3000 })
    const lost = new Promise<string>((resolve) => ea.once('lost', ({ reason }) => resolve(reason)))
    assert.equal(await ea.resign(), true)
    assert.equal(await lost, 'resigned')
    assert.equal(ea.isLeader, false)
    await campaign
    assert.equal(eb.isLeader, true)
    assert.equal(await eb.resign(), true)
    assert.equal(await eb.leader(), null)
  })
})

describe('leader election: a failed campaign is tried again (emulator with a key quota)', function () {
  let emulator: Emulator
  const pool = new ClientPool()
  before(async () => {
    emulator = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, maxKeys: 1, logLevel: 'error' })
  })
  const closing = closedAfterEach(pool)
  after(() => emulator.stop())

  it('reports each failed campaign and is elected once the service accepts it', async function () {
    const a = await pool.ready(emulator.brokerUrl)
    await a.set('filler', 'the only key the quota allows')
    const ea = closing(new LeaderElection(a, uniqueId('position'), { termMs: 10_000 }))
    const errors: Error[] = []
    const stop = new AbortController()
    const standing = ea.stand({ signal: stop.signal, retryMs: 50, onError: (e) => errors.push(e) })
    await eventually(() => (errors.length >= 2 ? true : undefined), 'two failed campaigns', 5000)
    assert.match(errors[0]!.message, /quota/)
    assert.equal(ea.isLeader, false)
    await a.del('filler')
    await eventually(() => (ea.isLeader ? true : undefined), 'elected once the quota has room', 5000)
    stop.abort()
    await standing
  })
})

/**
 * The Lease over a stand-in client, request by request: a free lock costs its SET alone (the key's
 * watch is registered after, and kept for the next acquisition); the races of a followed key as the
 * requests see them (the machine's own steps are in test/unit/lease-state.test.ts).
 */
describe('leases: followKey over a stand-in client', function () {
  function standIn() {
    const calls: string[] = []
    let listener: ((n: KeyNotification) => void) | null = null
    let pendingSet: ((r: SetResult) => void) | null = null
    let failSet: ((err: Error) => void) | null = null
    let stored: string | null = null
    let wall = 1
    const client = {
      clientId: 'stand-in',
      canObserve: true,
      status: { state: 'connected' },
      on: () => client,
      off: () => client,
      observe: (_key: unknown, l: (n: KeyNotification) => void) => {
        calls.push('observe')
        listener = l
        return Promise.resolve({
          key: Buffer.from('k'),
          initial: null,
          close: () => (calls.push('close'), Promise.resolve()),
        })
      },
      get: () => {
        calls.push('get')
        return Promise.resolve({ value: stored === null ? null : Buffer.from(stored), version: null })
      },
      set: (_key: unknown, value: Buffer) => {
        calls.push('set')
        return new Promise<SetResult>((resolve, reject) => {
          pendingSet = (r) => {
            if (r.applied) stored = value.toString()
            resolve(r)
          }
          failSet = reject
        })
      },
      vdel: (_key: unknown, value: Buffer) => {
        calls.push(`vdel ${value.toString()}`)
        if (stored === value.toString()) stored = null
        return Promise.resolve({ deleted: 1, version: null })
      },
    }
    /** A notification at the version the last answer had (`at` 0), or after it. */
    const notify = (operation: 'SET' | 'DELETE', value: string | null, at = 0) =>
      listener!({
        key: Buffer.from('k'),
        operation,
        value: value === null ? null : Buffer.from(value),
        version: new Hlc(wall - 1 + at, 0, 'n'),
        reconciled: false,
      })
    const answer = () => pendingSet!({ applied: true, version: new Hlc(wall++, 0, 'n') })
    const fail = () => failSet!(new TimeoutError(1000, 'SET'))
    const sent = (n: number) =>
      eventually(() => (calls.filter((c) => c === 'set').length >= n ? true : undefined), `SET number ${n}`, 1000)
    const setStored = (value: string | null) => (stored = value)
    return { client: client as unknown as StateStoreClient, calls, notify, answer, fail, sent, setStored }
  }

  /** A hold of `mine:1` on `k`, taken and released: the key's watch stays registered for the next hold. */
  async function releasedEarlierHold({
    client,
    calls,
    sent,
    answer,
  }: Pick<ReturnType<typeof standIn>, 'client' | 'calls' | 'sent' | 'answer'>): Promise<void> {
    const first = new Lease(client, 'k', { holder: 'mine:1', leaseMs: 1000, followKey: true })
    const taking = first.tryAcquire()
    await sent(1)
    answer()
    await taking
    await eventually(() => (calls.includes('get') ? true : undefined), 'the registration', 1000)
    await first.release()
  }

  it('a free lock costs one SET; the watch is registered after the answer, read once, and kept for the next acquisition', async () => {
    const { client, calls, answer, sent } = standIn()
    const lease = new Lease(client, 'k', { holder: 'mine:1', leaseMs: 1000, followKey: true })
    const acquiring = lease.tryAcquire()
    await sent(1)
    assert.deepEqual(calls, ['set'], 'nothing registered before the SET')
    answer()
    assert.equal((await acquiring).acquired, true, 'held on the answer to its one request')
    await eventually(() => (calls.includes('get') ? true : undefined), 'the check after registering', 1000)
    assert.deepEqual(calls, ['set', 'observe', 'get'])
    assert.equal(await lease.release(), true)
    // The next hold of this name by this client: one SET, nothing registered anew, nothing unregistered.
    const next = new Lease(client, 'k', { holder: 'mine:2', leaseMs: 1000, followKey: true })
    const again = next.tryAcquire()
    await sent(2)
    answer()
    assert.equal((await again).acquired, true)
    assert.deepEqual(calls, ['set', 'observe', 'get', 'vdel mine:1', 'set'])
    await next.release()
  })

  it('the watch brings our own SET, then a DELETE by someone else: the hold ends there', async () => {
    const { client, calls, notify, answer, sent } = standIn()
    await releasedEarlierHold({ client, calls, sent, answer })
    const lease = new Lease(client, 'k', { holder: 'mine:2', leaseMs: 1000, followKey: true })
    const lost: Array<{ reason: string; deleted?: boolean }> = []
    lease.on('lost', (l) => lost.push(l))
    const acquiring = lease.tryAcquire()
    await sent(2)
    // Our own release of the first hold, heard late: older than this acquisition, it does not count.
    notify('DELETE', null)
    answer()
    assert.equal((await acquiring).acquired, true)
    notify('SET', 'mine:2')
    assert.equal(lost.length, 0, 'our own SET heard: armed')
    notify('DELETE', null, 1)
    assert.deepEqual(
      lost.map((l) => l.deleted),
      [true],
    )
    assert.equal(lease.fencingToken, null)
    await eventually(() => (calls.includes('vdel mine:2') ? true : undefined), 'the undo', 1000)
  })

  it('ends at the DELETE, then VDELs the value its late renewal wrote; renews no more', async () => {
    const { client, calls, notify, answer, sent } = standIn()
    const lease = new Lease(client, 'k', { holder: 'mine:1', leaseMs: 1000, followKey: true })
    const acquiring = lease.tryAcquire()
    await sent(1)
    answer()
    assert.equal((await acquiring).acquired, true)
    await eventually(() => (calls.includes('get') ? true : undefined), 'the check after registering', 1000)
    const lost: Array<{ reason: string; deleted?: boolean }> = []
    lease.on('lost', (l) => lost.push(l))
    const renewing = lease.renew()
    await sent(2)
    notify('DELETE', null, 1)
    assert.deepEqual(
      lost.map((l) => l.deleted),
      [true],
      'ended at the DELETE',
    )
    assert.equal(lease.fencingToken, null)
    assert.ok(!calls.some((c) => c.startsWith('vdel')), 'no VDEL while the renewal is on its way')
    answer()
    await renewing
    await eventually(() => (calls.some((c) => c.startsWith('vdel')) ? true : undefined), 'the VDEL', 1000)
    assert.deepEqual(calls, ['set', 'observe', 'get', 'set', 'vdel mine:1'])
    assert.equal(lease.fencingToken, null, 'the late renewal did not make it ours again')
  })

  it('the check finds the key deleted between our SET and the registration: lost, and our value is not written back', async () => {
    const { client, calls, answer, sent, setStored } = standIn()
    const lease = new Lease(client, 'k', { holder: 'mine:1', leaseMs: 1000, followKey: true })
    const lost = new Promise<{ reason: string; deleted?: boolean }>((resolve) => lease.once('lost', resolve))
    const acquiring = lease.tryAcquire()
    await sent(1)
    answer()
    // Deleted by someone else before the registration's read.
    setStored(null)
    assert.equal((await acquiring).acquired, true)
    assert.equal((await lost).deleted, true)
    assert.equal(lease.fencingToken, null)
    assert.ok(calls.includes('get'))
  })

  it('a DELETE heard while the acquiring SET is unanswered: not acquired, and its value is deleted', async () => {
    const { client, calls, notify, answer, sent } = standIn()
    // An earlier hold registered the watch, so this acquisition hears its own SET.
    await releasedEarlierHold({ client, calls, sent, answer })
    const lease = new Lease(client, 'k', { holder: 'mine:2', leaseMs: 1000, followKey: true })
    const acquiring = lease.tryAcquire()
    await sent(2)
    notify('SET', 'mine:2', 1)
    notify('DELETE', null, 2)
    answer()
    assert.deepEqual(await acquiring, { acquired: false, fencingToken: null })
    await eventually(() => (calls.includes('vdel mine:2') ? true : undefined), 'the VDEL', 1000)
    assert.deepEqual(calls, ['set', 'observe', 'get', 'vdel mine:1', 'set', 'vdel mine:2'])
  })

  it('an acquiring SET that fails leaves the lease idle and registers nothing; the next try takes it', async () => {
    const { client, calls, fail, answer, sent } = standIn()
    const lease = new Lease(client, 'k', { holder: 'mine:3', leaseMs: 1000, followKey: true })
    const acquiring = lease.tryAcquire()
    await sent(1)
    fail()
    await assert.rejects(acquiring, TimeoutError)
    assert.equal(lease.fencingToken, null)
    assert.deepEqual(calls, ['set'])
    const again = lease.tryAcquire()
    await sent(2)
    answer()
    assert.equal((await again).acquired, true)
  })
})

/**
 * Every key-value operation and option against the emulator, over mosquitto and over the
 * embedded broker: values and versions, NX/NEX, expiry, fencing, VDEL, persistence, and
 * notifications (order, expiry, several listeners, reference counting).
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Lock } from '../../../src/locks'
import { startEmulator } from '../../../src/emulator'
import { ServiceError } from '../../../src/diagnostics/errors'
import { Hlc } from '../../../src/hlc'
import { ClientPool, Inbox, uniqueId } from '../../support/clients'
import { until } from '../../support/wait'
import { onEveryBroker } from './support/topology'

onEveryBroker('key-value operations', (t) => {
  const pool = new ClientPool()
  afterEach(() => pool.closeAll())
  const key = () => uniqueId('key')

  it('sets, gets, deletes; versions increase and GET returns the SET version', async function () {
    const c = await pool.ready(t.url)
    const k = key()
    assert.deepEqual(await c.get(k), { value: null, version: null })
    const first = await c.set(k, 'one')
    assert.equal(first.applied, true)
    const got = await c.get(k)
    assert.equal(got.value?.toString(), 'one')
    assert.ok(got.version?.equals(first.version))
    const second = await c.set(k, Buffer.from([0, 13, 10, 255]))
    assert.ok(Hlc.compare(second.version, first.version) > 0)
    assert.deepEqual((await c.get(k)).value, Buffer.from([0, 13, 10, 255]))
    assert.equal((await c.del(k)).deleted, 1)
    assert.equal((await c.del(k)).deleted, 0)
    assert.deepEqual(await c.get(k), { value: null, version: null })
  })

  it('stores empty values and binary keys', async function () {
    const c = await pool.ready(t.url)
    const k = Buffer.concat([Buffer.from(uniqueId()), Buffer.from([0, 0xff, 0x0d, 0x0a])])
    await c.set(k, '')
    assert.deepEqual((await c.get(k)).value, Buffer.alloc(0))
  })

  it('NX applies only when the key is absent; NEX only when absent or equal', async function () {
    const c = await pool.ready(t.url)
    const k = key()
    assert.equal((await c.set(k, 'a', { condition: 'NX' })).applied, true)
    const refused = await c.set(k, 'b', { condition: 'NX' })
    assert.equal(refused.applied, false)
    assert.ok(refused.version instanceof Hlc, 'a refused SET still reports the stored version')
    assert.equal((await c.set(k, 'a', { condition: 'NEX' })).applied, true)
    assert.equal((await c.set(k, 'b', { condition: 'NEX' })).applied, false)
    assert.equal((await c.get(k)).value?.toString(), 'a')
    assert.equal((await c.set(k, 'b', { condition: 'always' })).applied, true)
    assert.equal((await c.get(k)).value?.toString(), 'b')
  })

  it('expires a key set with expiryMs', async function () {
    const c = await pool.ready(t.url)
    const k = key()
    await c.set(k, 'short', { expiryMs: 150 })
    await c.set(`${k}-kept`, 'long', { expiryMs: 60_000 })
    await until(async () => (await c.get(k)).value === null, 'the key to expire', 5000)
    assert.equal((await c.get(`${k}-kept`)).value?.toString(), 'long')
  })

  it('VDEL deletes only a matching value: 1, -1, 0', async function () {
    const c = await pool.ready(t.url)
    const k = key()
    await c.set(k, 'mine')
    assert.equal((await c.vdel(k, 'theirs')).deleted, -1)
    assert.equal((await c.get(k)).value?.toString(), 'mine')
    assert.equal((await c.vdel(k, 'mine')).deleted, 1)
    assert.equal((await c.vdel(k, 'mine')).deleted, 0)
  })

  it('fences writes: a stale token is refused once a newer one has written', async function () {
    const a = await pool.ready(t.url)
    const b = await pool.ready(t.url)
    const lockName = key()
    const guarded = key()
    const lockA = new Lock(a, lockName, { leaseMs: 5000 })
    const lockB = new Lock(b, lockName, { leaseMs: 5000 })
    const t1 = await lockA.acquire({ timeoutMs: 2000 })
    assert.equal((await a.set(guarded, 'from A', { fencingToken: t1 })).applied, true)
    await assert.rejects(
      a.set(guarded, 'no token'),
      (e: unknown) => e instanceof ServiceError && e.code === 'MissingFencingToken',
    )
    assert.equal(await lockA.release(), true)
    const t2 = await lockB.acquire({ timeoutMs: 2000 })
    assert.ok(Hlc.compare(t2, t1) > 0, 'the next holder gets a strictly greater token')
    assert.equal((await b.set(guarded, 'from B', { fencingToken: t2 })).applied, true)
    // A still has its old token (a paused process waking up): refused, for SET, DEL and VDEL.
    for (const stale of [
      a.set(guarded, 'late A', { fencingToken: t1 }),
      a.del(guarded, { fencingToken: t1.toString() }),
      a.vdel(guarded, 'from B', { fencingToken: t1 }),
    ]) {
      await assert.rejects(stale, (e: unknown) => e instanceof ServiceError && e.code === 'FencingTokenLowerVersion')
    }
    assert.equal((await a.get(guarded)).value?.toString(), 'from B')
    assert.equal((await b.del(guarded, { fencingToken: t2 })).deleted, 1)
    await lockB.release()
  })

  it('delivers notifications in order, to every listener of a key, including expiry', async function () {
    const watcher = await pool.ready(t.url)
    const writer = await pool.ready(t.url)
    const k = key()
    const first = new Inbox()
    const second = new Inbox()
    const o1 = await watcher.observe(k, first.listener)
    const o2 = await watcher.observe(k, second.listener)
    const writes = Array.from({ length: 40 }, (_, i) => writer.set(k, `v${i}`))
    const versions = (await Promise.all(writes)).map((r) => r.version)
    await writer.del(k)
    await writer.set(k, 'ephemeral', { expiryMs: 100 })
    const expected = [...versions.map((_, i) => `SET v${i}`), 'DELETE -', 'SET ephemeral', 'DELETE -']
    for (const inbox of [first, second]) {
      const got = await inbox.count(expected.length)
      assert.deepEqual(
        got.map((n) => `${n.operation} ${n.value?.toString() ?? '-'}`),
        expected,
      )
      assert.ok(got.every((n) => n.key.toString() === k && !n.reconciled))
      for (let i = 0; i < versions.length; i++)
        assert.ok(got[i]!.version?.equals(versions[i]!), `notification ${i} carries the SET version`)
      assert.ok(got[41]!.version instanceof Hlc, 'expiry DELETE carries a version')
    }
    await o1.close()
    // One listener left: still registered.
    await writer.set(k, 'after-one-left')
    await second.count(expected.length + 1)
    await o2.close()
    await o2.close()
    await writer.set(k, 'nobody-listens')
    await writer.set(k, 'sentinel')
    // Nothing more arrives for a key nobody observes: a fresh observer of another key proves the pipe is live.
    const probe = new Inbox()
    const k2 = key()
    const o3 = await watcher.observe(k2, probe.listener)
    await writer.set(k2, 'x')
    await probe.count(1)
    assert.equal(first.items.length, expected.length)
    assert.equal(second.items.length, expected.length + 1)
    await o3.close()
  })

  it('emits every notification on the client too, and observes a key that does not exist yet', async function () {
    const watcher = await pool.ready(t.url)
    const k = key()
    const all = new Inbox()
    watcher.on('notification', all.listener)
    const o = await watcher.observe(k, () => {})
    await watcher.set(k, 'born')
    const [n] = await all.count(1)
    assert.equal(n!.value?.toString(), 'born')
    await o.close()
  })
})

describe('persistence (emulator with a persistence file)', function () {
  const pool = new ClientPool()
  let dir: string
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'client-persist-'))
  })
  afterEach(() => pool.closeAll())
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('a SET with persist survives an emulator restart; one without does not', async function () {
    const file = join(dir, 'store.aof')
    const first = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, persistFile: file, logLevel: 'error' })
    try {
      const c = await pool.ready(first.brokerUrl)
      await c.set('durable', 'yes', { persist: true })
      await c.set('volatile', 'no')
      await pool.closeAll()
    } finally {
      await first.stop()
    }
    const second = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, persistFile: file, logLevel: 'error' })
    try {
      const c = await pool.ready(second.brokerUrl)
      assert.equal((await c.get('durable')).value?.toString(), 'yes')
      assert.equal((await c.get('volatile')).value, null)
      await pool.closeAll()
    } finally {
      await second.stop()
    }
  })
})

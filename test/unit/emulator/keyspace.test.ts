import assert from 'node:assert/strict'
import { Hlc, HybridLogicalClock } from '../../../src/hlc'
import { Keyspace, type KeyChange, type Timers } from '../../../src/emulator/core/keyspace'

/** A wall clock and a timer queue the test moves by hand. */
class FakeTime implements Timers {
  now = 1_700_000_000_000
  private next = 1
  readonly armed = new Map<number, { fn: () => void; at: number }>()

  set(fn: () => void, ms: number): unknown {
    const id = this.next++
    this.armed.set(id, { fn, at: this.now + ms })
    return id
  }

  clear(handle: unknown): void {
    this.armed.delete(handle as number)
  }

  /** Moves the clock to `to`, firing every timer due on the way, in order. */
  advanceTo(to: number): void {
    for (;;) {
      const due = [...this.armed.entries()].filter(([, t]) => t.at <= to).sort((a, b) => a[1].at - b[1].at)[0]
      if (!due) break
      this.armed.delete(due[0])
      this.now = Math.max(this.now, due[1].at)
      due[1].fn()
    }
    this.now = to
  }
}

function setup(options: { maxKeys?: number } = {}) {
  const time = new FakeTime()
  const clock = new HybridLogicalClock({ nodeId: 'svc', now: () => time.now })
  const changes: KeyChange[] = []
  const store = new Keyspace({ clock, now: () => time.now, timers: time, onChange: (c) => changes.push(c), ...options })
  return { time, clock, store, changes }
}

const b = (s: string) => Buffer.from(s)
const tok = (ms: number, counter = 0) => new Hlc(ms, counter, 'client')

describe('emulator keyspace (injected clock)', () => {
  it('expires a key exactly at its deadline: visible at deadline - 1 ms, gone at the deadline', () => {
    const { time, store, changes } = setup()
    const t0 = time.now
    assert.equal(store.set(b('k'), b('v'), { expiryMs: 100 }).kind, 'applied')
    time.now = t0 + 99
    assert.equal(store.get(b('k'))?.value.toString(), 'v')
    time.now = t0 + 100
    assert.equal(store.get(b('k')), null)
    const last = changes.at(-1)!
    assert.equal(last.kind, 'delete')
    assert.equal(last.kind === 'delete' && last.cause, 'expired')
  })

  it('arms one timer for the earliest deadline, whatever the number of keys, and expires keys in deadline order', () => {
    const { time, store, changes } = setup()
    const t0 = time.now
    for (let i = 0; i < 1000; i++) store.set(b(`k${i}`), b('v'), { expiryMs: 1000 + ((i * 7919) % 1000) })
    assert.equal(time.armed.size, 1, 'one timer')
    assert.equal([...time.armed.values()][0]!.at, t0 + 1000)
    time.advanceTo(t0 + 1500)
    const expired = changes.filter((c) => c.kind === 'delete')
    assert.equal(expired.length, 501)
    assert.equal(store.size, 499)
    assert.equal(time.armed.size, 1)
    time.advanceTo(t0 + 2000)
    assert.equal(store.size, 0)
    assert.equal(time.armed.size, 0, 'no timer when nothing can expire')
    const order = changes.filter((c) => c.kind === 'delete').map((c) => Number(c.key.toString().slice(1)))
    const deadlines = order.map((i) => (i * 7919) % 1000)
    assert.deepEqual(
      deadlines,
      [...deadlines].sort((x, y) => x - y),
    )
  })

  it("mints the reading a request's __ts gave the clock as the version of its write, once, and only while the clock has not moved", () => {
    const { time, clock, store, changes } = setup()
    const received = clock.update(new Hlc(time.now + 5000, 0, 'client'))
    assert.equal(received.toString(), new Hlc(time.now + 5000, 1, 'svc').toString())
    const set = store.set(b('k'), b('v'), { received })
    assert.ok(set.kind === 'applied' && set.version === received, 'the receive rule applied once: T:0 -> T:1')
    // The same reading is never the version of a second change.
    const again = store.set(b('k'), b('w'), { received })
    assert.ok(again.kind === 'applied' && Hlc.compare(again.version, received) > 0)
    // A reading the clock has moved past since (another change minted in between) is not used.
    const stale = clock.update(new Hlc(time.now + 6000, 0, 'client'))
    store.set(b('other'), b('v'))
    const del = store.del(b('k'), { received: stale })
    assert.ok(del.kind === 'deleted' && Hlc.compare(del.version, stale) > 0)
    const versions = changes.map((c) => (c.kind === 'set' ? c.record.version : c.version))
    for (let i = 1; i < versions.length; i++)
      assert.ok(Hlc.compare(versions[i]!, versions[i - 1]!) > 0, 'every change later than the one before')
  })

  it('a renewal moves the deadline; the old deadline expires nothing', () => {
    const { time, store, changes } = setup()
    const t0 = time.now
    store.set(b('lease'), b('me'), { expiryMs: 100 })
    time.advanceTo(t0 + 90)
    assert.equal(store.set(b('lease'), b('me'), { condition: 'NEX', expiryMs: 100 }).kind, 'applied')
    time.advanceTo(t0 + 150)
    assert.equal(store.get(b('lease'))?.value.toString(), 'me')
    assert.ok(!changes.some((c) => c.kind === 'delete'))
    time.advanceTo(t0 + 190)
    assert.equal(store.get(b('lease')), null)
    assert.equal(changes.filter((c) => c.kind === 'delete').length, 1)
  })

  it('a SET without PX makes the key permanent; DEL before the deadline leaves no pending expiry', () => {
    const { time, store, changes } = setup()
    const t0 = time.now
    store.set(b('a'), b('v'), { expiryMs: 50 })
    store.set(b('a'), b('w'))
    store.set(b('b'), b('v'), { expiryMs: 50 })
    store.del(b('b'))
    time.advanceTo(t0 + 1000)
    assert.equal(store.get(b('a'))?.value.toString(), 'w')
    assert.equal(changes.filter((c) => c.kind === 'delete').length, 1, 'only the DEL')
  })

  it('keeps the expiry index bounded under constant renewals', () => {
    const { store } = setup()
    for (let i = 0; i < 20_000; i++) store.set(b('hot'), b('v'), { expiryMs: 10_000 + i })
    const heap = (store as unknown as { expiry: { size: number } }).expiry
    assert.ok(heap.size <= 2 * store.size + 1024 + 1, `heap size ${heap.size}`)
  })

  it('mints strictly increasing versions even when the wall clock stands still or goes back', () => {
    const { time, store } = setup()
    let last: Hlc | null = null
    for (let i = 0; i < 50; i++) {
      if (i === 25) time.now -= 5000
      const r = store.set(b('k'), b(String(i)))
      assert.equal(r.kind, 'applied')
      if (last) assert.ok(Hlc.compare(r.version, last) > 0)
      last = r.version
      assert.equal(r.version.nodeId, 'svc')
    }
  })

  it('applies the fencing rules of the service', () => {
    const { store } = setup()
    assert.equal(store.set(b('f'), b('1'), { fencingToken: tok(100) }).kind, 'applied')
    assert.deepEqual(store.set(b('f'), b('2')), { kind: 'error', code: 'MissingFencingToken' })
    assert.deepEqual(store.set(b('f'), b('2'), { fencingToken: tok(99) }), {
      kind: 'error',
      code: 'FencingTokenLowerVersion',
    })
    assert.equal(store.set(b('f'), b('2'), { fencingToken: tok(100) }).kind, 'applied')
    assert.equal(store.set(b('f'), b('3'), { fencingToken: tok(100, 1) }).kind, 'applied')
    assert.equal(store.get(b('f'))!.fencingToken!.toString(), tok(100, 1).toString())
    assert.deepEqual(store.del(b('f'), { fencingToken: tok(100) }), { kind: 'error', code: 'FencingTokenLowerVersion' })
    assert.deepEqual(store.vdel(b('f'), b('3')), { kind: 'error', code: 'MissingFencingToken' })
    assert.equal(store.vdel(b('f'), b('x'), { fencingToken: tok(200) }).kind, 'mismatch')
    assert.equal(
      store.get(b('f'))!.fencingToken!.toString(),
      tok(100, 1).toString(),
      'a VDEL mismatch does not advance the token',
    )
    assert.equal(store.vdel(b('f'), b('3'), { fencingToken: tok(200) }).kind, 'deleted')
    assert.equal(store.set(b('f'), b('free')).kind, 'applied')
    assert.equal(store.get(b('f'))!.fencingToken, null)
  })

  it('enforces the key quota, counting keys past their deadline only until collected', () => {
    const { time, store } = setup({ maxKeys: 2 })
    store.set(b('a'), b('v'), { expiryMs: 10 })
    store.set(b('b'), b('v'))
    assert.deepEqual(store.set(b('c'), b('v')), {
      kind: 'error',
      code: 'QuotaExceeded',
      quota: { limit: 'maxKeys', max: 2, needed: 3 },
    })
    assert.equal(store.set(b('b'), b('again')).kind, 'applied')
    time.now += 10 // the timer has not fired yet
    assert.equal(store.set(b('c'), b('v')).kind, 'applied')
    assert.equal(store.size, 2)
  })

  it("stores its own copy of the value, not a view of the caller's buffer", () => {
    const { store } = setup()
    const big = Buffer.alloc(10_000, 1)
    const value = big.subarray(100, 200)
    store.set(b('k'), value)
    value.fill(9)
    const stored = store.get(b('k'))!.value
    assert.equal(stored.length, 100)
    assert.ok(stored.every((x) => x === 1))
    assert.notEqual(stored.buffer, big.buffer)
  })

  it('reloads records as they were, without new versions or change reports, and skips expired ones', () => {
    const { time, store, changes } = setup()
    const version = new Hlc(time.now - 1000, 3, 'old-node')
    store.load(b('kept'), { value: b('v'), version, fencingToken: tok(5), expiresAt: time.now + 100, persisted: true })
    store.load(b('late'), { value: b('v'), version, fencingToken: null, expiresAt: time.now, persisted: true })
    assert.equal(changes.length, 0)
    assert.equal(store.get(b('kept'))!.version, version)
    assert.equal(store.get(b('late')), null)
    assert.deepEqual(
      [...store.entries()].map(([k]) => k.toString()),
      ['kept'],
    )
    time.advanceTo(time.now + 100)
    assert.equal(store.size, 0)
    assert.equal(changes.length, 1, 'its expiry is reported like any other')
  })
})

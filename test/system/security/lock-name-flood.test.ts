import assert from 'node:assert/strict'
import { performance } from 'node:perf_hooks'
import { onTab, withNodeRed } from '../../support/node-red-fixture'
import { EventEmitter } from 'node:events'
import type { Lease } from '../../../src/locks'
import { ACTIVITY_BOUNDS, StoreActivity } from '../../../src/observe/activity'
import { Hlc } from '../../../src/hlc'
import { scaled } from '../../support/deadline'
import { debugValue } from '../../support/node-red-comms'

const ROUNDS = 3
const NAMES_PER_ROUND = 1500

/**
 * Lock names a msg chooses (msg.topic into a lock node) left one sidebar record each until the next
 * deploy, and every later lock event walked all of them: rounds of 5,000 names froze /settings for
 * tens of seconds. In a real runtime: thousands of distinct names, the registry stays within its
 * count and tells how many it dropped, and /settings answers throughout.
 */
describe('security: lock names from msgs cannot grow the sidebar registry', function () {
  this.timeout(600_000)
  const runtime = withNodeRed({ name: 'lockflood', flows, emulator: 'ownProcess' })

  /** The longest /settings answer, ms, while `work` runs (at least one request). */
  async function slowestSettings(work: Promise<unknown>): Promise<number> {
    let done = false
    void work.finally(() => (done = true))
    let slowest = 0
    do {
      const t0 = performance.now()
      const res = await fetch(`${runtime.red.url}/settings`)
      await res.arrayBuffer()
      assert.equal(res.status, 200)
      slowest = Math.max(slowest, performance.now() - t0)
    } while (!done)
    return slowest
  }

  async function registry(): Promise<{ locks: unknown[]; droppedLocks: number }> {
    const res = await fetch(`${runtime.red.url}/aio-statestore/stores`)
    assert.equal(res.status, 200)
    const body = (await res.json()) as { stores: Array<{ locks: unknown[]; droppedLocks: number }> }
    return body.stores[0]!
  }

  it(`${ROUNDS} rounds of ${NAMES_PER_ROUND} lock names keep the registry within its bound, /settings answering`, async () => {
    let quiet = 0
    for (let i = 0; i < 5; i++) quiet = Math.max(quiet, await slowestSettings(Promise.resolve()))
    for (let round = 0; round < ROUNDS; round++) {
      const seen = runtime.comms.debug.length
      const res = await fetch(`${runtime.red.url}/inject/go`, { method: 'POST' })
      assert.equal(res.status, 200)
      const finished = runtime.comms.waitFor(
        (all) => all.slice(seen).find((m) => m.id === 'round'),
        300_000,
        `round ${round} to finish`,
      )
      const slowest = await slowestSettings(finished)
      assert.equal(debugValue(await finished), NAMES_PER_ROUND, 'every msg came through')
      // The unbounded registry froze /settings for tens of seconds; a busy machine alone stretches a
      // runtime that serves 1,500 lock msgs by its time scale, so the bound is a second scaled.
      const bound = Math.max(2 * quiet, quiet + scaled(1000))
      assert.ok(
        slowest <= bound,
        `round ${round}: /settings took ${slowest.toFixed(0)} ms at most (quiet ${quiet.toFixed(0)} ms, bound ${bound.toFixed(0)} ms)`,
      )
      const r = await registry()
      assert.ok(r.locks.length <= ACTIVITY_BOUNDS.maxLocks, `round ${round}: ${r.locks.length} lock entries kept`)
    }
    const r = await registry()
    assert.equal(
      r.locks.length + r.droppedLocks,
      ROUNDS * NAMES_PER_ROUND,
      'what is kept and what was dropped add up to every name',
    )
    assert.ok(r.droppedLocks > 0, 'the dropped figure is told')
  })
})

describe('security: the lock registry drops by count and by age, the oldest first', () => {
  const lease = () => new EventEmitter() as unknown as Lease
  const emit = (l: Lease, e: string, arg?: unknown) => (l as unknown as EventEmitter).emit(e, arg)

  it('past its count the entry changed longest ago goes, and a change keeps an entry young', () => {
    let now = 0
    const a = new StoreActivity(() => now, { maxLocks: 3, maxLockAgeMs: 60_000 })
    const first = lease()
    a.trackLease('n', 'first', 'lock', 'me', 5000, first)
    for (const name of ['b', 'c']) a.trackLease('n', name, 'lock', 'me', 5000, lease())
    now += 1
    emit(first, 'acquired', { fencingToken: new Hlc(1, 0, 'svc') })
    a.trackLease('n', 'd', 'lock', 'me', 5000, lease())
    assert.deepEqual([...a.locks.values()].map((r) => r.name).sort(), ['c', 'd', 'first'])
    assert.equal(a.droppedLocks, 1)
    // A dropped name costs nothing more: its lease is no longer followed.
    a.storeHolder('b', Buffer.from('other'))
    assert.equal(a.locks.has('n/b'), false)
  })

  it('an entry not held and unchanged past the age goes at the next event; a held one stays', () => {
    let now = 0
    const a = new StoreActivity(() => now, { maxLocks: 100, maxLockAgeMs: 60_000 })
    const held = lease()
    a.trackLease('n', 'held', 'lock', 'me', 5000, held)
    emit(held, 'acquired', { fencingToken: new Hlc(1, 0, 'svc') })
    a.trackLease('n', 'idle', 'lock', 'me', 5000, lease())
    now += 61_000
    a.trackLease('n', 'new', 'lock', 'me', 5000, lease())
    assert.deepEqual([...a.locks.values()].map((r) => r.name).sort(), ['held', 'new'])
    assert.equal(a.droppedLocks, 1)
  })
})

function flows(broker: string): unknown[] {
  return [
    { id: 'tab', type: 'tab', label: 'lock flood' },
    { id: 'cfg', type: 'ss-config', name: 'store', broker, clientId: 'lockflood-red' },
    ...[
      {
        id: 'go',
        type: 'inject',
        props: [{ p: 'payload', v: String(NAMES_PER_ROUND), vt: 'num' }],
        wires: [['names']],
      },
      {
        id: 'names',
        type: 'function',
        outputs: 1,
        // 50 names every 10 ms: the registry's cost, not one burst's, is what the rounds measure.
        func: `const round = context.get('round') || 0\ncontext.set('round', round + 1)\nlet i = 0\nconst more = () => {\n  for (let k = 0; k < 50 && i < msg.payload; k++, i++) node.send({ topic: 'flood/' + round + '/' + i })\n  if (i < msg.payload) setTimeout(more, 10)\n}\nmore()\nreturn null`,
        wires: [['take']],
      },
      {
        id: 'take',
        type: 'ss-lock',
        store: 'cfg',
        key: 'topic',
        keyType: 'msg',
        mode: 'lock',
        action: 'acquire',
        holder: '',
        timeout: '600000',
        wires: [['free'], ['count']],
      },
      {
        id: 'free',
        type: 'ss-lock',
        store: 'cfg',
        key: '',
        keyType: 'str',
        mode: 'lease',
        action: 'release',
        holder: '',
        wires: [['count'], ['count']],
      },
      {
        id: 'count',
        type: 'function',
        outputs: 1,
        func: `const n = (context.get('n') || 0) + 1\ncontext.set('n', n % ${NAMES_PER_ROUND})\nreturn n === ${NAMES_PER_ROUND} ? { payload: n } : null`,
        wires: [['round']],
      },
      { id: 'catcher', type: 'catch', scope: null, uncaught: false, wires: [['count']] },
      { id: 'round', type: 'debug', active: true, tosidebar: true, complete: 'payload', wires: [] },
    ].map(onTab),
  ]
}

/**
 * A fair hand-off beside the SDKs: two of our Lock.edit loops against two contenders that retry the
 * moment they hear the DELETE (the Go SDK's leasedlock algorithm, written here: KEYNOTIFY first, then
 * SET NEX; on refusal wait for a DELETE notification and try again at once, no backoff). Our waiter
 * used to sleep a random 0-250 ms after the DELETE and made 2-3 % of the increments.
 */
import assert from 'node:assert/strict'
import type { StateStoreClient } from '../../../src/client'
import { Lock } from '../../../src/locks'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { ClientPool, uniqueId } from '../../support/clients'

const TOTAL = 800
/**
 * Between two edits a loop pauses this long, as a flow's msgs do not come back to back: the lock is
 * then won by the waiters' race on the DELETE, not by the releaser asking again before it heard one.
 */
const THINK_MS = 1
const think = () => new Promise((r) => setTimeout(r, THINK_MS))
const LEASE_MS = 5000

/**
 * One Go-SDK-style Edit loop (leasedlock's Lock, then Edit's read and fenced write, then Unlock) until
 * the counter reaches TOTAL. Lock registers KEYNOTIFY before its first try and stops it on exit; a
 * refused try waits for a DELETE notification and tries again at once, with no backoff.
 */
async function goStyleLoop(c: StateStoreClient, lockName: string, key: string): Promise<number> {
  let made = 0
  for (;;) {
    let freed: (() => void) | null = null
    const observation = await c.observe(lockName, (n) => n.operation === 'DELETE' && freed?.())
    let token
    try {
      for (;;) {
        const wake = new Promise<void>((resolve) => (freed = resolve))
        const { applied, version } = await c.set(lockName, c.clientId, { condition: 'NEX', expiryMs: LEASE_MS })
        if (applied) {
          token = version
          break
        }
        await wake
      }
    } finally {
      await observation.close()
    }
    const { value } = await c.get(key)
    const current = Number(value?.toString() ?? '0')
    if (current < TOTAL) {
      await c.set(key, String(current + 1), { fencingToken: token })
      made += 1
    }
    await c.vdel(lockName, c.clientId)
    if (current + 1 >= TOTAL) return made
    await think()
  }
}

/** One of ours: Lock.edit +1 until the counter reaches TOTAL. */
async function ourLoop(c: StateStoreClient, lockName: string, key: string): Promise<number> {
  const lock = new Lock(c, lockName, { leaseMs: LEASE_MS })
  let made = 0
  for (;;) {
    let reached = false
    await lock.edit(
      key,
      (value) => {
        const current = Number(value?.toString() ?? '0')
        reached = current >= TOTAL
        if (reached) return value
        made += 1
        return String(current + 1)
      },
      { timeoutMs: 20_000 },
    )
    if (reached) return made
    await think()
  }
}

describe('locks: a fair hand-off beside Go-SDK-style contenders', function () {
  this.timeout(60_000)
  let emulator: Emulator
  const pool = new ClientPool()
  before(async () => {
    emulator = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, logLevel: 'error' })
  })
  after(async () => {
    await pool.closeAll()
    await emulator.stop()
  })

  it(`two Lock.edit loops and two contenders that retry at once share ${TOTAL} increments: ours make at least a third, the counter is exact`, async () => {
    const lockName = uniqueId('fair-lock')
    const key = uniqueId('fair-counter')
    const clients = await Promise.all([0, 1, 2, 3].map(() => pool.ready(emulator.brokerUrl)))
    const started = performance.now()
    const [ours1, ours2, go1, go2] = await Promise.all([
      ourLoop(clients[0]!, lockName, key),
      ourLoop(clients[1]!, lockName, key),
      goStyleLoop(clients[2]!, lockName, key),
      goStyleLoop(clients[3]!, lockName, key),
    ])
    const ms = Math.round(performance.now() - started)
    const ours = ours1 + ours2
    const total = ours + go1 + go2
    console.log(`      ours ${ours1} + ${ours2}, Go-style ${go1} + ${go2} of ${total} increments in ${ms} ms`)
    assert.equal(Number((await clients[0]!.get(key)).value?.toString()), total, 'every increment counted, none lost')
    assert.equal(total, TOTAL)
    assert.ok(ours >= total / 3, `ours made ${ours} of ${total}`)
  })
})

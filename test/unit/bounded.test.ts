import assert from 'node:assert/strict'
import { settleEach } from '../../src/lang/bounded'

describe('settleEach: work on many items with a bound in flight', function () {
  it('never runs more than the bound at once, starts the next as one settles, and keeps every outcome in order', async () => {
    const gates = new Map<number, { resolve(): void; reject(e: Error): void }>()
    let running = 0
    let most = 0
    const done = settleEach([0, 1, 2, 3, 4, 5], 2, (i) => {
      running++
      most = Math.max(most, running)
      return new Promise<number>((resolve, reject) => {
        gates.set(i, {
          resolve: () => (running--, resolve(i * 10)),
          reject: (e) => (running--, reject(e)),
        })
      })
    })
    const settle = async (i: number, fail = false) => {
      await new Promise((r) => setImmediate(r))
      assert.ok(gates.has(i), `item ${i} has started`)
      if (fail) gates.get(i)!.reject(new Error(`no ${i}`))
      else gates.get(i)!.resolve()
    }
    await new Promise((r) => setImmediate(r))
    assert.deepEqual([...gates.keys()], [0, 1], 'two start, no more')
    await settle(1, true)
    await new Promise((r) => setImmediate(r))
    assert.deepEqual([...gates.keys()], [0, 1, 2], 'a failure frees its place too')
    for (const i of [0, 2, 3, 4, 5]) await settle(i)
    const outcomes = await done
    assert.equal(most, 2)
    assert.deepEqual(
      outcomes.map((o) => (o.ok ? o.value : (o.error as Error).message)),
      [0, 'no 1', 20, 30, 40, 50],
    )
  })

  it('settles at once with nothing to do', async () => {
    assert.deepEqual(await settleEach([], 4, () => Promise.resolve(1)), [])
  })
})

import assert from 'node:assert/strict'
import { settleEach, settleStream } from '../../src/lang/bounded'

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

describe('settleStream: work on a stream of items within a bound of count and weight', function () {
  it('reads the next item only when it may start, never runs more than the count or the weight, and hears every outcome', async () => {
    const gates = new Map<number, () => void>()
    let read = 0
    let running = 0
    let most = 0
    let heaviest = 0
    let load = 0
    async function* items() {
      for (let i = 0; i < 8; i++) {
        read = i + 1
        yield i
      }
    }
    const weight = (i: number) => (i === 5 ? 100 : 3)
    const outcomes: Array<[number, boolean]> = []
    const done = settleStream(
      items(),
      { count: 3, maxWeight: 7, weight },
      (i) => {
        running++
        load += weight(i)
        most = Math.max(most, running)
        heaviest = Math.max(heaviest, load)
        return new Promise<number>((resolve, reject) =>
          gates.set(i, () => {
            running--
            load -= weight(i)
            if (i === 2) reject(new Error('no 2'))
            else resolve(i)
          }),
        )
      },
      (i, o) => outcomes.push([i, o.ok]),
    )
    const tick = () => new Promise((r) => setImmediate(r))
    await tick()
    assert.deepEqual([...gates.keys()], [0, 1], 'two of weight 3 fit in 7, a third would not')
    assert.ok(read <= 3, `read ${read} items, no further ahead than the work`)
    for (let i = 0; i < 8; i++) {
      await tick()
      gates.get(i)!()
      await tick()
    }
    await done
    assert.equal(most <= 3, true)
    assert.deepEqual(outcomes.map(([i]) => i).sort(), [0, 1, 2, 3, 4, 5, 6, 7])
    assert.deepEqual(
      outcomes.filter(([, ok]) => !ok).map(([i]) => i),
      [2],
      'a failure is one outcome',
    )
    assert.ok(heaviest <= 100, 'the item heavier than the bound ran alone')
  })

  it('rejects with the stream error after the started work has settled', async () => {
    let finished = 0
    async function* items() {
      yield 1
      throw new Error('read failed')
    }
    await assert.rejects(
      settleStream(
        items(),
        { count: 4 },
        () => new Promise<void>((r) => setTimeout(() => (finished++, r()), 5)),
        () => {},
      ),
      /read failed/,
    )
    assert.equal(finished, 1)
  })
})

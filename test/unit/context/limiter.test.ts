import assert from 'node:assert/strict'
import { Limiter } from '../../../src/context/limiter'

describe('context store: the limiter', () => {
  it('runs at most max at once and the rest in the order they came, across thousands waiting (the queue compacts as it drains)', async () => {
    const limiter = new Limiter(3)
    const started: number[] = []
    let active = 0
    let peak = 0
    const gates: Array<() => void> = []
    const runs = Array.from({ length: 5000 }, (_, i) =>
      limiter.run(async () => {
        started.push(i)
        active += 1
        peak = Math.max(peak, active)
        await new Promise<void>((resolve) => gates.push(resolve))
        active -= 1
        return i
      }),
    )
    // release the runs one at a time, newest gate first, while more keep arriving behind them
    const late = limiter.run(async () => 'late')
    while (started.length < 5000 || gates.length > 0) {
      await new Promise((resolve) => setImmediate(resolve))
      gates.pop()?.()
    }
    assert.deepEqual(
      await Promise.all(runs),
      Array.from({ length: 5000 }, (_, i) => i),
    )
    assert.equal(await late, 'late')
    assert.deepEqual(
      started,
      Array.from({ length: 5000 }, (_, i) => i),
      'started in the order they came',
    )
    assert.equal(peak, 3)
  })

  it('a run that throws frees its slot, and an expired wait throws without running', async () => {
    const limiter = new Limiter(1)
    let release!: () => void
    const first = limiter.run(() => new Promise<void>((resolve) => (release = resolve)))
    const failing = limiter.run(async () => {
      throw new Error('boom')
    })
    const expired = limiter.run(
      async () => 'ran',
      () => new Error('too late'),
    )
    const after = limiter.run(async () => 'after')
    release()
    await first
    await assert.rejects(failing, /boom/)
    await assert.rejects(expired, /too late/)
    assert.equal(await after, 'after')
  })
})

/**
 * The suite's time scale (test/support/deadline.ts): one factor for every limit, from TEST_TIME_SCALE
 * and the machine's measured pace, and mocha's timeouts read through it (mocha-time-scale.ts).
 */
import assert from 'node:assert/strict'
import { describeLimit, factorOf, requestedScale, scaled, timeScale } from '../support/deadline'

describe('the time scale every limit in the suite is stretched by', () => {
  it('multiplies the request by the speed and by the worse of contention and load, never below the request, at most 50', () => {
    const quiet = { requested: 1, speed: 1, contention: 1, loadPerCore: 0.3 }
    assert.equal(factorOf(quiet), 1)
    assert.equal(factorOf({ ...quiet, contention: 4.5 }), 4.5, 'a quarter of a core: 4.5 times as long')
    assert.equal(factorOf({ ...quiet, contention: 2, loadPerCore: 6 }), 6, 'the load average, when it says worse')
    assert.equal(factorOf({ ...quiet, requested: 2, speed: 1.5, contention: 3 }), 9)
    assert.equal(factorOf({ ...quiet, requested: 3, loadPerCore: 40 }), 50)
  })

  it('reads TEST_TIME_SCALE as a positive number, 1 when unset, and refuses anything else by name', () => {
    assert.equal(requestedScale(undefined), 1)
    assert.equal(requestedScale(''), 1)
    assert.equal(requestedScale('2.5'), 2.5)
    for (const bad of ['0', '-1', 'fast', 'NaN'])
      assert.throws(() => requestedScale(bad), /TEST_TIME_SCALE must be a positive number/)
  })

  it('stretches a limit by the factor now, keeps 0 (no limit) and stays within what a timer can wait', () => {
    const { factor } = timeScale()
    assert.ok(factor >= Math.min(1, requestedScale()) && factor <= 50, `factor ${factor}`)
    assert.equal(scaled(0), 0)
    // The factor can only rise between two readings (a load average seen higher).
    const before = timeScale().factor
    const limit = scaled(1000)
    assert.ok(
      limit >= Math.round(1000 * before) && limit <= Math.round(1000 * timeScale().factor),
      `${limit} for a factor ${before}`,
    )
    assert.equal(scaled(Number.MAX_SAFE_INTEGER), 2 ** 31 - 1)
    assert.equal(describeLimit(8000, 8000), '8000 ms')
    assert.equal(describeLimit(8000, 19200), '19200 ms (8000 ms × 2.40)')
  })

  describe("mocha's timeouts", function () {
    this.timeout(3000)
    it('are read stretched and kept as written', function () {
      // The factor can only rise between two readings.
      const readStretched = (ms: number) => {
        const before = timeScale().factor
        const read = this.timeout()
        assert.ok(
          read >= Math.round(ms * before) && read <= Math.round(ms * timeScale().factor),
          `${read} read for ${ms} ms at a factor ${before}`,
        )
      }
      readStretched(3000)
      this.timeout(1234)
      readStretched(1234)
      assert.equal((this.test as unknown as { _timeout: number })._timeout, 1234, 'kept as written')
    })
  })
})

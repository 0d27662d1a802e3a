import assert from 'node:assert/strict'
import { NotificationLag } from '../../src/observe/notification-lag'

describe('NotificationLag: how far behind notifications arrive', function () {
  it("cancels a constant offset between the service's clock and ours, and counts only the time queued", function () {
    let now = 1_000_000
    const lag = new NotificationLag(() => now)
    // The service's clock is 40 s behind ours, the network takes 2 ms: no backlog.
    const offset = 40_000
    for (let i = 0; i < 5; i++) {
      now += 100
      assert.equal(lag.sample(now - offset - 2), 0)
    }
    // A change made 1,500 ms ago (by the service's clock) arrives now: 1,500 ms behind, less nothing.
    now += 100
    assert.equal(lag.sample(now - offset - 2 - 1500), 1500)
    assert.deepEqual(lag.figures(), { behindMs: 1500, maxBehindMs: 1500 })
    // Caught up: the newest is on time, the minute's most stays.
    now += 100
    assert.equal(lag.sample(now - offset - 2), 0)
    assert.deepEqual(lag.figures(), { behindMs: 0, maxBehindMs: 1500 })
  })

  it('forgets the largest after a minute and a floor after ten minutes (a clock stepped by NTP)', function () {
    let now = 5_000_000
    const lag = new NotificationLag(() => now)
    assert.deepEqual(lag.figures(), { behindMs: null, maxBehindMs: null })
    lag.sample(now - 10)
    now += 50
    lag.sample(now - 10 - 3000)
    now += 61_000
    lag.sample(now - 10)
    assert.equal(lag.figures().maxBehindMs, 0, 'the 3 s of a minute ago is gone')
    // The service's clock is stepped back by 2 s: every delay is 2 s longer from now on.
    for (let t = 0; t < 11 * 60; t += 5) {
      now += 5000
      lag.sample(now - 10 - 2000)
    }
    assert.equal(lag.sample(now - 10 - 2000), 0, 'after ten minutes the new offset is the floor')
  })
})

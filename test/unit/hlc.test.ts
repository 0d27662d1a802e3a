import assert from 'node:assert/strict'
import {
  DEFAULT_MAX_CLOCK_DRIFT_MS,
  Hlc,
  HlcError,
  HybridLogicalClock,
  MAX_HLC_COUNTER,
  type HlcErrorReason,
} from '../../src/hlc'

const T = 1_750_000_000_000

/** A wall clock the test moves by hand. */
class Wall {
  constructor(public ms: number) {}
  readonly now = (): number => this.ms
}

function hlcError(fn: () => unknown, reason: HlcErrorReason, message?: RegExp): HlcError {
  let thrown: unknown
  try {
    fn()
  } catch (err) {
    thrown = err
  }
  assert.ok(thrown instanceof HlcError, `expected an HlcError, got ${String(thrown)}`)
  assert.equal(thrown.reason, reason, thrown.message)
  assert.equal(thrown.name, 'HlcError')
  if (message) assert.match(thrown.message, message)
  return thrown
}

/** A clock at (ts, counter), reached through the public API. */
function clockAt(wall: Wall, ts: number, counter: number, maxDriftMs?: number): HybridLogicalClock {
  const saved = wall.ms
  wall.ms = ts
  const clock = new HybridLogicalClock({ nodeId: 'me', maxDriftMs, now: wall.now })
  if (counter > 0) clock.update(new Hlc(ts, counter - 1, 'seed'))
  wall.ms = saved
  assert.ok(clock.current.equals(new Hlc(ts, counter, 'me')))
  return clock
}

describe('HLC: format and parse', () => {
  it('formats %015d:%05d:<nodeId>, the widths being minimums', () => {
    assert.equal(new Hlc(0, 0, 'n').toString(), '000000000000000:00000:n')
    assert.equal(new Hlc(T, 7, 'node').toString(), '001750000000000:00007:node')
    assert.equal(new Hlc(1234567890123456, 123456, 'n').toString(), '1234567890123456:123456:n')
    assert.equal(JSON.stringify({ v: new Hlc(1, 2, 'x') }), '{"v":"000000000000001:00002:x"}')
  })

  it('parses what it formats, and unpadded or over-padded fields', () => {
    const h = Hlc.parse('001750000000000:00007:5f0c-uuid')
    assert.deepStrictEqual([h.timestamp, h.counter, h.nodeId], [T, 7, '5f0c-uuid'])
    assert.ok(Hlc.parse('1:2:n').equals(new Hlc(1, 2, 'n')))
    assert.ok(Hlc.parse('0000000000000000001:0000002:n').equals(new Hlc(1, 2, 'n')))
    assert.equal(Hlc.parse(`${Number.MAX_SAFE_INTEGER}:${MAX_HLC_COUNTER}:n`).counter, MAX_HLC_COUNTER)
    assert.equal(Hlc.parse('1:2:StateStore').nodeId, 'StateStore')
    assert.equal(Hlc.parse('1:2: spaced node ').nodeId, ' spaced node ')
  })

  it('refuses anything but exactly three fields', () => {
    hlcError(() => Hlc.parse(''), 'malformed', /must have three fields separated by ":", it has 1/)
    hlcError(() => Hlc.parse('NotValid'), 'malformed', /it has 1/)
    hlcError(() => Hlc.parse('1:2'), 'malformed', /it has 2/)
    hlcError(() => Hlc.parse('1:2:node:extra'), 'malformed', /it has 4/)
    hlcError(() => Hlc.parse('1:2:a:b:c'), 'malformed', /it has 5/)
  })

  it('refuses a time or counter that is not decimal digits, or beyond exact integers', () => {
    for (const text of ['-1:0:n', '+1:0:n', '1.5:0:n', '1e3:0:n', ' 1:0:n', '1 :0:n', ':0:n', '0x10:0:n', '１:0:n']) {
      hlcError(() => Hlc.parse(text), 'malformed', /the timestamp must be decimal digits/)
    }
    for (const text of ['1:-1:n', '1:+1:n', '1:1.0:n', '1::n', '1:abc:n']) {
      hlcError(() => Hlc.parse(text), 'malformed', /the counter must be decimal digits/)
    }
    hlcError(() => Hlc.parse('9007199254740992:0:n'), 'malformed', /the timestamp is too large/)
    hlcError(() => Hlc.parse('1:18446744073709551615:n'), 'malformed', /the counter is too large/)
  })

  it('refuses an empty node id (as .NET does; Go and Rust would accept it)', () => {
    hlcError(() => Hlc.parse('000000000000001:00000:'), 'malformed', /empty node id/)
  })
})

describe('HLC: compare', () => {
  it('orders by time, then counter, then node id (ordinal), and equals on all three', () => {
    const sorted = [
      new Hlc(1, 0, 'b'),
      new Hlc(1, 1, 'a'),
      new Hlc(1, 1, 'b'),
      new Hlc(2, 0, 'A'),
      new Hlc(2, 0, 'B'),
      new Hlc(2, 0, 'a'),
      new Hlc(2, 0, 'aa'),
      new Hlc(10, 0, 'a'),
    ]
    for (let i = 0; i < sorted.length; i++) {
      for (let j = 0; j < sorted.length; j++) {
        assert.equal(Math.sign(Hlc.compare(sorted[i]!, sorted[j]!)), Math.sign(i - j), `${sorted[i]} vs ${sorted[j]}`)
        assert.equal(sorted[i]!.equals(sorted[j]!), i === j)
      }
    }
    assert.equal(Hlc.compare(new Hlc(5, 3, 'n'), new Hlc(5, 3, 'n')), 0)
  })

  it('isZero is the epoch reading, whatever the node', () => {
    assert.ok(Hlc.parse('000000000000000:00000:x').isZero())
    assert.ok(!new Hlc(0, 1, 'x').isZero())
    assert.ok(!new Hlc(1, 0, 'x').isZero())
  })
})

describe('HybridLogicalClock', () => {
  it('starts at the wall clock truncated to milliseconds, counter 0, with a UUID node id by default', () => {
    const clock = new HybridLogicalClock({ now: () => T + 0.999 })
    assert.equal(clock.current.timestamp, T)
    assert.equal(clock.current.counter, 0)
    assert.match(clock.nodeId, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    assert.equal(clock.current.nodeId, clock.nodeId)
    assert.equal(clock.maxDriftMs, DEFAULT_MAX_CLOCK_DRIFT_MS)
    assert.equal(DEFAULT_MAX_CLOCK_DRIFT_MS, 60_000)
    assert.notEqual(new HybridLogicalClock().nodeId, new HybridLogicalClock().nodeId)
  })

  it('refuses a node id that is empty or contains ":"', () => {
    hlcError(() => new HybridLogicalClock({ nodeId: '' }), 'malformed')
    hlcError(() => new HybridLogicalClock({ nodeId: 'a:b' }), 'malformed')
  })

  it('tick: a later wall clock resets the counter, the same or an earlier one increments it', () => {
    const wall = new Wall(T)
    const clock = new HybridLogicalClock({ nodeId: 'me', now: wall.now })
    assert.deepStrictEqual(clock.tick(), new Hlc(T, 1, 'me'))
    assert.deepStrictEqual(clock.tick(), new Hlc(T, 2, 'me'))
    wall.ms = T + 5.7
    assert.deepStrictEqual(clock.tick(), new Hlc(T + 5, 0, 'me'))
    wall.ms = T - 1000
    assert.deepStrictEqual(clock.tick(), new Hlc(T + 5, 1, 'me'))
    assert.deepStrictEqual(clock.current, new Hlc(T + 5, 1, 'me'))
  })

  describe('update (spec 3.5), one case per step', () => {
    it('1. a reading from this node changes nothing, however far ahead', () => {
      const wall = new Wall(T)
      const clock = clockAt(wall, T, 3)
      assert.deepStrictEqual(clock.update(new Hlc(T + 10 * 3_600_000, 99, 'me')), new Hlc(T, 3, 'me'))
      assert.deepStrictEqual(clock.current, new Hlc(T, 3, 'me'))
    })

    it('2. the wall clock ahead of both: wall time, counter 0', () => {
      const wall = new Wall(T)
      const clock = clockAt(wall, T - 100, 7)
      assert.deepStrictEqual(clock.update(new Hlc(T - 50, 9, 'other')), new Hlc(T, 0, 'me'))
    })

    it('3. equal times: the larger counter plus one', () => {
      const wall = new Wall(T)
      const clock = clockAt(wall, T, 4)
      assert.deepStrictEqual(clock.update(new Hlc(T, 9, 'other')), new Hlc(T, 10, 'me'))
      assert.deepStrictEqual(clock.update(new Hlc(T, 2, 'other')), new Hlc(T, 11, 'me'))
    })

    it('4. this clock ahead of the other: its own counter plus one', () => {
      const wall = new Wall(T - 1000)
      const clock = clockAt(wall, T, 4)
      assert.deepStrictEqual(clock.update(new Hlc(T - 10, 99, 'other')), new Hlc(T, 5, 'me'))
    })

    it('5. the other ahead: its time and its counter plus one', () => {
      const wall = new Wall(T)
      const clock = clockAt(wall, T - 10, 4)
      assert.deepStrictEqual(clock.update(new Hlc(T + 20, 6, 'other')), new Hlc(T + 20, 7, 'me'))
      // The result is always after both inputs.
      assert.ok(Hlc.compare(clock.current, new Hlc(T + 20, 6, 'other')) > 0)
    })

    it('6. drift: at most maxDriftMs ahead of the wall clock (strict >), else an error and no change', () => {
      const wall = new Wall(T)
      const clock = new HybridLogicalClock({ nodeId: 'me', maxDriftMs: 1000, now: wall.now })
      assert.deepStrictEqual(clock.update(new Hlc(T + 1000, 0, 'other')), new Hlc(T + 1000, 1, 'me'))
      const before = clock.current
      hlcError(
        () => clock.update(new Hlc(T + 1001, 0, 'other')),
        'clockDrift',
        /1001 ms ahead of the wall clock \(maximum 1000 ms\)/,
      )
      assert.deepStrictEqual(clock.current, before)
      // A reading in the past is never a drift error.
      assert.deepStrictEqual(clock.update(new Hlc(0, 0, 'other')), new Hlc(T + 1000, 2, 'me'))
    })

    it('6. overflow: only the counter that would be incremented matters; the clock is unchanged on error', () => {
      const wall = new Wall(T)
      const clock = clockAt(wall, T, MAX_HLC_COUNTER - 1)
      assert.equal(clock.tick().counter, MAX_HLC_COUNTER)
      const before = clock.current
      hlcError(() => clock.tick(), 'counterOverflow', /integer overflow in HLC counter/)
      hlcError(() => clock.update(new Hlc(T, 0, 'other')), 'counterOverflow')
      hlcError(() => clock.update(new Hlc(T - 1, MAX_HLC_COUNTER, 'other')), 'counterOverflow')
      assert.deepStrictEqual(clock.current, before)
      // The other's maximum counter in the past does not matter once the wall clock moves on.
      wall.ms = T + 1
      assert.deepStrictEqual(clock.update(new Hlc(T, MAX_HLC_COUNTER, 'other')), new Hlc(T + 1, 0, 'me'))
      const fresh = clockAt(new Wall(T), T, 0)
      hlcError(() => fresh.update(new Hlc(T + 1, MAX_HLC_COUNTER, 'other')), 'counterOverflow')
      assert.deepStrictEqual(fresh.current, new Hlc(T, 0, 'me'))
    })
  })

  it('tick refuses to move while this clock is drifted ahead (the wall clock went back), and changes nothing', () => {
    const wall = new Wall(T)
    const clock = new HybridLogicalClock({ nodeId: 'me', maxDriftMs: 5000, now: wall.now })
    clock.update(new Hlc(T + 5000, 0, 'other'))
    wall.ms = T - 1
    const before = clock.current
    hlcError(() => clock.tick(), 'clockDrift')
    assert.deepStrictEqual(clock.current, before)
    wall.ms = T
    assert.deepStrictEqual(clock.tick(), new Hlc(T + 5000, 2, 'me'))
  })

  it('validate checks a reading against the wall clock and never changes the clock', () => {
    const wall = new Wall(T)
    const clock = new HybridLogicalClock({ nodeId: 'me', now: wall.now })
    const before = clock.current
    clock.validate(new Hlc(T + 60_000, 0, 'x'))
    clock.validate(new Hlc(0, 0, 'x'))
    hlcError(() => clock.validate(new Hlc(T + 60_001, 0, 'x')), 'clockDrift')
    assert.deepStrictEqual(clock.current, before)
    const roomy = new HybridLogicalClock({ nodeId: 'me', maxDriftMs: 10 * 365 * 86_400_000, now: wall.now })
    roomy.validate(new Hlc(T + 9 * 365 * 86_400_000, 0, 'x'))
  })
})

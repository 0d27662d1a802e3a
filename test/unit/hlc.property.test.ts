import assert from 'node:assert/strict'
import fc from 'fast-check'
import { Hlc, HlcError, HybridLogicalClock, MAX_HLC_COUNTER, type HlcErrorReason } from '../../src/hlc'

const T = 1_750_000_000_000

const nodeId = fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }).filter((s) => !s.includes(':'))
const timestamp = fc.oneof(
  fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
  fc.integer({ min: T - 1e9, max: T + 1e9 }),
)
const counter = fc.oneof(
  fc.integer({ min: 0, max: 100_000 }),
  fc.integer({ min: 0, max: MAX_HLC_COUNTER }),
  fc.constant(MAX_HLC_COUNTER),
)
const reading = fc.record({ timestamp, counter, nodeId }).map((r) => new Hlc(r.timestamp, r.counter, r.nodeId))
/** Readings whose formatted fields have the minimum widths, and ASCII node ids. */
const narrowReading = fc
  .record({
    timestamp: fc.integer({ min: 0, max: 999_999_999_999_999 }),
    counter: fc.integer({ min: 0, max: 99_999 }),
    nodeId: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 6 }).filter((s) => !s.includes(':')),
  })
  .map((r) => new Hlc(r.timestamp, r.counter, r.nodeId))

function malformed(text: string): void {
  let thrown: unknown
  try {
    Hlc.parse(text)
  } catch (err) {
    thrown = err
  }
  assert.ok(thrown instanceof HlcError, `${JSON.stringify(text)} parsed`)
  assert.equal(thrown.reason, 'malformed')
  assert.ok(thrown.message.includes(JSON.stringify(text)), 'the message quotes the text')
}

/** Spec 3.5 written out independently: the reading an update must produce, or the error it must raise. */
function expectedUpdate(self: Hlc, other: Hlc, wall: number, maxDriftMs: number): Hlc | HlcErrorReason {
  if (other.nodeId === self.nodeId) return self
  let ts: number
  let count: number
  if (wall > self.timestamp && wall > other.timestamp) [ts, count] = [wall, 0]
  else if (self.timestamp === other.timestamp) [ts, count] = [self.timestamp, Math.max(self.counter, other.counter) + 1]
  else if (self.timestamp > other.timestamp) [ts, count] = [self.timestamp, self.counter + 1]
  else [ts, count] = [other.timestamp, other.counter + 1]
  if (count > MAX_HLC_COUNTER) return 'counterOverflow'
  if (ts - wall > maxDriftMs) return 'clockDrift'
  return new Hlc(ts, count, self.nodeId)
}

type Step =
  | { op: 'wall'; by: number }
  | { op: 'tick' }
  | { op: 'update'; from: 'wall' | 'self'; by: number; counter: number; node: 'me' | 'a' | 'b' }

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    op: fc.constant('wall' as const),
    by: fc.oneof(fc.integer({ min: -3000, max: 10_000 }), fc.constant(0)),
  }),
  fc.record({ op: fc.constant('tick' as const) }),
  fc.record({
    op: fc.constant('update' as const),
    from: fc.constantFrom('wall' as const, 'self' as const),
    by: fc.oneof(fc.integer({ min: -200_000, max: 200_000 }), fc.integer({ min: -3, max: 3 })),
    counter: fc.oneof(fc.integer({ min: 0, max: 10 }), fc.constant(MAX_HLC_COUNTER), fc.constant(MAX_HLC_COUNTER - 1)),
    node: fc.constantFrom('me' as const, 'a' as const, 'b' as const),
  }),
)

describe('HLC properties', function () {
  this.timeout(10_000)

  it('parse(format(h)) gives back h, and the fields have their minimum widths', () => {
    fc.assert(
      fc.property(reading, (h) => {
        const text = h.toString()
        const back = Hlc.parse(text)
        assert.ok(back.equals(h))
        assert.deepStrictEqual([back.timestamp, back.counter, back.nodeId], [h.timestamp, h.counter, h.nodeId])
        const [ts, count] = text.split(':') as [string, string]
        assert.equal(ts.length, Math.max(15, String(h.timestamp).length))
        assert.equal(count.length, Math.max(5, String(h.counter).length))
        assert.equal(Number(ts), h.timestamp)
        assert.equal(Number(count), h.counter)
      }),
      { numRuns: 500 },
    )
  })

  it('parse refuses any number of fields but three', () => {
    const field = fc.string({ maxLength: 8 }).filter((s) => !s.includes(':'))
    fc.assert(
      fc.property(
        fc.array(field, { maxLength: 7 }).filter((fields) => fields.length !== 3),
        (fields) => malformed(fields.join(':')),
      ),
      { numRuns: 300 },
    )
  })

  it('parse refuses a time or counter that is not plain decimal digits', () => {
    const notDigits = fc.string({ unit: 'binary', maxLength: 8 }).filter((s) => !s.includes(':') && !/^[0-9]+$/.test(s))
    fc.assert(
      fc.property(notDigits, fc.nat(), nodeId, fc.boolean(), (bad, good, node, inTime) => {
        malformed(inTime ? `${bad}:${good}:${node}` : `${good}:${bad}:${node}`)
      }),
      { numRuns: 300 },
    )
  })

  it('parse reads any text as the plain three-field reading would (fields of any width, digits or not)', () => {
    // The oracle: split on ":", each number field non-empty decimal digits that fit a safe integer.
    const oracle = (text: string): Hlc | null => {
      const f = text.split(':')
      if (f.length !== 3 || f[2] === '') return null
      const [a, b] = [f[0]!, f[1]!].map((x) =>
        /^[0-9]+$/.test(x) && Number.isSafeInteger(Number(x)) ? Number(x) : NaN,
      )
      return Number.isNaN(a) || Number.isNaN(b) ? null : new Hlc(a!, b!, f[2]!)
    }
    const digits = fc.oneof(
      fc.stringMatching(/^[0-9]{0,17}$/),
      fc.constant('9007199254740993'),
      fc.constant('000000000000000'),
    )
    const field = fc.oneof(digits, digits, fc.string({ maxLength: 4 }))
    fc.assert(
      fc.property(field, field, fc.string({ maxLength: 6 }), fc.constantFrom(':', ''), (ts, count, node, extra) => {
        const text = `${ts}:${count}:${node}${extra}`
        const want = oracle(text)
        if (want === null) return malformed(text)
        const got = Hlc.parse(text)
        assert.deepEqual([got.timestamp, got.counter, got.nodeId], [want.timestamp, want.counter, want.nodeId])
      }),
      { numRuns: 2000 },
    )
  })

  it('parse refuses an empty node id', () => {
    fc.assert(
      fc.property(fc.nat(), fc.nat(), (ts, count) => malformed(`${ts}:${count}:`)),
      { numRuns: 100 },
    )
  })

  it('compare is a total order consistent with equals, by (time, counter, node id)', () => {
    fc.assert(
      fc.property(fc.array(reading, { minLength: 2, maxLength: 12 }), (readings) => {
        const sorted = [...readings].sort(Hlc.compare)
        for (let i = 0; i < sorted.length; i++) {
          for (let j = 0; j < sorted.length; j++) {
            const [a, b] = [sorted[i]!, sorted[j]!]
            const c = Math.sign(Hlc.compare(a, b))
            assert.ok(c === -Math.sign(Hlc.compare(b, a)), 'antisymmetric')
            assert.equal(c === 0, a.equals(b))
            assert.equal(c === 0, a.timestamp === b.timestamp && a.counter === b.counter && a.nodeId === b.nodeId)
            if (i < j) assert.ok(c <= 0)
          }
        }
      }),
      { numRuns: 200 },
    )
  })

  it('at the minimum widths, compare agrees with the order of the formatted strings', () => {
    fc.assert(
      fc.property(narrowReading, narrowReading, (a, b) => {
        const [x, y] = [a.toString(), b.toString()]
        assert.equal(Math.sign(Hlc.compare(a, b)), x < y ? -1 : x > y ? 1 : 0)
      }),
      { numRuns: 300 },
    )
  })

  it('update never goes backwards, never drifts, and leaves the clock unchanged on error', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 120_000 }),
        fc.array(step, { minLength: 1, maxLength: 40 }),
        (maxDriftMs, steps) => {
          let wall = T
          const clock = new HybridLogicalClock({ nodeId: 'me', maxDriftMs, now: () => wall })
          for (const s of steps) {
            const before = clock.current
            if (s.op === 'wall') {
              wall = Math.max(0, wall + s.by)
              continue
            }
            let other: Hlc | undefined
            let expected: Hlc | HlcErrorReason
            if (s.op === 'tick') {
              // Spec 3.5, "update now": against the wall clock.
              expected = expectedUpdate(before, new Hlc(0, 0, 'zero'), wall, maxDriftMs)
            } else {
              other = new Hlc(Math.max(0, (s.from === 'wall' ? wall : before.timestamp) + s.by), s.counter, s.node)
              expected = expectedUpdate(before, other, wall, maxDriftMs)
            }
            let after: Hlc
            try {
              after = s.op === 'tick' ? clock.tick() : clock.update(other!)
            } catch (err) {
              assert.ok(err instanceof HlcError, String(err))
              assert.equal(err.reason, expected, `${s.op}: ${err.message}`)
              assert.ok(clock.current.equals(before), 'unchanged after an error')
              continue
            }
            assert.ok(typeof expected !== 'string', `expected ${expected}, got ${after}`)
            assert.ok(after.equals(expected), `${after} = ${expected}`)
            assert.ok(clock.current.equals(after))
            assert.equal(after.nodeId, 'me')
            if (other && other.nodeId === 'me') {
              assert.ok(after.equals(before), 'a reading of this node is ignored')
            } else {
              assert.ok(Hlc.compare(after, before) > 0, `${after} > ${before}`)
              if (other) assert.ok(Hlc.compare(after, other) > 0, `${after} > ${other}`)
              assert.ok(after.timestamp - wall <= maxDriftMs, 'not drifted')
            }
          }
        },
      ),
      { numRuns: 300 },
    )
  })

  it('tick strictly increases while the wall clock stands still or moves forward', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 50 })), { minLength: 1, maxLength: 200 }),
        (moves) => {
          let wall = T
          const clock = new HybridLogicalClock({ nodeId: 'me', now: () => wall })
          let previous = clock.current
          for (const by of moves) {
            wall += by
            const next = clock.tick()
            assert.ok(Hlc.compare(next, previous) > 0, `${next} > ${previous}`)
            assert.equal(next.timestamp, wall)
            previous = next
          }
        },
      ),
      { numRuns: 200 },
    )
  })
})

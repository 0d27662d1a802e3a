/**
 * The sidebar timeline's record (src/observe/timeline.ts, fed by StoreActivity) on a clock of the
 * test's own: holds as spans, a hand-over only when the holder name changes (not its session), the
 * msgs waiting summed over the nodes of a runtime, numeric values of a watched key, a bounded window.
 */
import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import { StoreActivity } from '../../src/observe'
import { Timeline } from '../../src/observe/timeline'
import type { Lease } from '../../src/locks/lease'

describe('observe: the timeline of locks and values', () => {
  let now = 1_000_000
  const clock = () => now

  it('records holds as spans and counts a hand-over only between holder names', () => {
    const tl = new Timeline(clock)
    tl.holder('line', 'lock', 'nodered-a/n1:0123456789ab', true)
    now += 1000
    tl.holder('line', 'lock', null, false)
    now += 10
    tl.holder('line', 'lock', 'nodered-a/n1:ba9876543210', true)
    now += 1000
    tl.holder('line', 'lock', 'runtime-b/n2:0123456789ab', false)
    now += 500
    const [line] = tl.view().locks
    assert.deepEqual(
      line!.spans.map((s) => [s.holder?.slice(0, 12) ?? null, s.ours, s.to === null ? null : s.to - s.from]),
      [
        ['nodered-a/n1', true, 1000],
        [null, false, 10],
        ['nodered-a/n1', true, 1000],
        ['runtime-b/n2', false, null],
      ],
    )
    assert.deepEqual(line!.handovers, [now - 500], 'a new session of the same holder is no hand-over')
  })

  it('sums the msgs waiting at the nodes of a runtime, and charts numeric values only', () => {
    const activity = new StoreActivity(clock)
    activity.waitingChanged('n1', 'line', 'lock', 2)
    now += 10
    activity.waitingChanged('n2', 'line', 'lock', 3)
    now += 10
    activity.waitingChanged('n1', 'line', 'lock', 0)
    assert.deepEqual(
      activity.timeline.view().locks[0]!.waiting.map(([, n]) => n),
      [2, 5, 3],
    )
    activity.watchStarted('w', 'temp')
    for (const value of [
      '21.5',
      '{"celsius": 22}',
      '"23"',
      'warm',
      '{"a": 1, "b": 2}',
      '\n 24 ',
      '\u00a025',
      'true',
      '[26]',
      '+27',
      '.5',
      'null',
    ])
      activity.watchNotified('temp', {
        key: Buffer.from('temp'),
        operation: 'SET',
        value: Buffer.from(value),
        version: null,
        reconciled: false,
      } as never)
    assert.deepEqual(
      activity.timeline.view().values[0]!.points.map(([, v]) => v),
      [21.5, 22, 23, 24, 25],
      'blank space around a number too, as trim() removes it; JSON that is no number is none',
    )
  })

  it('a lease lost to a deletion leaves the name free, not contested', () => {
    const activity = new StoreActivity(clock)
    const lease = new EventEmitter() as unknown as Lease
    activity.trackLease('n1', 'line', 'lock', 'nodered-a/n1:0123456789ab', 10_000, lease)
    ;(lease as unknown as EventEmitter).emit('acquired', { fencingToken: { toString: () => '1:0:n' } })
    ;(lease as unknown as EventEmitter).emit('lost', {
      reason: 'deleted',
      message: 'the key was deleted by someone else',
      deleted: true,
    })
    const record = [...activity.locks.values()][0]!
    assert.equal(record.currentHolder, null)
    assert.deepEqual(
      activity.timeline.view().locks[0]!.spans.map((s) => s.holder),
      ['nodered-a/n1:0123456789ab', null],
    )
  })

  it('keeps only the window: what ended before it is gone', () => {
    const tl = new Timeline(clock, 60_000)
    tl.holder('line', 'lease', 'a', true)
    now += 1000
    tl.holder('line', 'lease', 'b', false)
    tl.value('k', 1)
    now += 120_000
    tl.holder('line', 'lease', 'c', false)
    const view = tl.view()
    assert.deepEqual(
      view.locks[0]!.spans.map((s) => s.holder),
      ['b', 'c'],
      'the span of b lasted into the window',
    )
    assert.deepEqual(view.values, [])
  })
})

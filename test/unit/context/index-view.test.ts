import assert from 'node:assert/strict'
import fc from 'fast-check'
import { BUCKETS, bucketOf, mark, markDelta, type Delta, type IndexState } from '../../../src/context/index-format'
import { IndexView } from '../../../src/context/index-view'

const entry = fc.tuple(fc.constantFrom('global', 'f1', 'n1:f1'), fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'))

/** What a reader must see: every bucket merged, then the delta's entries overriding. */
function expected(buckets: IndexState[], delta: Delta): IndexState {
  const out: IndexState = new Map()
  for (const b of buckets) for (const [scope, tops] of b) for (const top of tops) mark(out, scope, top, true)
  for (const [scope, tops] of delta) for (const [top, exists] of tops) mark(out, scope, top, exists)
  return out
}

describe('context: the key index as a reader sees it', () => {
  it('a delta entry overrides its bucket both ways, and its removal gives the bucket back', () => {
    const view = new IndexView()
    const bucketA = new Map([['global', new Set(['a'])]])
    assert.deepEqual(view.replaceBucket(bucketOf('global', 'a'), bucketA), {
      added: [{ scope: 'global', top: 'a' }],
      removed: [],
    })
    assert.deepEqual(
      view.replaceDelta(
        new Map([
          [
            'global',
            new Map([
              ['a', false],
              ['b', true],
            ]),
          ],
        ]),
      ),
      {
        added: [{ scope: 'global', top: 'b' }],
        removed: [{ scope: 'global', top: 'a' }],
      },
    )
    assert.equal(view.has('global', 'a'), false)
    assert.deepEqual(view.replaceDelta(new Map()), {
      added: [{ scope: 'global', top: 'a' }],
      removed: [{ scope: 'global', top: 'b' }],
    })
    assert.deepEqual(view.current, new Map([['global', new Set(['a'])]]))
  })

  it('a fold (buckets rewritten to say what the delta said, then the delta emptied) changes nothing a reader sees', () => {
    const view = new IndexView()
    view.applyDelta([
      ['global', 'a', true],
      ['f1', 'b', true],
    ])
    const before = structuredClone(view.current)
    for (const [scope, top] of [
      ['global', 'a'],
      ['f1', 'b'],
    ] as const) {
      assert.deepEqual(view.replaceBucket(bucketOf(scope, top), new Map([[scope, new Set([top])]])), {
        added: [],
        removed: [],
      })
    }
    assert.deepEqual(view.replaceDelta(new Map()), { added: [], removed: [] })
    assert.deepEqual(view.current, before)
  })

  it('after any sequence of bucket, delta and delta-change updates, the merged list is what the stored keys say, and the reported changes lead there', () => {
    const step = fc.oneof(
      fc.record({ kind: fc.constant('bucket' as const), entries: fc.array(entry, { maxLength: 6 }) }),
      fc.record({
        kind: fc.constant('delta' as const),
        entries: fc.array(fc.tuple(entry, fc.boolean()), { maxLength: 6 }),
      }),
      fc.record({
        kind: fc.constant('apply' as const),
        entries: fc.array(fc.tuple(entry, fc.boolean()), { maxLength: 3 }),
      }),
    )
    fc.assert(
      fc.property(fc.array(step, { maxLength: 30 }), (steps) => {
        const view = new IndexView()
        const buckets: IndexState[] = Array.from({ length: BUCKETS }, () => new Map())
        let delta: Delta = new Map()
        const seen: IndexState = new Map()
        for (const s of steps) {
          let change
          if (s.kind === 'bucket') {
            // a bucket holds only the entries that hash to it: rewrite every bucket touched
            const touched = new Map<number, IndexState>()
            for (const [scope, top] of s.entries) {
              const b = bucketOf(scope, top)
              const state = touched.get(b) ?? new Map()
              mark(state, scope, top, true)
              touched.set(b, state)
            }
            for (const [b, state] of touched) {
              buckets[b] = state
              change = view.replaceBucket(b, state)
              for (const { scope, top } of change.added) mark(seen, scope, top, true)
              for (const { scope, top } of change.removed) mark(seen, scope, top, false)
            }
            continue
          }
          if (s.kind === 'delta') {
            delta = new Map()
            for (const [[scope, top], exists] of s.entries) markDelta(delta, scope, top, exists)
            change = view.replaceDelta(structuredClone(delta))
          } else {
            for (const [[scope, top], exists] of s.entries) markDelta(delta, scope, top, exists)
            change = view.applyDelta(s.entries.map(([[scope, top], exists]) => [scope, top, exists]))
          }
          for (const { scope, top } of change.added) mark(seen, scope, top, true)
          for (const { scope, top } of change.removed) mark(seen, scope, top, false)
        }
        assert.deepEqual(view.current, expected(buckets, delta))
        assert.deepEqual(seen, view.current)
      }),
    )
  })
})

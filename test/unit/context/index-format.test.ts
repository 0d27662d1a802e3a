import assert from 'node:assert/strict'
import fc from 'fast-check'
import {
  BUCKETS,
  bucketKey,
  bucketOf,
  countDelta,
  deltaKey,
  mark,
  markDelta,
  parseBucket,
  parseDelta,
  serializeBucket,
  serializeDelta,
  type IndexState,
} from '../../../src/context/index-format'

const names = fc.stringMatching(/^[a-z0-9:_]{1,12}$/)
const states = fc.array(fc.tuple(names, fc.array(names, { maxLength: 6 })), { maxLength: 6 }).map((pairs) => {
  const state: IndexState = new Map()
  for (const [scope, tops] of pairs) for (const top of tops) mark(state, scope, top, true)
  return state
})

describe('context: the key index as stored', () => {
  it('names its keys under the prefix: 256 buckets in two hex digits, and the delta', () => {
    assert.equal(BUCKETS, 256)
    assert.equal(bucketKey('p/', 0), 'p/#keys/00')
    assert.equal(bucketKey('p/', 255), 'p/#keys/ff')
    assert.equal(deltaKey('p/'), 'p/#keys/delta')
  })

  it('puts a key in the bucket FNV-1a of <scope>/<key> picks, the same in every runtime', () => {
    const fnv = (text: string) => {
      let h = 0x811c9dc5n
      for (const c of Buffer.from(text, 'latin1')) h = ((h ^ BigInt(c)) * 0x01000193n) & 0xffffffffn
      return Number(h % 256n)
    }
    fc.assert(fc.property(names, names, (scope, top) => bucketOf(scope, top) === fnv(`${scope}/${top}`)))
  })

  it('a bucket reads back what it wrote; equal lists are equal bytes whatever the order they were made in', () => {
    fc.assert(
      fc.property(states, (state) => {
        const text = serializeBucket(state)
        if (state.size === 0) return text === null
        assert.deepEqual(parseBucket(Buffer.from(text!)), state)
        const shuffled: IndexState = new Map([...state].reverse().map(([s, t]) => [s, new Set([...t].reverse())]))
        return serializeBucket(shuffled) === text
      }),
    )
  })

  it('a scope or key named __proto__ is stored like any other (a plain object would take it for its prototype)', () => {
    const state: IndexState = new Map([['__proto__', new Set(['__proto__', 'a'])]])
    assert.deepEqual(parseBucket(Buffer.from(serializeBucket(state)!)), state)
    const delta = new Map([['__proto__', new Map([['__proto__', true]])]])
    assert.deepEqual(parseDelta(Buffer.from(serializeDelta(delta)!)), delta)
  })

  it('a bucket that is not a JSON object is refused; entries of the wrong type are skipped', () => {
    assert.throws(() => parseBucket(Buffer.from('not json')))
    assert.throws(() => parseBucket(Buffer.from('[1]')), /not an object/)
    assert.deepEqual(parseBucket(Buffer.from('{"g":["a",1,null],"h":"x"}')), new Map([['g', new Set(['a'])]]))
    assert.deepEqual(parseBucket(null), new Map())
  })

  it('the delta reads back what it wrote, keeps false entries, and counts its entries', () => {
    const delta = new Map<string, Map<string, boolean>>()
    markDelta(delta, 'global', 'a', true)
    markDelta(delta, 'global', 'b', false)
    markDelta(delta, 'f1', 'a', true)
    markDelta(delta, 'global', 'a', false)
    assert.equal(countDelta(delta), 3)
    assert.deepEqual(parseDelta(Buffer.from(serializeDelta(delta)!)), delta)
    assert.equal(serializeDelta(new Map()), null)
    assert.deepEqual(
      parseDelta(Buffer.from('{"g":{"a":true,"b":"yes"},"h":[true]}')),
      new Map([['g', new Map([['a', true]])]]),
    )
    assert.throws(() => parseDelta(Buffer.from('"x"')), /not an object/)
  })

  it('mark drops a scope left empty', () => {
    const state: IndexState = new Map()
    mark(state, 'g', 'a', true)
    mark(state, 'g', 'a', false)
    mark(state, 'g', 'b', false)
    assert.equal(state.size, 0)
  })
})

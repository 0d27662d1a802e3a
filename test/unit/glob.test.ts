import assert from 'node:assert/strict'
import fc from 'fast-check'
import { globToRegExp, KEY_PATTERN_GLOB, SCAN_GLOB } from '../../src/emulator/core/glob'
import { PatternError } from '../../src/emulator/core/principal'

describe('glob: one matcher, two syntaxes', () => {
  it('SCAN takes \\x as a literal x; a Pattern key takes \\ as a byte', () => {
    assert.ok(globToRegExp('a\\*', SCAN_GLOB).test('a*'))
    assert.ok(!globToRegExp('a\\*', SCAN_GLOB).test('a\\b'))
    assert.ok(globToRegExp('a\\*', KEY_PATTERN_GLOB).test('a\\b'))
    assert.ok(!globToRegExp('a\\*', KEY_PATTERN_GLOB).test('a*'))
  })

  it('a ] first in a set: a member of a Pattern key, an empty set refused by SCAN', () => {
    assert.ok(globToRegExp('k[]x]', KEY_PATTERN_GLOB).test('k]'))
    assert.throws(() => globToRegExp('k[]x]', SCAN_GLOB), PatternError)
  })

  it('a reversed range: the same range for SCAN, refused in a Pattern key', () => {
    assert.ok(globToRegExp('k[9-0]', SCAN_GLOB).test('k5'))
    assert.throws(() => globToRegExp('k[9-0]', KEY_PATTERN_GLOB), { message: 'the range 9-0 in "[" at position 1 runs backwards' })
  })

  it('both syntaxes agree on globs without backslash, leading ] or reversed range', () => {
    const piece = fc.oneof(fc.constantFrom('*', '?', '[a-c]', '[!x]', '[^0-9]', 'a', 'b', '/', '.', '(', '$'))
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 6 }), fc.string({ unit: 'binary-ascii', maxLength: 8 }), (pieces, key) => {
        const glob = pieces.join('')
        assert.equal(globToRegExp(glob, SCAN_GLOB).test(key), globToRegExp(glob, KEY_PATTERN_GLOB).test(key), glob)
      }),
    )
  })
})

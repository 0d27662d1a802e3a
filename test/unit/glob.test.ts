import assert from 'node:assert/strict'
import fc from 'fast-check'
import { compileGlob, KEY_PATTERN_GLOB, SCAN_GLOB } from '../../src/emulator/core/glob'
import { PatternError } from '../../src/emulator/core/principal'

describe('glob: one matcher, two syntaxes', () => {
  it('SCAN takes \\x as a literal x; a Pattern key takes \\ as a byte', () => {
    assert.ok(compileGlob('a\\*', SCAN_GLOB).matches('a*'))
    assert.ok(!compileGlob('a\\*', SCAN_GLOB).matches('a\\b'))
    assert.ok(compileGlob('a\\*', KEY_PATTERN_GLOB).matches('a\\b'))
    assert.ok(!compileGlob('a\\*', KEY_PATTERN_GLOB).matches('a*'))
  })

  it('a ] first in a set: a member of a Pattern key, an empty set refused by SCAN', () => {
    assert.ok(compileGlob('k[]x]', KEY_PATTERN_GLOB).matches('k]'))
    assert.throws(() => compileGlob('k[]x]', SCAN_GLOB), PatternError)
  })

  it('a reversed range: the same range for SCAN, refused in a Pattern key', () => {
    assert.ok(compileGlob('k[9-0]', SCAN_GLOB).matches('k5'))
    assert.throws(() => compileGlob('k[9-0]', KEY_PATTERN_GLOB), {
      message: 'the range 9-0 in "[" at position 1 runs backwards',
    })
  })

  it('both syntaxes agree on globs without backslash, leading ] or reversed range', () => {
    const piece = fc.oneof(fc.constantFrom('*', '?', '[a-c]', '[!x]', '[^0-9]', 'a', 'b', '/', '.', '(', '$'))
    fc.assert(
      fc.property(
        fc.array(piece, { maxLength: 6 }),
        fc.string({ unit: 'binary-ascii', maxLength: 8 }),
        (pieces, key) => {
          const glob = pieces.join('')
          assert.equal(
            compileGlob(glob, SCAN_GLOB).matches(key),
            compileGlob(glob, KEY_PATTERN_GLOB).matches(key),
            glob,
          )
        },
      ),
    )
  })
})

import assert from 'node:assert/strict'
import fc from 'fast-check'
import {
  compileGlob,
  compileScanGlob,
  KEY_PATTERN_GLOB,
  MAX_GLOB_BYTES,
  MAX_GLOB_STARS,
  SCAN_GLOB,
  type GlobSyntax,
} from '../../../src/emulator/core/glob'
import { KeyPattern } from '../../../src/emulator/core/key-pattern'
import { PatternError } from '../../../src/emulator/core/principal'
import { DEFAULT_SCAN_LIMITS, ScanWalks } from '../../../src/emulator/core/scan'
import { globToRegExp } from '../../support/regex-glob'

/** What the old RegExp matcher said, or 'refused' for a glob it threw on. */
function oracle(glob: string, syntax: GlobSyntax, key: string): boolean | 'refused' {
  try {
    return globToRegExp(glob, syntax).test(key)
  } catch (err) {
    if (err instanceof PatternError) return 'refused'
    throw err
  }
}

function matcher(glob: string, syntax: GlobSyntax, key: string): boolean | 'refused' {
  try {
    return compileGlob(glob, syntax).matches(key)
  } catch (err) {
    if (err instanceof PatternError) return 'refused'
    throw err
  }
}

/** The SCAN that froze the emulator, and the one that ran past two minutes. */
const FREEZERS: Array<[string, string]> = [
  ['*?*?*?*?*?*?*?*?*?*?*?*?!', 'x'.repeat(43)],
  ['*a*a*a*a*a*a*b', 'a'.repeat(400)],
  ['*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b', 'a'.repeat(100_000)],
]

describe('security: a glob is matched in bounded time', () => {
  it('agrees with the old RegExp matcher on ordinary globs, in both syntaxes', () => {
    const piece = fc.constantFrom(
      '*',
      '**',
      '?',
      '[a-c]',
      '[!x]',
      '[^0-9]',
      '[]a]',
      '[c-a]',
      '\\*',
      '\\',
      '[a',
      'a',
      'b',
      'c',
      '/',
      '.',
      '(',
      '$',
      '{',
      '\u00e9',
    )
    const key = fc.string({
      unit: fc.constantFrom('a', 'b', 'c', 'x', '0', '5', '/', '.', '*', '\\', ']', '\u00e9', '\u00ff'),
      maxLength: 10,
    })
    fc.assert(
      fc.property(
        fc.array(piece, { maxLength: 7 }),
        key,
        fc.constantFrom(SCAN_GLOB, KEY_PATTERN_GLOB),
        (pieces, k, syntax) => {
          const glob = pieces.join('')
          assert.equal(
            matcher(glob, syntax, k),
            oracle(glob, syntax, k),
            `${JSON.stringify(glob)} over ${JSON.stringify(k)}`,
          )
        },
      ),
      { numRuns: 3000 },
    )
  })

  it('decides the patterns that froze the emulator within (tokens + 1) × (key bytes + 1) steps', () => {
    for (const [glob, key] of FREEZERS) {
      const step = compileGlob(glob, SCAN_GLOB).match(key, Infinity)
      assert.ok(step.done)
      assert.equal(step.matched, false)
      assert.ok(
        step.steps <= (glob.length + 1) * (key.length + 1),
        `${glob}: ${step.steps} steps over ${key.length} bytes`,
      )
    }
    // The step bound is what holds the time: the old matcher explores about C(400, 6) paths here.
    const step = compileGlob('*a*a*a*a*a*a*b', SCAN_GLOB).match('a'.repeat(400), Infinity)
    assert.ok(step.steps < 10_000, `${step.steps} steps`)
  })

  it('pauses a match after its budget and goes on where it stood, to the same answer', () => {
    const glob = compileGlob('*a*a*a*b', SCAN_GLOB)
    for (const key of ['a'.repeat(300), `${'a'.repeat(300)}b`]) {
      let step = glob.match(key, 7)
      let slices = 1
      while (!step.done) {
        assert.ok(step.steps <= 7)
        step = glob.match(key, 7, step.progress)
        slices++
      }
      assert.equal(step.matched, glob.matches(key))
      assert.ok(slices > 10, `${slices} slices`)
    }
  })

  it('refuses a glob over the byte or star cap with a reason saying so, in SCAN and in a key pattern', () => {
    const long = compileScanGlob(Buffer.from('k'.repeat(MAX_GLOB_BYTES + 1)))
    assert.deepEqual(long, {
      ok: false,
      reason: `the pattern is ${MAX_GLOB_BYTES + 1} bytes; at most ${MAX_GLOB_BYTES} are taken`,
    })
    const stars = compileScanGlob(Buffer.from('*a'.repeat(MAX_GLOB_STARS + 1)))
    assert.deepEqual(stars, {
      ok: false,
      reason: `the pattern has ${MAX_GLOB_STARS + 1} stars; at most ${MAX_GLOB_STARS} are taken`,
    })
    assert.ok(compileScanGlob(Buffer.from('*a'.repeat(MAX_GLOB_STARS))).ok)
    // A run of stars is one star.
    assert.ok(compileScanGlob(Buffer.from('*'.repeat(MAX_GLOB_STARS * 4))).ok)
    assert.throws(
      () =>
        new KeyPattern('Pattern', `{principal.clientId}${'*x'.repeat(MAX_GLOB_STARS + 1)}`, { substitutions: true }),
      PatternError,
    )
  })

  it('holds the SCAN page time budget inside one key: a page over a huge key ends early and the next goes on', () => {
    const keys = ['a'.repeat(200_000), `${'a'.repeat(30)}b`, 'zz']
    const store = { ids: () => keys[Symbol.iterator](), has: () => true }
    const walks = new ScanWalks(store, { ...DEFAULT_SCAN_LIMITS, maxPageMs: 0 })
    const pattern = Buffer.from('*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b')
    let answer = walks.page({ pattern, token: null, clientId: 'c', mayRead: () => true })
    const found: string[] = []
    let pages = 1
    while (answer.ok && answer.token) {
      found.push(...answer.keys.map((k) => k.toString('latin1')))
      answer = walks.page({ pattern, token: answer.token, clientId: 'c', mayRead: () => true })
      pages++
    }
    assert.ok(answer.ok)
    found.push(...answer.keys.map((k) => k.toString('latin1')))
    assert.deepEqual(found, [keys[1]])
    assert.ok(pages > 2, `the huge key's match was spread over ${pages} pages`)
  })
})

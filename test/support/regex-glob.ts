// The emulator's glob matcher as it was before src/emulator/core/glob.ts became a step-bounded
// token matcher: compiled to a RegExp. Kept verbatim (only this import changed) as the reference
// test/security/glob.test.ts compares the new matcher against; nothing else should use it.
import { PatternError } from '../../src/emulator/core/principal'

/**
 * The one glob over state store keys, for SCAN patterns and for authorization / persistence
 * `Pattern` keys: `*` any bytes (also none, also `/`), `?` exactly one byte, `[a-z0-9]` one byte of
 * the set, `[!…]` or `[^…]` one byte not in it. Keys are bytes, matched here as latin1 strings (one
 * character per byte), so a non-ASCII character is several bytes and `?` does not match it whole.
 * Compiled into RegExp source, where V8's regex engine does the matching. Written by hand: glob
 * libraries work on text and file paths (`/` and dot rules), not raw bytes.
 *
 * The two users differ in a few rules, which a `GlobSyntax` names.
 */
export interface GlobSyntax {
  /** `\x` is a literal x, also in a set, and a trailing `\` is itself (SCAN, as in Redis); otherwise `\` is an ordinary byte. */
  readonly escapes: boolean
  /** A `]` first in a set is a member (POSIX); otherwise it closes the set, which is then empty and refused. */
  readonly leadingBracketMember: boolean
  /** A range written high to low (`[z-a]`): the same range (Redis) or refused. */
  readonly reversedRange: 'swap' | 'refuse'
  /** Where in the pattern a problem is, in the words of the pattern's users. */
  readonly unclosed: (at: number) => string
  readonly emptySet: (at: number) => string
  readonly backwards: (range: string, at: number) => string
}

/** SCAN's whole-key glob, as the SDKs' design describes it (Redis's syntax). */
export const SCAN_GLOB: GlobSyntax = {
  escapes: true,
  leadingBracketMember: false,
  reversedRange: 'swap',
  unclosed: (at) => `the "[" at byte ${at} of the pattern is never closed`,
  emptySet: (at) => `the "[" at byte ${at} of the pattern has an empty set`,
  backwards: (range, at) => `the range ${range} in "[" at byte ${at} runs backwards`,
}

/** A BrokerAuthorization or Broker persistence resource's `Pattern` key (without its `{principal.…}` substitutions). */
export const KEY_PATTERN_GLOB: GlobSyntax = {
  escapes: false,
  leadingBracketMember: true,
  reversedRange: 'refuse',
  unclosed: (at) => `"[" at position ${at} is not closed by "]"`,
  emptySet: (at) => `"[" at position ${at} has an empty set`,
  backwards: (range, at) => `the range ${range} in "[" at position ${at} runs backwards`,
}

const BACKSLASH = 0x5c

/** The RegExp source (unanchored) of a latin1 glob. Throws PatternError for a set the syntax refuses. */
export function globSource(glob: string, syntax: GlobSyntax): string {
  let source = ''
  let i = 0
  while (i < glob.length) {
    const c = glob.charCodeAt(i++)
    if (c === 0x2a /* * */) source += '[^]*'
    else if (c === 0x3f /* ? */) source += '[^]'
    // A trailing backslash is itself.
    else if (c === BACKSLASH && syntax.escapes) source += byte(i < glob.length ? glob.charCodeAt(i++) : c)
    else if (c === 0x5b /* [ */) {
      const set = bracket(glob, i, syntax)
      source += set.source
      i = set.end
    } else source += byte(c)
  }
  return source
}

/** A glob as an anchored RegExp over latin1 key strings. */
export function globToRegExp(glob: string, syntax: GlobSyntax): RegExp {
  return new RegExp(`^${globSource(glob, syntax)}$`)
}

/** A set starting after its `[`: its RegExp class and where it ends (after its `]`). */
function bracket(glob: string, start: number, syntax: GlobSyntax): { source: string; end: number } {
  const at = start - 1
  let i = start
  let negated = false
  if (glob[i] === '!' || glob[i] === '^') {
    negated = true
    i++
  }
  const member = (): number => {
    const c = glob.charCodeAt(i++)
    return c === BACKSLASH && syntax.escapes && i < glob.length ? glob.charCodeAt(i++) : c
  }
  let items = ''
  for (let first = true; ; first = false) {
    if (i >= glob.length) throw new PatternError(syntax.unclosed(at))
    if (glob[i] === ']' && !(first && syntax.leadingBracketMember)) {
      i++
      break
    }
    const from = glob[i]!
    let lo = member()
    if (glob[i] === '-' && i + 1 < glob.length && glob[i + 1] !== ']') {
      const to = glob[i + 1]!
      i++
      let hi = member()
      if (hi < lo) {
        if (syntax.reversedRange === 'refuse') throw new PatternError(syntax.backwards(`${from}-${to}`, at))
        ;[lo, hi] = [hi, lo]
      }
      items += lo === hi ? byte(lo) : `${byte(lo)}-${byte(hi)}`
    } else items += byte(lo)
  }
  if (items === '') throw new PatternError(syntax.emptySet(at))
  return { source: `[${negated ? '^' : ''}${items}]`, end: i }
}

function byte(b: number): string {
  return `\\x${b.toString(16).padStart(2, '0')}`
}

export type ScanGlob = { ok: true; matches: (latin1Key: string) => boolean } | { ok: false; reason: string }

/** A SCAN pattern compiled once per scan; a pattern it refuses is the reason, for the `-ERR` answer. */
export function compileScanGlob(pattern: Buffer): ScanGlob {
  let re: RegExp
  try {
    re = globToRegExp(pattern.toString('latin1'), SCAN_GLOB)
  } catch (err) {
    if (err instanceof PatternError) return { ok: false, reason: err.message }
    throw err
  }
  return { ok: true, matches: (key) => re.test(key) }
}

// The emulator's glob matcher as it was before src/emulator/core/glob.ts became a step-bounded
// token matcher: compiled to a RegExp, kept as the reference test/unit/security/glob.test.ts compares the
// new matcher against (the syntax rules are src's own); nothing else should use it.
import type { GlobSyntax } from '../../src/emulator/core/glob'
import { PatternError } from '../../src/emulator/core/principal'

/**
 * The emulator's old glob matcher, kept as the oracle of test/unit/security/glob.test.ts: a glob
 * compiled into RegExp source, where V8's regex engine does the matching. The rules a syntax names
 * are src/emulator/core/glob.ts's own `GlobSyntax`, so both matchers read the same ones.
 */

const BACKSLASH = 0x5c

/** The RegExp source (unanchored) of a latin1 glob. Throws PatternError for a set the syntax refuses. */
function globSource(glob: string, syntax: GlobSyntax): string {
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

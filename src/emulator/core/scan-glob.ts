/**
 * SCAN's whole-key glob, as the SDKs' design describes it (Redis's syntax): `*` any bytes, `?` one
 * byte, `[abc]` one of, `[a-z]` a range, `[!…]` or `[^…]` none of, `\x` a literal x (so `[*]` and
 * `\*` are a literal `*`). Bytes, not characters, as in Redis and in the authorization patterns:
 * a non-ASCII character is several bytes, so `?` does not match it whole.
 *
 * Compiled once per scan into a RegExp over the store's latin1 key strings (one character per
 * byte), where V8's regex engine does the matching: written here because a glob library works on
 * text and file paths (`/` and dot rules, no bytes).
 */

export type GlobResult = { ok: true; matches: (latin1Key: string) => boolean } | { ok: false; reason: string }

export function compileScanGlob(pattern: Buffer): GlobResult {
  let source = ''
  let i = 0
  while (i < pattern.length) {
    const b = pattern[i++]!
    if (b === 0x2a /* * */) {
      source += '[^]*'
    } else if (b === 0x3f /* ? */) {
      source += '[^]'
    } else if (b === 0x5c /* \ */) {
      // A trailing backslash is itself.
      source += byte(i < pattern.length ? pattern[i++]! : b)
    } else if (b === 0x5b /* [ */) {
      const cls = bracket(pattern, i)
      if (!cls.ok) return cls
      source += cls.source
      i = cls.end
    } else {
      source += byte(b)
    }
  }
  const re = new RegExp(`^${source}$`)
  return { ok: true, matches: (key) => re.test(key) }
}

/** A bracket expression starting after its `[`: the class and where it ends (after its `]`). */
function bracket(pattern: Buffer, start: number): { ok: true; source: string; end: number } | { ok: false; reason: string } {
  let i = start
  let negated = false
  if (pattern[i] === 0x21 /* ! */ || pattern[i] === 0x5e /* ^ */) {
    negated = true
    i++
  }
  let items = ''
  for (;;) {
    if (i >= pattern.length) return { ok: false, reason: `the "[" at byte ${start - 1} of the pattern is never closed` }
    let b = pattern[i++]!
    if (b === 0x5d /* ] */) break
    if (b === 0x5c /* \ */ && i < pattern.length) b = pattern[i++]!
    if (pattern[i] === 0x2d /* - */ && i + 1 < pattern.length && pattern[i + 1] !== 0x5d) {
      let to = pattern[i + 1]!
      i += 2
      if (to === 0x5c && i < pattern.length) to = pattern[i++]!
      // A reversed range is the same range, as in Redis.
      items += to < b ? `${byte(to)}-${byte(b)}` : `${byte(b)}-${byte(to)}`
    } else {
      items += byte(b)
    }
  }
  if (items === '') return { ok: false, reason: `the "[" at byte ${start - 1} of the pattern has an empty set` }
  return { ok: true, source: `[${negated ? '^' : ''}${items}]`, end: i }
}

function byte(b: number): string {
  return `\\x${b.toString(16).padStart(2, '0')}`
}

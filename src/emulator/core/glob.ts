import { PatternError } from './principal'

/**
 * The one glob over state store keys, for SCAN patterns and for authorization / persistence
 * `Pattern` keys: `*` any bytes (also none, also `/`), `?` exactly one byte, `[a-z0-9]` one byte of
 * the set, `[!…]` or `[^…]` one byte not in it. Keys are bytes, matched here as latin1 strings (one
 * character per byte), so a non-ASCII character is several bytes and `?` does not match it whole.
 *
 * Matched without backtracking blow-up: every token but `*` takes exactly one byte, so the classic
 * two-pointer wildcard walk (retry from the last `*` only) decides a key in at most
 * (pattern tokens + 1) × (key bytes + 1) steps, and can stop after a budget of steps and go on later
 * (SCAN holds its time budget inside one match). No RegExp: V8's backtracking engine takes
 * exponential time on `*a*a*a*b`. Written by hand: glob libraries work on text and file paths (`/`
 * and dot rules), not raw bytes, and none can pause a match.
 *
 * A glob is at most MAX_GLOB_BYTES long with at most MAX_GLOB_STARS stars (runs of `*` count once).
 * The two users differ in a few rules, which a `GlobSyntax` names.
 */
export interface GlobSyntax {
  /**
   * `\x` is a literal x, also in a set, and a trailing `\` is itself (SCAN, as in Redis); otherwise `\` is an ordinary
   * byte.
   */
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

/** The longest glob taken, in bytes. */
export const MAX_GLOB_BYTES = 1024
/** The most stars a glob may hold (a run of `*` is one). */
export const MAX_GLOB_STARS = 64

const BACKSLASH = 0x5c
/** Token codes: 0–255 a literal byte, then these, then sets (SET + index). */
const ANY = 256
const STAR = 257
const SET = 258

/**
 * A glob's tokens, before they are joined into a `Glob` (a key pattern joins its text parts with its
 * substituted values). Sets are 256-entry membership tables.
 */
export interface GlobTokens {
  readonly codes: number[]
  readonly sets: Uint8Array[]
}

/** The tokens of a latin1 glob. Throws PatternError for a set the syntax refuses or a glob over the limits. */
export function globTokens(glob: string, syntax: GlobSyntax): GlobTokens {
  if (glob.length > MAX_GLOB_BYTES)
    throw new PatternError(`the pattern is ${glob.length} bytes; at most ${MAX_GLOB_BYTES} are taken`)
  const codes: number[] = []
  const sets: Uint8Array[] = []
  let i = 0
  while (i < glob.length) {
    const c = glob.charCodeAt(i++)
    if (c === 0x2a /* * */) codes.push(STAR)
    else if (c === 0x3f /* ? */) codes.push(ANY)
    // A trailing backslash is itself.
    else if (c === BACKSLASH && syntax.escapes) codes.push(i < glob.length ? glob.charCodeAt(i++) : c)
    else if (c === 0x5b /* [ */) {
      const set = bracket(glob, i, syntax)
      codes.push(SET + sets.length)
      sets.push(set.members)
      i = set.end
    } else codes.push(c)
  }
  return { codes, sets }
}

/** Tokens matching exactly these latin1 bytes (a substituted value; a filter that is no glob). */
export function literalTokens(latin1: string): GlobTokens {
  const codes: number[] = []
  for (let i = 0; i < latin1.length; i++) codes.push(latin1.charCodeAt(i) & 0xff)
  return { codes, sets: [] }
}

/** Where a paused match stands: the two pointers and the last star's. */
export interface GlobProgress {
  readonly p: number
  readonly k: number
  readonly starP: number
  readonly starK: number
}

/** A match decided (`matched`), or paused at `progress` after using its budget; `steps` it took. */
export type GlobStep =
  { done: true; matched: boolean; steps: number } | { done: false; progress: GlobProgress; steps: number }

/** A compiled glob over latin1 key strings. */
export class Glob {
  private readonly codes: Int32Array
  private readonly sets: Uint8Array[]

  /** Joins token lists into one anchored glob. Throws PatternError over MAX_GLOB_STARS stars. */
  constructor(parts: readonly GlobTokens[]) {
    const codes: number[] = []
    const sets: Uint8Array[] = []
    let stars = 0
    for (const part of parts) {
      for (const code of part.codes) {
        if (code === STAR) {
          // A run of stars matches what one does.
          if (codes[codes.length - 1] === STAR) continue
          stars++
        }
        codes.push(code >= SET ? SET + sets.length + (code - SET) : code)
      }
      sets.push(...part.sets)
    }
    if (stars > MAX_GLOB_STARS)
      throw new PatternError(`the pattern has ${stars} stars; at most ${MAX_GLOB_STARS} are taken`)
    this.codes = Int32Array.from(codes)
    this.sets = sets
  }

  /** Whether the whole key matches; at most (tokens + 1) × (key bytes + 1) steps. */
  matches(key: string): boolean {
    const step = this.match(key, Infinity)
    return step.done && step.matched
  }

  /**
   * The match of `key` from `from` (the start when absent) for at most `budget` steps: decided, or
   * paused where it stands (pass that progress back with the same key to go on).
   */
  match(key: string, budget: number, from?: GlobProgress): GlobStep {
    const codes = this.codes
    const m = codes.length
    const n = key.length
    let p = from?.p ?? 0
    let k = from?.k ?? 0
    let starP = from?.starP ?? -1
    let starK = from?.starK ?? 0
    let steps = 0
    while (k < n) {
      if (++steps > budget) return { done: false, progress: { p, k, starP, starK }, steps: steps - 1 }
      const code = p < m ? codes[p]! : -1
      if (code === STAR) {
        starP = p++
        starK = k
      } else if (code >= 0 && this.one(code, key.charCodeAt(k))) {
        p++
        k++
      } else if (starP >= 0) {
        // Let the last star take one byte more and try the rest from there.
        p = starP + 1
        k = ++starK
      } else return { done: true, matched: false, steps }
    }
    while (p < m && codes[p] === STAR) p++
    return { done: true, matched: p === m, steps }
  }

  private one(code: number, byte: number): boolean {
    if (code < ANY) return code === byte
    if (code === ANY) return true
    return this.sets[code - SET]![byte] === 1
  }
}

/** A glob of one syntax, compiled. Throws PatternError. */
export function compileGlob(glob: string, syntax: GlobSyntax): Glob {
  return new Glob([globTokens(glob, syntax)])
}

/** A set starting after its `[`: its members and where it ends (after its `]`). */
function bracket(glob: string, start: number, syntax: GlobSyntax): { members: Uint8Array; end: number } {
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
  const members = new Uint8Array(256)
  let empty = true
  for (let first = true; ; first = false) {
    if (i >= glob.length) throw new PatternError(syntax.unclosed(at))
    if (glob[i] === ']' && !(first && syntax.leadingBracketMember)) {
      i++
      break
    }
    const from = glob[i]!
    let lo = member()
    let hi = lo
    if (glob[i] === '-' && i + 1 < glob.length && glob[i + 1] !== ']') {
      const to = glob[i + 1]!
      i++
      hi = member()
      if (hi < lo) {
        if (syntax.reversedRange === 'refuse') throw new PatternError(syntax.backwards(`${from}-${to}`, at))
        ;[lo, hi] = [hi, lo]
      }
    }
    for (let b = lo; b <= Math.min(hi, 255); b++) members[b] = 1
    empty = false
  }
  if (empty) throw new PatternError(syntax.emptySet(at))
  if (negated) for (let b = 0; b < 256; b++) members[b] = members[b] === 1 ? 0 : 1
  return { members, end: i }
}

export type ScanGlob = { ok: true; glob: Glob } | { ok: false; reason: string }

/** A SCAN pattern compiled once per scan; a pattern it refuses is the reason, for the `-ERR` answer. */
export function compileScanGlob(pattern: Buffer): ScanGlob {
  try {
    return { ok: true, glob: compileGlob(pattern.toString('latin1'), SCAN_GLOB) }
  } catch (err) {
    if (err instanceof PatternError) return { ok: false, reason: err.message }
    throw err
  }
}

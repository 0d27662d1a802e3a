import { compileGlob, Glob, globTokens, KEY_PATTERN_GLOB, literalTokens, type GlobTokens } from './glob'
import { parseTemplate, PatternError, principalValue, type Principal, type TemplatePart } from './principal'

/**
 * State store key patterns as a BrokerAuthorization or Broker persistence resource writes them.
 * Keys are bytes; here they are latin1 strings (one char per byte), so a pattern is matched byte by
 * byte. `keyType`:
 * - `Pattern`: a glob. `*` any bytes (also none, also `/`), `?` exactly one byte, `[a-z0-9]` one
 *   byte of the set, `[!…]` or `[^…]` one byte not in it; `{principal.…}` substitutions, whose
 *   values are literal (a client id `a*` matches only `a*`).
 * - `String`: the key exactly, as UTF-8; `*` and braces are literal.
 * - `Binary`: the key exactly, given as base64.
 * The AIO docs write the key types in either case (`Pattern` and `pattern`): both are taken.
 * The glob is the one in glob.ts (KEY_PATTERN_GLOB); the substitutions are written here.
 */

export type KeyType = 'Pattern' | 'String' | 'Binary'

export function keyTypeOf(text: unknown): KeyType | null {
  if (typeof text !== 'string') return null
  switch (text.toLowerCase()) {
    case 'pattern':
      return 'Pattern'
    case 'string':
      return 'String'
    case 'binary':
      return 'Binary'
    default:
      return null
  }
}

const latin1 = (utf8Text: string) => Buffer.from(utf8Text, 'utf8').toString('latin1')
/**
 * A substituted value is literal: its glob characters match themselves, as AIO 2606 escapes them
 * (a client id `a*` reaches its own keys under `dev/{principal.clientId}`, not every key). One
 * that is empty or holds a `/` makes the rule not match: a client id `line-1/cfg` must not reach
 * into `dev/line-1/…` (as topic rules refuse `/`, `+` and `#`).
 */
export const UNSAFE_SUBSTITUTION = /\//

/** How many compiled patterns one substituted key pattern keeps (one per principal seen, bounded). */
const CACHE_LIMIT = 1024

/** One key of a resource, compiled; `matches` takes the key as latin1 and who asks. */
export class KeyPattern {
  private readonly parts: TemplatePart[] | null
  private readonly fixed: Glob | string | null
  private readonly textTokens = new Map<TemplatePart, GlobTokens>()
  private readonly cache = new Map<string, Glob | null>()

  /** Throws PatternError when the key is not valid for its type. */
  constructor(
    readonly keyType: KeyType,
    readonly source: string,
    options: { substitutions: boolean },
  ) {
    if (keyType === 'Binary') {
      const compact = source.replace(/\s+/g, '')
      if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}(?:==)?|[A-Za-z0-9+/]{3}=?)?$/.test(compact))
        throw new PatternError('a Binary key must be base64')
      this.fixed = Buffer.from(compact, 'base64').toString('latin1')
      this.parts = null
    } else if (keyType === 'String') {
      this.fixed = latin1(source)
      this.parts = null
    } else {
      const parts = parseTemplate(source)
      const substituted = parts.some((p) => p.kind === 'principal')
      if (substituted && !options.substitutions)
        throw new PatternError('a {principal.…} substitution has no meaning here: no client is asking')
      // Checked now, so that a bad glob stops the start rather than a request.
      for (const p of parts) if (p.kind === 'text') this.textTokens.set(p, globTokens(latin1(p.text), KEY_PATTERN_GLOB))
      // The stars of the text parts, counted now too.
      if (substituted) new Glob([...this.textTokens.values()])
      this.parts = substituted ? parts : null
      this.fixed = substituted ? null : compileGlob(latin1(source), KEY_PATTERN_GLOB)
    }
  }

  matches(key: string, principal?: Principal): boolean {
    if (typeof this.fixed === 'string') return key === this.fixed
    if (this.fixed) return this.fixed.matches(key)
    const glob = principal ? this.forPrincipal(principal) : null
    return glob !== null && glob.matches(key)
  }

  private forPrincipal(principal: Principal): Glob | null {
    const parts = this.parts!
    // The principal's values, joined by a byte no MQTT string carries, name its compiled pattern.
    let cacheKey = ''
    for (const part of parts) {
      if (part.kind !== 'principal') continue
      const v = principalValue(principal, part.field)
      if (v === undefined) return null
      cacheKey += `${v}\u0000`
    }
    const cached = this.cache.get(cacheKey)
    if (cached !== undefined) return cached
    let glob: Glob | null = null
    const tokens: GlobTokens[] = []
    let safe = true
    for (const part of parts) {
      if (part.kind === 'text') tokens.push(this.textTokens.get(part)!)
      else {
        const v = principalValue(principal, part.field)!
        if (v === '' || UNSAFE_SUBSTITUTION.test(v)) safe = false
        tokens.push(literalTokens(latin1(v)))
      }
    }
    if (safe) glob = new Glob(tokens)
    if (this.cache.size >= CACHE_LIMIT) this.cache.delete(this.cache.keys().next().value!)
    this.cache.set(cacheKey, glob)
    return glob
  }
}

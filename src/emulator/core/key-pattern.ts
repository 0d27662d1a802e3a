import { globSource, globToRegExp, KEY_PATTERN_GLOB } from './glob'
import { parseTemplate, PatternError, principalValue, substituteParts, type Principal, type TemplatePart } from './principal'

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
/** A substituted value is literal: each of its bytes stands for itself. */
const literalSource = (latin1Text: string) => latin1Text.replace(/[\s\S]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)

/** How many compiled patterns one substituted key pattern keeps (one per principal seen, bounded). */
const CACHE_LIMIT = 1024

/** One key of a resource, compiled; `matches` takes the key as latin1 and who asks. */
export class KeyPattern {
  private readonly parts: TemplatePart[] | null
  private readonly fixed: RegExp | string | null
  private readonly cache = new Map<string, RegExp>()

  /** Throws PatternError when the key is not valid for its type. */
  constructor(
    readonly keyType: KeyType,
    readonly source: string,
    options: { substitutions: boolean },
  ) {
    if (keyType === 'Binary') {
      const compact = source.replace(/\s+/g, '')
      if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}(?:==)?|[A-Za-z0-9+/]{3}=?)?$/.test(compact)) throw new PatternError('a Binary key must be base64')
      this.fixed = Buffer.from(compact, 'base64').toString('latin1')
      this.parts = null
    } else if (keyType === 'String') {
      this.fixed = latin1(source)
      this.parts = null
    } else {
      const parts = parseTemplate(source)
      const substituted = parts.some((p) => p.kind === 'principal')
      if (substituted && !options.substitutions) throw new PatternError('a {principal.…} substitution has no meaning here: no client is asking')
      // Checked now, so that a bad glob stops the start rather than a request.
      for (const p of parts) if (p.kind === 'text') globSource(latin1(p.text), KEY_PATTERN_GLOB)
      this.parts = substituted ? parts : null
      this.fixed = substituted ? null : globToRegExp(latin1(source), KEY_PATTERN_GLOB)
    }
  }

  matches(key: string, principal?: Principal): boolean {
    if (typeof this.fixed === 'string') return key === this.fixed
    if (this.fixed) return this.fixed.test(key)
    const re = principal ? this.forPrincipal(principal) : null
    return re !== null && re.test(key)
  }

  private forPrincipal(principal: Principal): RegExp | null {
    const parts = this.parts!
    // The principal's values, joined by a byte no MQTT string carries, name its compiled pattern.
    let cacheKey = ''
    for (const part of parts) {
      if (part.kind !== 'principal') continue
      const v = principalValue(principal, part.field)
      if (v === undefined) return null
      cacheKey += `${v}\u0000`
    }
    let re = this.cache.get(cacheKey)
    if (re) return re
    const sources = substituteParts(
      parts,
      principal,
      (t) => globSource(latin1(t), KEY_PATTERN_GLOB),
      (v) => literalSource(latin1(v)),
    )!
    re = new RegExp(`^${sources.join('')}$`)
    if (this.cache.size >= CACHE_LIMIT) this.cache.delete(this.cache.keys().next().value!)
    this.cache.set(cacheKey, re)
    return re
  }
}

import { topicMatches } from '../../protocol'
import { parseTemplate, PatternError, substituteParts, type Principal, type TemplatePart } from './principal'

/**
 * A topic of a BrokerAuthorization `Publish` or `Subscribe` resource: an MQTT topic filter (`+` one
 * level, `#` the rest) with `{principal.…}` substitutions. A substituted value holding `/`, `+` or
 * `#` would reach into other levels or widen the grant: such a principal is granted nothing by it.
 */
export class TopicTemplate {
  private readonly parts: TemplatePart[]

  constructor(readonly source: string) {
    if (source.length === 0) throw new PatternError('a topic may not be empty')
    this.parts = parseTemplate(source)
    const levels = source.split('/')
    levels.forEach((level, i) => {
      if (level.includes('#') && (level !== '#' || i !== levels.length - 1))
        throw new PatternError('"#" must be a whole level, the last one')
      if (level.includes('+') && level !== '+') throw new PatternError('"+" must be a whole level')
    })
  }

  /** The filter for this principal, or null when a substitution has no value or an unsafe one. */
  private filterFor(principal: Principal): string[] | null {
    const texts = substituteParts(
      this.parts,
      principal,
      (t) => t,
      (v) => (/[/+#]/.test(v) || v === '' ? null : v),
    )
    if (texts === null || texts.some((t) => t === null)) return null
    return (texts as string[]).join('').split('/')
  }

  /** Whether a PUBLISH to `topic` is within this filter. */
  allowsTopic(principal: Principal, topic: string): boolean {
    const filter = this.filterFor(principal)
    return filter !== null && topicMatches(filter, topic.split('/'))
  }

  /** Whether a SUBSCRIBE to `requested` asks for no more than this filter grants. */
  coversFilter(principal: Principal, requested: string): boolean {
    const granted = this.filterFor(principal)
    if (granted === null) return false
    const asked = requested.split('/')
    for (let i = 0; i < granted.length; i++) {
      if (granted[i] === '#') return true
      if (i >= asked.length) return false
      if (asked[i] === '#') return false
      if (granted[i] === '+') continue
      if (asked[i] === '+' || granted[i] !== asked[i]) return false
    }
    return granted.length === asked.length
  }
}

import { RE2JS } from 're2js'

/**
 * The regular expressions of a bounded JSONata expression, matched by RE2 (re2js, pure JavaScript)
 * in time linear in the text: V8's RegExp backtracks, and `$match(value, /^(a+)+$/)` over a value
 * whoever may write the key chooses held the runtime for seconds, within one step the expression's
 * time bound never sees. It offers what JSONata asks of its RegexEngine: `lastIndex` and `exec`.
 * RE2's syntax has no backreferences or lookaround: such an expression fails when it is evaluated.
 */
export class LinearRegex {
  lastIndex = 0
  private readonly re: RE2JS
  private text: string | null = null
  private matcher: ReturnType<RE2JS['matcher']> | null = null

  constructor(source: RegExp) {
    let flags = 0
    if (source.flags.includes('i')) flags |= RE2JS.CASE_INSENSITIVE
    if (source.flags.includes('m')) flags |= RE2JS.MULTILINE
    if (source.flags.includes('s')) flags |= RE2JS.DOTALL
    this.re = RE2JS.compile(source.source, flags)
  }

  exec(text: string): RegExpExecArray | null {
    // One matcher per text: making one reads the whole text, and $split or $replace call exec once per match.
    if (this.text !== text || !this.matcher) {
      this.text = text
      this.matcher = this.re.matcher(text)
    }
    const m = this.matcher
    if (this.lastIndex > text.length || !m.find(this.lastIndex)) {
      this.lastIndex = 0
      return null
    }
    const groups: Array<string | undefined> = [m.group(0) ?? '']
    for (let i = 1; i <= m.groupCount(); i++) groups.push(m.group(i) ?? undefined)
    const found = Object.assign(groups, { index: m.start(), input: text }) as unknown as RegExpExecArray
    this.lastIndex = m.end()
    return found
  }
}

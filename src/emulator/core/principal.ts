/**
 * Who a client is to an authorization policy, as the AIO broker sees it after authentication: its
 * MQTT client id, the user name it authenticated with (if any) and the attributes its credentials
 * carry (on a cluster: an X.509 certificate's or a service account's; in the emulator: those given
 * to an embedded broker user, see docs/emulator.md).
 */
export interface Principal {
  clientId: string
  username?: string
  attributes?: Readonly<Record<string, string>>
}

/** The principal for a log line: `client "a", user "alice", attributes {"city":"seattle"}`. */
export function describePrincipal(p: Principal): string {
  const parts = [`client ${JSON.stringify(p.clientId)}`]
  if (p.username !== undefined) parts.push(`user ${JSON.stringify(p.username)}`)
  if (p.attributes && Object.keys(p.attributes).length > 0) parts.push(`attributes ${JSON.stringify(p.attributes)}`)
  return parts.join(', ')
}

/** A `{principal.…}` substitution in a key pattern or a topic. */
export type PrincipalField = { kind: 'clientId' } | { kind: 'username' } | { kind: 'attribute'; name: string }

/** The principal's text for a substitution; undefined when it has none (the pattern then matches nothing). */
export function principalValue(principal: Principal, field: PrincipalField): string | undefined {
  switch (field.kind) {
    case 'clientId':
      return principal.clientId
    case 'username':
      return principal.username
    case 'attribute':
      return principal.attributes && Object.hasOwn(principal.attributes, field.name)
        ? principal.attributes[field.name]
        : undefined
  }
}

export type TemplatePart = { kind: 'text'; text: string } | { kind: 'principal'; field: PrincipalField; source: string }

/** A mistake in a pattern, with what is wrong; the caller says where. */
export class PatternError extends Error {}

/**
 * Splits a key pattern or topic into text and `{principal.clientId}`, `{principal.username}`,
 * `{principal.attributes.NAME}`. Braces are reserved for these (AIO docs): any other use is an error.
 */
export function parseTemplate(source: string): TemplatePart[] {
  const parts: TemplatePart[] = []
  let text = ''
  let i = 0
  while (i < source.length) {
    const ch = source[i]!
    if (ch === '}')
      throw new PatternError(
        `"}" at position ${i} closes nothing; braces are reserved for {principal.clientId}, {principal.username} ` +
          `and {principal.attributes.NAME}`,
      )
    if (ch !== '{') {
      text += ch
      i++
      continue
    }
    const end = source.indexOf('}', i)
    if (end < 0) throw new PatternError(`"{" at position ${i} is not closed`)
    const inner = source.slice(i + 1, end)
    const field = fieldOf(inner)
    if (!field)
      throw new PatternError(
        `{${inner}} is not a substitution: use {principal.clientId}, {principal.username} or ` +
          `{principal.attributes.NAME}`,
      )
    if (text) parts.push({ kind: 'text', text })
    text = ''
    parts.push({ kind: 'principal', field, source: `{${inner}}` })
    i = end + 1
  }
  if (text) parts.push({ kind: 'text', text })
  return parts
}

function fieldOf(inner: string): PrincipalField | null {
  if (inner === 'principal.clientId') return { kind: 'clientId' }
  if (inner === 'principal.username') return { kind: 'username' }
  const m = /^principal\.attributes\.([^{}]+)$/.exec(inner)
  return m ? { kind: 'attribute', name: m[1]! } : null
}

/** The template with the principal's values in place, or null when the principal lacks one of them. */
export function substituteParts<T>(
  parts: TemplatePart[],
  principal: Principal,
  text: (t: string) => T,
  value: (v: string) => T,
): T[] | null {
  const out: T[] = []
  for (const part of parts) {
    if (part.kind === 'text') {
      out.push(text(part.text))
      continue
    }
    const v = principalValue(principal, part.field)
    if (v === undefined) return null
    out.push(value(v))
  }
  return out
}

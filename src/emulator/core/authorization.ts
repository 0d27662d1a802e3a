
/**
 * State store authorization, modelled on the AIO broker's BrokerAuthorization rules: each rule names
 * principals (client ids, glob patterns) and the state store keys they may read and/or write.
 *
 * ```json
 * { "rules": [ {
 *     "principals": { "clientIds": ["sensor-*"] },
 *     "stateStoreResources": [
 *       { "method": "Read",      "keyType": "Pattern", "keys": ["config/*"] },
 *       { "method": "ReadWrite", "keyType": "Pattern", "keys": ["{principal.clientId}/*"] },
 *       { "method": "Write",     "keyType": "Binary",  "keys": ["AAEC"] } ] } ] }
 * ```
 * `keyType` is `Pattern` (glob: `*` any bytes, `?` one byte; the default), `String` (exact) or
 * `Binary` (exact, base64). `{principal.clientId}` in a key is replaced by the caller's client id.
 * A top-level array of rules is accepted too. Anything not granted is refused.
 */

export type Access = 'read' | 'write'
export type Method = 'Read' | 'Write' | 'ReadWrite'
export type KeyType = 'Pattern' | 'String' | 'Binary'

export interface StateStoreResource {
  method: Method
  keyType?: KeyType
  keys: string[]
}

export interface AuthorizationRule {
  principals: { clientIds?: string[]; usernames?: string[]; attributes?: unknown[] }
  stateStoreResources?: StateStoreResource[]
  brokerResources?: unknown
}

interface CompiledResource {
  read: boolean
  write: boolean
  /** Keys in latin1 (one char per byte); a matcher per pattern. */
  matchers: Array<(key: string, clientId: string) => boolean>
}

interface CompiledRule {
  clients: RegExp[]
  resources: CompiledResource[]
}

const CLIENT_PLACEHOLDER = '{principal.clientId}'

export class Authorizer {
  private readonly rules: CompiledRule[]

  constructor(rules: AuthorizationRule[]) {
    this.rules = rules.map(compileRule)
  }

  /** The rules of an authorization file's text; `source` names the file in errors. */
  static fromText(text: string, source: string): Authorizer {
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch (err) {
      throw new Error(`cannot read the authorization file ${source}: ${(err as Error).message}`)
    }
    return new Authorizer(validateRules(parsed, source))
  }

  allows(clientId: string, key: Buffer, access: Access): boolean {
    const id = key.toString('latin1')
    for (const rule of this.rules) {
      if (!rule.clients.some((re) => re.test(clientId))) continue
      for (const resource of rule.resources) {
        if (!resource[access]) continue
        if (resource.matchers.some((m) => m(id, clientId))) return true
      }
    }
    return false
  }
}

function compileRule(rule: AuthorizationRule): CompiledRule {
  return {
    clients: (rule.principals.clientIds ?? []).map((p) => globToRegExp(p)),
    resources: (rule.stateStoreResources ?? []).map((r) => ({
      read: r.method === 'Read' || r.method === 'ReadWrite',
      write: r.method === 'Write' || r.method === 'ReadWrite',
      matchers: r.keys.map((k) => keyMatcher(r.keyType ?? 'Pattern', k)),
    })),
  }
}

function keyMatcher(type: KeyType, key: string): (id: string, clientId: string) => boolean {
  if (type === 'Binary') {
    const exact = Buffer.from(key, 'base64').toString('latin1')
    return (id) => id === exact
  }
  const latin1 = Buffer.from(key, 'utf8').toString('latin1')
  if (type === 'String') {
    if (!key.includes(CLIENT_PLACEHOLDER)) return (id) => id === latin1
    return (id, clientId) => id === substitute(latin1, clientId)
  }
  if (!key.includes(CLIENT_PLACEHOLDER)) {
    const re = globToRegExp(latin1)
    return (id) => re.test(id)
  }
  // One compiled pattern per client id seen, bounded so a stream of new ids cannot grow it forever.
  const cache = new Map<string, RegExp>()
  return (id, clientId) => {
    let re = cache.get(clientId)
    if (!re) {
      re = globToRegExp(substitute(latin1, clientId), true)
      if (cache.size >= 1024) cache.delete(cache.keys().next().value!)
      cache.set(clientId, re)
    }
    return re.test(id)
  }
}

/** The client id in the latin1 space of keys; its `*` and `?` stay literal. */
function substitute(pattern: string, clientId: string): string {
  return pattern.split(Buffer.from(CLIENT_PLACEHOLDER, 'utf8').toString('latin1')).join(literal(Buffer.from(clientId, 'utf8').toString('latin1')))
}

// Private-use markers keep substituted text out of the glob syntax; they cannot occur in latin1 keys.
const STAR = '\uE000'
const QUESTION = '\uE001'

function literal(text: string): string {
  return text.replace(/\*/g, STAR).replace(/\?/g, QUESTION)
}

/** A key glob (`*` any bytes, `?` one byte) over latin1 key strings. */
export function globToRegExp(glob: string, hasLiterals = false): RegExp {
  let source = ''
  for (const ch of glob) {
    if (ch === '*') source += '[^]*'
    else if (ch === '?') source += '[^]'
    else if (hasLiterals && ch === STAR) source += '\\*'
    else if (hasLiterals && ch === QUESTION) source += '\\?'
    else source += ch.replace(/[\\^$.|+()[\]{}]/g, '\\$&')
  }
  return new RegExp(`^${source}$`)
}

function validateRules(parsed: unknown, path: string): AuthorizationRule[] {
  const rules = Array.isArray(parsed) ? parsed : (parsed as { rules?: unknown } | null)?.rules
  const bad = (why: string) => new Error(`the authorization file ${path} is invalid: ${why}`)
  if (!Array.isArray(rules)) throw bad('expected {"rules": [...]} or an array of rules')
  rules.forEach((rule: unknown, i) => {
    const r = rule as Partial<AuthorizationRule> | null
    if (!r || typeof r !== 'object') throw bad(`rule ${i} is not an object`)
    if (!r.principals || typeof r.principals !== 'object') throw bad(`rule ${i} has no "principals"`)
    const ids = r.principals.clientIds
    if (ids !== undefined && (!Array.isArray(ids) || !ids.every((x) => typeof x === 'string'))) throw bad(`rule ${i}: "principals.clientIds" must be a list of strings`)
    const resources = r.stateStoreResources
    if (resources === undefined) return
    if (!Array.isArray(resources)) throw bad(`rule ${i}: "stateStoreResources" must be a list`)
    resources.forEach((res: Partial<StateStoreResource> | null, j) => {
      const where = `rule ${i}, stateStoreResources[${j}]`
      if (!res || typeof res !== 'object') throw bad(`${where} is not an object`)
      if (res.method !== 'Read' && res.method !== 'Write' && res.method !== 'ReadWrite') throw bad(`${where}: "method" must be Read, Write or ReadWrite`)
      if (res.keyType !== undefined && res.keyType !== 'Pattern' && res.keyType !== 'String' && res.keyType !== 'Binary') {
        throw bad(`${where}: "keyType" must be Pattern, String or Binary`)
      }
      if (!Array.isArray(res.keys) || !res.keys.every((k) => typeof k === 'string')) throw bad(`${where}: "keys" must be a list of strings`)
    })
  })
  return rules as AuthorizationRule[]
}

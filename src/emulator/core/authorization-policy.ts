import { Fields } from './resource-error'
import { KeyPattern, keyTypeOf } from './key-pattern'
import { parseTemplate, substituteParts, type Principal } from './principal'
import { TopicTemplate } from './topic-filter'

/**
 * The `authorizationPolicies` of a BrokerAuthorization resource, as the AIO broker applies them:
 * allow-only rules; a rule applies to a client when any one of its principals matches (a client id,
 * a user name, or every entry of one attributes map); what no applying rule allows is denied.
 * Decisions say which rule decided, for the log and the key inspector. Pure: no file, no broker.
 */

export type Access = 'read' | 'write'
export type StateStoreMethod = 'Read' | 'Write' | 'ReadWrite'
export type BrokerMethod = 'Connect' | 'Publish' | 'Subscribe'

export interface Decision {
  allowed: boolean
  /** The rule and resource that allowed it (`my-policy rules[1].stateStoreResources[0] …`); null when nothing did. */
  rule: string | null
}

interface CompiledStateStoreResource {
  where: string
  read: boolean
  write: boolean
  keys: KeyPattern[]
}

interface CompiledBrokerResource {
  where: string
  method: BrokerMethod
  topics: TopicTemplate[]
  /** The resource's own `clientIds` (AIO: "further limit access based on client ID"); empty: any. */
  clientIds: ClientIdTemplate[]
}

interface CompiledRule {
  where: string
  clientIds: NameMatcher[]
  usernames: NameMatcher[]
  attributes: Array<Record<string, string>>
  broker: CompiledBrokerResource[]
  stateStore: CompiledStateStoreResource[]
}

/** One `authorizationPolicies` object found in a document, with where it is. */
export interface PolicySource {
  /** `metadata.name` of its resource, for messages; absent for a bare object. */
  name?: string
  value: unknown
  fields: Fields
}

export class AuthorizationPolicy {
  private constructor(private readonly rules: CompiledRule[]) {}

  /** Every policy of a file's documents in one, their rules in order. Throws ResourceError. */
  static compile(sources: PolicySource[]): AuthorizationPolicy {
    return new AuthorizationPolicy(sources.flatMap(compilePolicy))
  }

  get ruleCount(): number {
    return this.rules.length
  }

  /** Whether any rule names broker resources: a policy without any would let no client connect to an AIO broker. */
  get grantsBrokerResources(): boolean {
    return this.rules.some((r) => r.broker.length > 0)
  }

  /** May this principal read or write this key (latin1)? GET and KEYNOTIFY read; SET, DEL and VDEL write. */
  decideKey(principal: Principal, access: Access, key: string): Decision {
    for (const rule of this.rules) {
      if (!appliesTo(rule, principal)) continue
      for (const resource of rule.stateStore) {
        if (!resource[access]) continue
        const hit = resource.keys.find((k) => k.matches(key, principal))
        if (hit) return { allowed: true, rule: `${resource.where} (${JSON.stringify(hit.source)})` }
      }
    }
    return { allowed: false, rule: null }
  }

  decideConnect(principal: Principal): Decision {
    return this.decideBroker(principal, 'Connect', () => true)
  }

  decidePublish(principal: Principal, topic: string): Decision {
    return this.decideBroker(principal, 'Publish', (t) => t.allowsTopic(principal, topic))
  }

  decideSubscribe(principal: Principal, filter: string): Decision {
    return this.decideBroker(principal, 'Subscribe', (t) => t.coversFilter(principal, filter))
  }

  private decideBroker(
    principal: Principal,
    method: BrokerMethod,
    topicAllows: (t: TopicTemplate) => boolean,
  ): Decision {
    for (const rule of this.rules) {
      if (!appliesTo(rule, principal)) continue
      for (const resource of rule.broker) {
        if (resource.method !== method) continue
        if (resource.clientIds.length > 0 && !resource.clientIds.some((c) => c(principal))) continue
        if (method === 'Connect') return { allowed: true, rule: resource.where }
        const hit = resource.topics.find(topicAllows)
        if (hit) return { allowed: true, rule: `${resource.where} (${JSON.stringify(hit.source)})` }
      }
    }
    return { allowed: false, rule: null }
  }
}

function appliesTo(rule: CompiledRule, principal: Principal): boolean {
  if (rule.clientIds.some((matches) => matches(principal.clientId))) return true
  const username = principal.username
  if (username !== undefined && rule.usernames.some((matches) => matches(username))) return true
  const attributes = principal.attributes
  if (!attributes) return false
  return rule.attributes.some((wanted) =>
    Object.entries(wanted).every(([name, value]) => Object.hasOwn(attributes, name) && attributes[name] === value),
  )
}

const POLICY_FIELDS = ['cache', 'rules'] as const
const RULE_FIELDS = ['principals', 'brokerResources', 'stateStoreResources'] as const
const PRINCIPAL_FIELDS = ['clientIds', 'usernames', 'attributes'] as const
const STATE_STORE_FIELDS = ['method', 'keyType', 'keys'] as const
const BROKER_FIELDS = ['method', 'topics', 'clientIds'] as const

function compilePolicy(source: PolicySource): CompiledRule[] {
  const f = source.fields
  const policy = f.object(source.value, POLICY_FIELDS)
  if (policy.cache !== undefined) f.at('cache').oneOf(policy.cache, ['Enabled', 'Disabled'] as const)
  if (policy.rules === undefined) f.at('rules').fail('is missing')
  const prefix = source.name ? `${source.name} ` : ''
  return f
    .at('rules')
    .list(policy.rules)
    .map((rule, i) => compileRule(rule, f.at('rules', i), `${prefix}rules[${i}]`))
}

function compileRule(value: unknown, f: Fields, where: string): CompiledRule {
  const rule = f.object(value, RULE_FIELDS)
  const principals = f
    .at('principals')
    .object(rule.principals ?? f.at('principals').fail('is missing'), PRINCIPAL_FIELDS)
  const pf = f.at('principals')
  const clientIds =
    principals.clientIds === undefined ? [] : pf.at('clientIds').strings(principals.clientIds).map(nameGlob)
  const usernames =
    principals.usernames === undefined ? [] : pf.at('usernames').strings(principals.usernames).map(nameGlob)
  const attributes =
    principals.attributes === undefined
      ? []
      : pf
          .at('attributes')
          .list(principals.attributes)
          .map((map, i) => {
            const af = pf.at('attributes', i)
            const entries = af.object(map, Object.keys((map as object | null) ?? {}))
            return Object.fromEntries(
              Object.entries(entries).map(([k, v]) => [
                k,
                typeof v === 'string' ? v : af.at(k).fail('must be a string'),
              ]),
            )
          })
  if (clientIds.length + usernames.length + attributes.length === 0)
    pf.fail('names no principal: give clientIds, usernames or attributes')

  const broker =
    rule.brokerResources === undefined
      ? []
      : f
          .at('brokerResources')
          .list(rule.brokerResources)
          .map((r, j) => compileBrokerResource(r, f.at('brokerResources', j), `${where}.brokerResources[${j}]`))
  const stateStore =
    rule.stateStoreResources === undefined
      ? []
      : f
          .at('stateStoreResources')
          .list(rule.stateStoreResources)
          .map((r, j) =>
            compileStateStoreResource(r, f.at('stateStoreResources', j), `${where}.stateStoreResources[${j}]`),
          )
  return { where, clientIds, usernames, attributes, broker, stateStore }
}

function compileBrokerResource(value: unknown, f: Fields, where: string): CompiledBrokerResource {
  const r = f.object(value, BROKER_FIELDS)
  const method = f.at('method').oneOf(r.method, ['Connect', 'Publish', 'Subscribe'] as const)
  const clientIds =
    r.clientIds === undefined
      ? []
      : f
          .at('clientIds')
          .strings(r.clientIds)
          .map((c, k) => f.at('clientIds', k).pattern(() => clientIdTemplate(c)))
  if (method === 'Connect') {
    // The portal's JSON writes `"topics": []` on Connect.
    if (r.topics !== undefined && f.at('topics').strings(r.topics).length > 0)
      f.at('topics').fail('Connect takes no topics')
    return { where: `${where} Connect`, method, topics: [], clientIds }
  }
  const topics = f
    .at('topics')
    .strings(r.topics ?? f.at('topics').fail(`is missing: ${method} needs the topics it allows`))
  if (topics.length === 0) f.at('topics').fail('is empty')
  return {
    where: `${where} ${method}`,
    method,
    topics: topics.map((t, k) => f.at('topics', k).pattern(() => new TopicTemplate(t))),
    clientIds,
  }
}

function compileStateStoreResource(value: unknown, f: Fields, where: string): CompiledStateStoreResource {
  const r = f.object(value, STATE_STORE_FIELDS)
  const method = f.at('method').oneOf(r.method, ['Read', 'Write', 'ReadWrite'] as const)
  const keyType =
    r.keyType === undefined
      ? 'Pattern'
      : (keyTypeOf(r.keyType) ??
        f.at('keyType').fail(`must be Pattern, String or Binary (either case), not ${JSON.stringify(r.keyType)}`))
  const keys = f.at('keys').strings(r.keys ?? f.at('keys').fail('is missing'))
  return {
    where: `${where} ${method} ${keyType}`,
    read: method !== 'Write',
    write: method !== 'Read',
    keys: keys.map((k, i) => f.at('keys', i).pattern(() => new KeyPattern(keyType, k, { substitutions: true }))),
  }
}

type NameMatcher = (name: string) => boolean
type ClientIdTemplate = (principal: Principal) => boolean

/**
 * A resource's `clientIds` entry: a client id glob (as in principals) after the principal's values
 * are put in, literally (`{principal.attributes.building}*`: ids that begin with the building).
 */
function clientIdTemplate(source: string): ClientIdTemplate {
  const parts = parseTemplate(source)
  if (parts.every((p) => p.kind === 'text')) {
    const matches = nameGlob(source)
    return (principal) => matches(principal.clientId)
  }
  return (principal) => {
    const texts = substituteParts(parts, principal, globSource, literalSource)
    return texts !== null && new RegExp(`^${texts.join('')}$`, 'u').test(principal.clientId)
  }
}

const literalSource = (text: string) => text.replace(/[\\^$.|?*+()[\]{}/]/g, '\\$&')
const globSource = (text: string) =>
  [...text].map((ch) => (ch === '*' ? '[^]*' : ch === '?' ? '[^]' : literalSource(ch))).join('')

/**
 * Client ids and user names in principals: exact, or a glob with `*` and `?` (the emulator's
 * authorization file always took these; an exact name matches itself either way). Exact names and
 * `prefix*` are compared as strings: they are most rules, and every request tries every rule.
 */
function nameGlob(name: string): NameMatcher {
  const star = name.indexOf('*')
  if (!name.includes('?') && (star < 0 || star === name.length - 1)) {
    if (star < 0) return (n) => n === name
    const prefix = name.slice(0, -1)
    return (n) => n.startsWith(prefix)
  }
  const re = new RegExp(`^${globSource(name)}$`, 'u')
  return (n) => re.test(n)
}

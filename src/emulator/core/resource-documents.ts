import { Fields } from './resource-error'
import type { PolicySource } from './authorization-policy'

/**
 * Finding the resources in the documents of a file (YAML or JSON, one or several): a
 * BrokerAuthorization or Broker resource exactly as `kubectl apply` takes it, or the bare object
 * (`authorizationPolicies`: `{ rules: [...] }`, or a top-level list of rules; `persistence` or
 * `{ persistence: ... }`). Documents of other kinds are left alone, so one file can hold both.
 */

const API_VERSION = /^mqttbroker\.iotoperations\.azure\.com\/v\w+$/

interface Doc {
  value: unknown
  index: number
}

function kindOf(value: unknown): string | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null
  const kind = (value as { kind?: unknown }).kind
  return typeof kind === 'string' ? kind : null
}

function checkApiVersion(doc: Doc): void {
  const apiVersion = (doc.value as { apiVersion?: unknown }).apiVersion
  if (apiVersion !== undefined && (typeof apiVersion !== 'string' || !API_VERSION.test(apiVersion))) {
    new Fields(doc.index, ['apiVersion']).fail(
      `must be mqttbroker.iotoperations.azure.com/v1, not ${JSON.stringify(apiVersion)}`,
    )
  }
}

function nameOf(value: unknown): string | undefined {
  const name = (value as { metadata?: { name?: unknown } }).metadata?.name
  return typeof name === 'string' ? name : undefined
}

export function authorizationSources(documents: unknown[]): PolicySource[] {
  const sources: PolicySource[] = []
  documents.forEach((value, index) => {
    const doc = { value, index }
    const kind = kindOf(value)
    if (kind === 'BrokerAuthorization') {
      checkApiVersion(doc)
      const spec = (value as { spec?: unknown }).spec
      const f = new Fields(index, ['spec'])
      // `listenerRef` (the SDK's mRPC guide, v2beta1) names the listeners it applies to: the emulator has one policy
      // for all.
      const s = f.object(spec, ['authorizationPolicies', 'listenerRef'])
      if (s.authorizationPolicies === undefined) f.at('authorizationPolicies').fail('is missing')
      const name = nameOf(value)
      sources.push({
        ...(name !== undefined ? { name } : {}),
        value: s.authorizationPolicies,
        fields: f.at('authorizationPolicies'),
      })
    } else if (kind === null && Array.isArray(value)) {
      sources.push({ value: { rules: value }, fields: new Fields(index, []) })
    } else if (kind === null && value !== null && typeof value === 'object') {
      const o = value as Record<string, unknown>
      if ('authorizationPolicies' in o)
        sources.push({ value: o.authorizationPolicies, fields: new Fields(index, ['authorizationPolicies']) })
      else if ('rules' in o) sources.push({ value, fields: new Fields(index, []) })
    }
  })
  if (sources.length === 0)
    new Fields(0, []).fail('no BrokerAuthorization resource (or authorizationPolicies object with rules) in the file')
  return sources
}

export interface PersistenceSource {
  value: unknown
  fields: Fields
}

export function persistenceSource(documents: unknown[]): PersistenceSource {
  const found: PersistenceSource[] = []
  documents.forEach((value, index) => {
    const kind = kindOf(value)
    if (kind === 'Broker') {
      checkApiVersion({ value, index })
      const spec = (value as { spec?: unknown }).spec
      const f = new Fields(index, ['spec'])
      if (spec === null || typeof spec !== 'object') f.fail('must be an object (a map)')
      const persistence = (spec as { persistence?: unknown }).persistence
      if (persistence === undefined)
        f.at('persistence').fail('is missing: the emulator reads the state store policy from spec.persistence')
      found.push({ value: persistence, fields: f.at('persistence') })
    } else if (
      kind === null &&
      value !== null &&
      typeof value === 'object' &&
      !Array.isArray(value) &&
      'persistence' in value
    ) {
      found.push({ value: value.persistence, fields: new Fields(index, ['persistence']) })
    }
  })
  if (found.length === 0) new Fields(0, []).fail('no Broker resource (kind: Broker, with spec.persistence) in the file')
  if (found.length > 1) found[1]!.fields.fail('a second Broker resource: a broker has one persistence policy; keep one')
  return found[0]!
}

import { ResourceError } from './resource-error'

/**
 * What a cluster's resources say about who its authenticated clients are, for the emulator's TLS
 * listeners: the `x509Settings.authorizationAttributes` of a BrokerAuthentication (a certificate
 * subject and the attributes it gives), and the `aio-broker-auth/<name>: <value>` annotations of a
 * ServiceAccount, which AIO gives as attributes to the clients authenticating with its tokens.
 */
export interface AuthenticationSources {
  x509: Array<{ subject: string; attributes: Record<string, string> }>
  serviceAccountAttributes: Record<string, string>
}

const ANNOTATION_PREFIX = 'aio-broker-auth/'

export function authenticationSources(documents: unknown[]): AuthenticationSources {
  const out: AuthenticationSources = { x509: [], serviceAccountAttributes: {} }
  documents.forEach((doc, index) => {
    if (!isObject(doc)) return
    if (doc.kind === 'ServiceAccount') {
      const annotations = isObject(doc.metadata) && isObject(doc.metadata.annotations) ? doc.metadata.annotations : {}
      for (const [name, value] of Object.entries(annotations)) {
        if (!name.startsWith(ANNOTATION_PREFIX)) continue
        if (typeof value !== 'string')
          throw new ResourceError(index, ['metadata', 'annotations', name], 'must be a string')
        out.serviceAccountAttributes[name.slice(ANNOTATION_PREFIX.length)] = value
      }
      return
    }
    const spec = doc.kind === 'BrokerAuthentication' ? doc.spec : doc
    if (!isObject(spec) || !Array.isArray(spec.authenticationMethods)) return
    spec.authenticationMethods.forEach((method: unknown, m: number) => {
      const base =
        doc.kind === 'BrokerAuthentication' ? ['spec', 'authenticationMethods', m] : ['authenticationMethods', m]
      if (!isObject(method) || !isObject(method.x509Settings)) return
      const attrs = method.x509Settings.authorizationAttributes
      if (attrs === undefined) return
      if (!isObject(attrs))
        throw new ResourceError(
          index,
          [...base, 'x509Settings', 'authorizationAttributes'],
          'must be a map of names to { subject, attributes }',
        )
      for (const [name, entry] of Object.entries(attrs)) {
        const path = [...base, 'x509Settings', 'authorizationAttributes', name]
        if (!isObject(entry) || typeof entry.subject !== 'string' || entry.subject.trim() === '')
          throw new ResourceError(
            index,
            [...path, 'subject'],
            'must be a distinguished name such as "CN = smart-fan, O = Contoso"',
          )
        if (!isObject(entry.attributes))
          throw new ResourceError(index, [...path, 'attributes'], 'must be a map of attribute names to values')
        const attributes: Record<string, string> = {}
        for (const [k, v] of Object.entries(entry.attributes)) {
          if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean')
            throw new ResourceError(index, [...path, 'attributes', k], 'must be a string')
          attributes[k] = String(v)
        }
        out.x509.push({ subject: entry.subject, attributes })
      }
    })
  })
  return out
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}

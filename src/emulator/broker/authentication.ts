import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { DetailedPeerCertificate, TLSSocket } from 'node:tls'
import type { Identity } from './client-id-owner'

/**
 * How a listener of the embedded broker authenticates its clients, as an AIO BrokerListener port
 * with its BrokerAuthentication:
 * - `x509`: the client's certificate, verified against the listener's CA during the TLS handshake;
 *   its authorization attributes come from the `authorizationAttributes` of a BrokerAuthentication's
 *   `x509Settings`, matched from the client's own certificate up its chain, the first match winning.
 * - `sat`: a Kubernetes service account token with the MQTT 5 authentication method K8S-SAT, one of
 *   the tokens in the listener's token files, read again at every CONNECT (a rotated file counts at
 *   once). Its attributes are those given for the token file.
 */
export type ListenerAuthentication = { method: 'x509'; attributes?: X509AttributeRule[] } | { method: 'sat'; tokenFiles: SatTokenFile[] }

/** One entry of `x509Settings.authorizationAttributes`: a certificate subject and the attributes it gives. */
export interface X509AttributeRule {
  /** A distinguished name as AIO writes it: `CN = smart-fan, OU = Engineering, C = US`. */
  subject: string
  attributes: Record<string, string>
}

/** A file holding an accepted token (a projected service account token), and the authorization attributes of its clients. */
export interface SatTokenFile {
  file: string
  /** As the `aio-broker-auth/<name>: <value>` annotations of the service account give them. */
  attributes?: Record<string, string>
}

/** What authentication found out about a client: refused (with why), or who it is and its attributes. */
export type AuthenticationVerdict = { ok: true; identity: Identity; attributes?: Record<string, string> } | { ok: false; reason: string }

/**
 * The verdict of an X.509 listener: the TLS handshake has already refused a certificate its CA did
 * not sign, so a client here is known; what remains is to find its attributes.
 */
export function authenticateX509(socket: TLSSocket, rules: X509AttributeRule[] = []): AuthenticationVerdict {
  if (!socket.authorized) return { ok: false, reason: `client certificate not trusted: ${String(socket.authorizationError ?? 'none presented')}` }
  const chain = certificateChain(socket.getPeerCertificate(true))
  const leaf = chain[0]
  // The subject with its issuer: the same subject from another listener's CA is someone else.
  const identity: Identity = { kind: 'certificate', name: leaf ? `${dnText(leaf.subject)} issued by ${dnText(leaf.issuer)}` : '' }
  const attributes = x509Attributes(chain, rules)
  return attributes ? { ok: true, identity, attributes } : { ok: true, identity }
}

/** The attributes of the first certificate of the chain (leaf first) whose subject a rule names. */
export function x509Attributes(chain: Array<Pick<DetailedPeerCertificate, 'subject'>>, rules: X509AttributeRule[]): Record<string, string> | null {
  const parsed = rules.map((r) => ({ subject: parseDn(r.subject), attributes: r.attributes }))
  for (const cert of chain) {
    const match = parsed.find((r) => sameDn(r.subject, cert.subject as unknown as Record<string, string | string[]>))
    if (match) return { ...match.attributes }
  }
  return null
}

/** The verdict of a SAT listener on a CONNECT's K8S-SAT token (undefined: the client sent none). */
export function authenticateSat(token: string | undefined, files: SatTokenFile[]): AuthenticationVerdict {
  if (token === undefined || token === '') return { ok: false, reason: 'no K8S-SAT token: this listener authenticates with service account tokens only' }
  for (const f of files) {
    let accepted: string
    try {
      accepted = readFileSync(f.file, 'utf8').trim()
    } catch {
      continue
    }
    if (accepted !== '' && accepted === token) {
      const identity = satIdentity(token, f.file)
      return f.attributes ? { ok: true, identity, attributes: { ...f.attributes } } : { ok: true, identity }
    }
  }
  return { ok: false, reason: 'the K8S-SAT token is not accepted' }
}

/**
 * Who an accepted K8S-SAT token stands for: its `sub` claim when it is a JWT with one (a service
 * account, `system:serviceaccount:<namespace>:<name>`, the same across rotations), else the token
 * file that accepted it (one service account's projected token), else the token itself, hashed.
 * The claims are not verified: the token matched an accepted one byte for byte.
 */
export function satIdentity(token: string, file?: string): Identity {
  const subject = jwtSubject(token)
  if (subject !== null) return { kind: 'service account', name: subject }
  if (file !== undefined) return { kind: 'service account', name: `the token of ${file}` }
  return { kind: 'service account', name: `token ${createHash('sha256').update(token).digest('hex').slice(0, 16)}` }
}

function jwtSubject(token: string): string | null {
  const parts = token.split('.')
  if (parts.length !== 3) return null
  try {
    const claims: unknown = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8'))
    const sub = typeof claims === 'object' && claims !== null ? (claims as { sub?: unknown }).sub : undefined
    return typeof sub === 'string' && sub !== '' ? sub : null
  } catch {
    return null
  }
}

/** A certificate's subject or issuer as one line: `CN=smart-fan, O=Contoso`. */
function dnText(name: Readonly<Record<string, string | string[] | undefined>> | undefined): string {
  return Object.entries(name ?? {})
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join('+') : v}`)
    .join(', ')
}

function certificateChain(leaf: DetailedPeerCertificate): DetailedPeerCertificate[] {
  const chain: DetailedPeerCertificate[] = []
  let cert: DetailedPeerCertificate | undefined = leaf
  while (cert && Object.keys(cert).length > 0 && !chain.includes(cert)) {
    chain.push(cert)
    cert = cert.issuerCertificate
  }
  return chain
}

/** `CN = a, OU = b` → { CN: 'a', OU: 'b' } (spaces around `=` and `,` are not part of a value). */
export function parseDn(text: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const part of text.split(/(?<!\\),/)) {
    const i = part.indexOf('=')
    if (i <= 0) continue
    out[part.slice(0, i).trim().toUpperCase()] = part.slice(i + 1).trim()
  }
  return out
}

function sameDn(expected: Record<string, string>, actual: Record<string, string | string[]> | undefined): boolean {
  if (!actual) return false
  const a = Object.entries(actual).filter(([, v]) => v !== undefined)
  const keys = Object.keys(expected)
  if (keys.length === 0 || keys.length !== a.length) return false
  return a.every(([k, v]) => expected[k.toUpperCase()] === (Array.isArray(v) ? v.join(', ') : v))
}

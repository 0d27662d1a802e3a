import { createHash, randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { DetailedPeerCertificate, TLSSocket } from 'node:tls'
import type { Client as AedesClient } from 'aedes' with { 'resolution-mode': 'import' }
import { SAT_AUTH_METHOD } from '../../protocol'
import { takeoverRefusal, type Identity } from './client-id-owner'
import type { ConnectedClient } from './hooks'

/** Who may connect to the embedded broker's plain port; without it anyone may. */
export interface BrokerAuth {
  /** username → password. */
  users?: Record<string, string>
  /** Service account tokens accepted with the MQTT 5 enhanced authentication method `K8S-SAT`. */
  satTokens?: string[]
  /**
   * Authorization attributes of users (user name → attribute → value), what a cluster takes from a
   * client's X.509 certificate or service account: rules with `principals.attributes` match them.
   */
  attributes?: Record<string, Record<string, string>>
}

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
export type ListenerAuthentication =
  { method: 'x509'; attributes?: X509AttributeRule[] } | { method: 'sat'; tokenFiles: SatTokenFile[] }

/** One entry of `x509Settings.authorizationAttributes`: a certificate subject and the attributes it gives. */
export interface X509AttributeRule {
  /** A distinguished name as AIO writes it: `CN = smart-fan, OU = Engineering, C = US`. */
  subject: string
  attributes: Record<string, string>
}

/**
 * A file holding an accepted token (a projected service account token), and the authorization attributes of its
 * clients.
 */
export interface SatTokenFile {
  file: string
  /** As the `aio-broker-auth/<name>: <value>` annotations of the service account give them. */
  attributes?: Record<string, string>
}

/** What authentication found out about a client: refused (with why), or who it is and its attributes. */
export type AuthenticationVerdict =
  { ok: true; identity: Identity; attributes?: Record<string, string> } | { ok: false; reason: string }

/**
 * The verdict of an X.509 listener: the TLS handshake has already refused a certificate its CA did
 * not sign, so a client here is known; what remains is to find its attributes.
 */
export function authenticateX509(socket: TLSSocket, rules: X509AttributeRule[] = []): AuthenticationVerdict {
  if (!socket.authorized)
    return {
      ok: false,
      reason: `client certificate not trusted: ${String(socket.authorizationError ?? 'none presented')}`,
    }
  const chain = certificateChain(socket.getPeerCertificate(true))
  const leaf = chain[0]
  // The subject with its issuer: the same subject from another listener's CA is someone else.
  const identity: Identity = {
    kind: 'certificate',
    name: leaf ? `${dnText(leaf.subject)} issued by ${dnText(leaf.issuer)}` : '',
  }
  const attributes = x509Attributes(chain, rules)
  return attributes ? { ok: true, identity, attributes } : { ok: true, identity }
}

/** The attributes of the first certificate of the chain (leaf first) whose subject a rule names. */
export function x509Attributes(
  chain: Array<Pick<DetailedPeerCertificate, 'subject'>>,
  rules: X509AttributeRule[],
): Record<string, string> | null {
  const parsed = rules.map((r) => ({ subject: parseDn(r.subject), attributes: r.attributes }))
  for (const cert of chain) {
    const match = parsed.find((r) => sameDn(r.subject, cert.subject as unknown as Record<string, string | string[]>))
    if (match) return { ...match.attributes }
  }
  return null
}

/** The verdict of a SAT listener on a CONNECT's K8S-SAT token (undefined: the client sent none). */
export function authenticateSat(token: string | undefined, files: SatTokenFile[]): AuthenticationVerdict {
  if (token === undefined || token === '')
    return { ok: false, reason: 'no K8S-SAT token: this listener authenticates with service account tokens only' }
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

/** How long a client's principal is kept after it disconnected, for its requests still on their way. */
const PRINCIPAL_AFTER_DISCONNECT_MS = 60_000

/**
 * A CONNECT's outcome: one of the broker's own services, a client known so far, or refused (with aedes's v3 return
 * code).
 */
export type Admitted =
  | { kind: 'service' }
  | { kind: 'client'; principal: ConnectedClient; identity: Identity | null }
  | {
      kind: 'refused'
      reason: string
      returnCode: typeof BAD_USERNAME_OR_PASSWORD | typeof NOT_AUTHORIZED
      takeover?: { by: Identity | null; from: Identity }
    }

// aedes's CONNACK return codes (v3 numbering; aedes maps them to the MQTT 5 reason codes 0x86 and 0x87).
export const BAD_USERNAME_OR_PASSWORD = 4
export const NOT_AUTHORIZED = 5

/**
 * The embedded broker's admission of clients, and what it keeps of each: who may connect on the
 * plain port (users, tokens) and on each TLS listener, who a connected client is (its principal,
 * for the access policy; its identity, which holds its client id), which connections are the
 * broker's own services, and who each client id last was, a while after it left.
 */
export class Admission {
  /**
   * Credentials the broker always accepts, for the emulator's own connections; null when every client is let in anyway.
   */
  readonly serviceCredentials: { username: string; password: string } | null
  /** Whether the plain port asks for credentials at all (users or tokens configured). */
  private readonly authOn: boolean
  private readonly users: Map<string, string>
  private readonly satTokens: Set<string>
  private readonly attributes: Map<string, Record<string, string>>
  /** The verdict on a client's K8S-SAT token, taken off its CONNECT before authentication: who it is, or false. */
  private readonly satVerdicts = new WeakMap<AedesClient, Identity | false>()
  /** The K8S-SAT token a client sent, for a SAT listener to judge. */
  private readonly satTokenOf = new WeakMap<AedesClient, string>()
  /** How the listener a connection came in on authenticates (absent: the plain port). */
  private readonly listenerOf = new WeakMap<object, ListenerAuthentication>()
  /** Admitted clients, by the client object (a takeover replaces it under the same id). */
  private readonly admitted = new WeakMap<AedesClient, { principal: ConnectedClient; identity: Identity | null }>()
  private readonly services = new WeakSet<AedesClient>()
  /**
   * Who each client id last connected as, kept a while after it left: a request it published just
   * before a disconnect (a policy update disconnects everyone) is served after it, and is judged as
   * the principal that published it, not as a bare client id.
   */
  private readonly lastPrincipals = new Map<string, { principal: ConnectedClient; goneAt: number | null }>()

  /** `needsService`: the broker has rules its own services must be told apart from (an access or publish policy). */
  constructor(auth: BrokerAuth | undefined, needsService: boolean) {
    this.authOn = auth !== undefined && (Object.keys(auth.users ?? {}).length > 0 || (auth.satTokens ?? []).length > 0)
    this.serviceCredentials =
      this.authOn || needsService
        ? {
            username: `aio-statestore-emulator-${randomBytes(6).toString('hex')}`,
            password: randomBytes(24).toString('base64url'),
          }
        : null
    this.users = new Map(Object.entries(auth?.users ?? {}))
    if (this.serviceCredentials) this.users.set(this.serviceCredentials.username, this.serviceCredentials.password)
    this.satTokens = new Set((auth?.satTokens ?? []).map((t) => t.trim()))
    this.attributes = new Map(Object.entries(auth?.attributes ?? {}))
  }

  /** A connection of a TLS listener, which authenticates its clients its own way. */
  arrivedOn(connection: object, listener: ListenerAuthentication): void {
    this.listenerOf.set(connection, listener)
  }

  /**
   * aedes does not implement the AUTH exchange and refuses any Authentication Method. K8S-SAT needs
   * no exchange (the token is in the CONNECT), so it is judged here and taken off the packet.
   */
  takeSatToken(
    client: AedesClient,
    properties: { authenticationMethod?: string; authenticationData?: Buffer } | undefined,
  ): void {
    if (properties?.authenticationMethod !== SAT_AUTH_METHOD) return
    const token = properties.authenticationData
      ? Buffer.from(properties.authenticationData).toString('utf8').trim()
      : ''
    this.satVerdicts.set(client, token.length > 0 && this.satTokens.has(token) && satIdentity(token))
    this.satTokenOf.set(client, token)
    delete properties.authenticationMethod
    delete properties.authenticationData
  }

  /**
   * Who a CONNECT is, by the port it came on and its credentials; `holder` is the connected client
   * with the same id, if any: another identity may not take its id.
   */
  admit(
    client: AedesClient,
    username: string | undefined,
    password: Buffer | undefined,
    holder: AedesClient | null,
  ): Admitted {
    const secret = password !== undefined ? Buffer.from(password) : undefined
    if (this.isServiceLogin(username, secret)) {
      this.services.add(client)
      this.admitted.set(client, { principal: { clientId: client.id }, identity: { kind: 'service', name: username! } })
      return { kind: 'service' }
    }
    const known = this.authenticate(client, username, secret)
    if (known.kind === 'refused') return known
    const holderIdentity = holder && holder !== client ? (this.admitted.get(holder)?.identity ?? null) : null
    const taken = takeoverRefusal(client.id, holderIdentity, known.identity)
    if (taken !== null) {
      return {
        kind: 'refused',
        reason: `not authorized: ${taken}`,
        returnCode: NOT_AUTHORIZED,
        takeover: { by: known.identity, from: holderIdentity! },
      }
    }
    const userAttributes =
      known.attributes ?? (known.username !== undefined ? this.attributes.get(known.username) : undefined)
    const principal: ConnectedClient = {
      clientId: client.id,
      ...(known.username !== undefined ? { username: known.username } : {}),
      ...(userAttributes ? { attributes: userAttributes } : {}),
    }
    this.admitted.set(client, { principal, identity: known.identity })
    this.lastPrincipals.set(client.id, { principal, goneAt: null })
    return { kind: 'client', principal, identity: known.identity }
  }

  isService(client: AedesClient): boolean {
    return this.services.has(client)
  }

  /** Who a connected client is to the access policy. */
  principalOf(client: AedesClient): ConnectedClient {
    return this.admitted.get(client)?.principal ?? { clientId: client.id }
  }

  /** Who a client id last connected as, while it is remembered. */
  lastPrincipalOf(clientId: string): ConnectedClient | undefined {
    return this.lastPrincipals.get(clientId)?.principal
  }

  /** A connection ended: its principal is remembered a while, then forgotten. */
  disconnected(client: AedesClient, now = Date.now()): void {
    const last = this.lastPrincipals.get(client.id)
    if (last && this.admitted.get(client)?.principal === last.principal) last.goneAt = now
    // Forgotten once gone for long: no request of theirs is still on its way by then.
    for (const [id, entry] of this.lastPrincipals)
      if (entry.goneAt !== null && now - entry.goneAt > PRINCIPAL_AFTER_DISCONNECT_MS) this.lastPrincipals.delete(id)
  }

  private isServiceLogin(username: string | undefined, secret: Buffer | undefined): boolean {
    const service = this.serviceCredentials
    return (
      service !== null &&
      username === service.username &&
      secret !== undefined &&
      secret.equals(Buffer.from(service.password, 'utf8'))
    )
  }

  private authenticate(
    client: AedesClient,
    username: string | undefined,
    secret: Buffer | undefined,
  ):
    | { kind: 'known'; identity: Identity | null; username?: string; attributes?: Record<string, string> }
    | Extract<Admitted, { kind: 'refused' }> {
    const refused = (
      reason: string,
      returnCode: typeof BAD_USERNAME_OR_PASSWORD | typeof NOT_AUTHORIZED = NOT_AUTHORIZED,
    ) => ({ kind: 'refused', reason, returnCode }) as const
    const listener = this.listenerOf.get(client.conn)
    if (listener) {
      // A TLS listener authenticates as its cluster port does; a user name is not verified there (AIO docs), so not
      // taken.
      const verdict =
        listener.method === 'x509'
          ? authenticateX509(client.conn as unknown as TLSSocket, listener.attributes)
          : authenticateSat(this.satTokenOf.get(client), listener.tokenFiles)
      if (!verdict.ok) return refused(`not authorized: ${verdict.reason}`)
      return {
        kind: 'known',
        identity: verdict.identity,
        ...(verdict.attributes ? { attributes: verdict.attributes } : {}),
      }
    }
    // Without any user or token configured, anyone may connect; a user name is then taken as given, and proves nothing.
    if (!this.authOn) return { kind: 'known', identity: null, ...(username !== undefined ? { username } : {}) }
    const sat = this.satVerdicts.get(client)
    // SAT authentication verifies no user name (AIO docs): a token's client is known by its id alone.
    if (sat) return { kind: 'known', identity: sat }
    if (sat === false) return refused('not authorized: the K8S-SAT token is not accepted')
    if (username === undefined) return refused('not authorized: no credentials')
    const expected = this.users.get(username)
    if (expected === undefined || secret === undefined || !secret.equals(Buffer.from(expected, 'utf8'))) {
      return refused('bad user name or password', BAD_USERNAME_OR_PASSWORD)
    }
    return { kind: 'known', identity: { kind: 'user', name: username }, username }
  }
}

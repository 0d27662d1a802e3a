/**
 * Who may take a client id that is in use. MQTT lets a new CONNECT with a connected client's id
 * take the session over; the embedded broker allows that only to the same authenticated identity:
 * another cannot kick the holder off and inherit what rules grant by that client id. One rule for
 * every way of authenticating (a user name and its password, a certificate, a service account
 * token), and across them. A holder that proved nothing (a port without authentication) holds its
 * id as MQTT does. A client id proves no more than that (docs/security.md): while its holder is
 * away, any identity the rules let connect may claim it.
 */
export interface Identity {
  /**
   * How it was proven: `user` (user name and password), `certificate` (X.509), `service account` (K8S-SAT), `service`
   * (the broker's own).
   */
  kind: 'user' | 'certificate' | 'service account' | 'service'
  /** Who, within its kind: the user name, the certificate's subject and issuer, the token's subject. */
  name: string
}

/** An identity as a log line names it. */
export function describeIdentity(identity: Identity | null): string {
  return identity ? `${identity.kind} ${JSON.stringify(identity.name.slice(0, 200))}` : 'an unauthenticated client'
}

/**
 * Why a CONNECT by `newcomer` may not take the client id from its holder, or null when it may.
 * The reason names neither identity: it goes back to the newcomer.
 */
export function takeoverRefusal(clientId: string, holder: Identity | null, newcomer: Identity | null): string | null {
  if (holder === null) return null
  if (newcomer !== null && newcomer.kind === holder.kind && newcomer.name === holder.name) return null
  return `client id ${JSON.stringify(clientId.slice(0, 128))} is in use by another identity`
}

/**
 * Who may take a client id that is in use. MQTT lets a new CONNECT with a connected client's id
 * take the session over; with authentication on, the embedded broker allows that only to the same
 * user: another authenticated user cannot kick the holder off and inherit what rules grant by that
 * client id. A client id proves no more than that (docs/security.md): while its holder is away,
 * any user the rules let connect may claim it.
 */
export interface ClientIdHolder {
  /** The user name the holder authenticated with; absent for K8S-SAT. */
  username?: string
}

/** Why this CONNECT may not take the client id from its holder, or null when it may. */
export function takeoverRefusal(clientId: string, holder: ClientIdHolder | null, username: string | undefined): string | null {
  if (holder === null || holder.username === username) return null
  return `client id ${JSON.stringify(clientId.slice(0, 128))} is in use by another user`
}

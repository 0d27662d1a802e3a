import type { Server } from 'node:net'
import type { FilteredLogger } from '../logger'

/**
 * Connections one listener holds at once by default (`--max-connections`), as mosquitto's per-listener max_connections.
 */
export const DEFAULT_MAX_CONNECTIONS = 1024
/** How long a TLS listener waits for a client's handshake by default (`--tls-handshake-timeout`, in seconds there). */
export const DEFAULT_TLS_HANDSHAKE_TIMEOUT_MS = 10_000
/** A refusal is logged at most this often, with the count since the last line. */
const LOG_EVERY_MS = 10_000

export interface ConnectionLimits {
  /** Per listener; Infinity for none. */
  maxConnections: number
  tlsHandshakeTimeoutMs: number
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  maxConnections: DEFAULT_MAX_CONNECTIONS,
  tlsHandshakeTimeoutMs: DEFAULT_TLS_HANDSHAKE_TIMEOUT_MS,
}

/**
 * Caps a listener's connections: past the cap Node.js closes each new socket at once, and the log
 * names the flag that refused it (once every ten seconds, however many were refused).
 */
export function capConnections(server: Server, maxConnections: number, listener: string, log: FilteredLogger): void {
  if (maxConnections === Infinity) return
  server.maxConnections = maxConnections
  let refused = 0
  let loggedAt = -Infinity
  server.on('drop', () => {
    refused++
    const now = performance.now()
    if (now - loggedAt < LOG_EVERY_MS) return
    loggedAt = now
    log(
      'warn',
      `broker: ${listener} refused ${refused} connection(s): --max-connections allows ${maxConnections} at once`,
    )
    refused = 0
  })
}

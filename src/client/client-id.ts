import { createHash } from 'node:crypto'
import { hostname } from 'node:os'

/**
 * The client id a Node-RED connection gets when none is set: `nodered-[<role>-]<host>-<hash>`, the
 * hash (8 hex digits of SHA-256) being of the runtime's user directory and what the connection is
 * within it (a config node's id, the context store's prefix). Two runtimes on one host, even with
 * the same flow imported, never share one (a shared id makes the broker hand the session from one
 * to the other and back); a restart keeps it, as notifications and persistent sessions need.
 */
export function defaultClientId(userDir: string, scope: string, role?: string): string {
  const hash = createHash('sha256').update(`${userDir}\n${scope}`).digest('hex').slice(0, 8)
  return `nodered-${role ? `${role}-` : ''}${hostname()}-${hash}`.replace(/[^A-Za-z0-9_.-]/g, '-')
}

import type { ConnectionProblem, ConnectionStatus } from '../../src/client'
import { COMMON_NS } from './i18n'

/**
 * The catalogue text (a key in the `ss-config` catalogue) of each problem the client names but
 * refused credentials: the
 * client's own `reason` is plain English for its users outside Node-RED, the nodes show their
 * catalogue's words instead.
 */
const PROBLEM_TEXT: Record<Exclude<ConnectionProblem, 'authFailed'>, string> = {
  takenOver: `${COMMON_NS}status.takenOver`,
  notMqtt: 'ss-config.test.notMqtt',
  tlsExpected: 'ss-config.test.tlsExpected',
  tlsUnexpected: 'ss-config.test.tlsUnexpected',
  noService: 'ss-config.test.noService',
}

/** Why the connection is down, as a node shows it: a named problem's catalogue text, else the client's reason. */
export function shownReason(status: ConnectionStatus, t: (key: string) => string): string | undefined {
  // Refused credentials: the catalogue's authFailed texts go on with the broker's reason.
  return status.problem && status.problem !== 'authFailed' ? t(PROBLEM_TEXT[status.problem]) : status.reason
}

/** The catalogue key of a log line under `ss-config.log.` */
export type ConnectionLogKey =
  'connected' | 'disconnected' | 'authFailed' | 'notAuthorized' | 'connectFailed' | 'takenOver' | 'noService'

/**
 * A refusal with CONNACK 0x87 Not authorized: an authorization policy that lets no rule match the
 * client id (or, on mosquitto, wrong credentials), not the 0x86/0x8C of refused credentials.
 */
export function notAuthorized(status: ConnectionStatus): boolean {
  return status.problem === 'authFailed' && (status.error as { code?: unknown } | undefined)?.code === 0x87
}

type Shown = 'connected' | 'disconnected' | 'authFailed'

/**
 * Which connection changes a config node logs: one line per change between connected,
 * disconnected and authentication failed, so the client's retries in between are quiet. The first
 * failure after deploy (a wrong URL, a broker that is down) and every authentication failure are
 * warnings; the rest is info.
 */
export class ConnectionLog {
  private last: Shown | null = null
  /** Takeovers and a missing service are warned about once, with what to do; they go on quietly after. */
  private readonly warned = new Set<'takenOver' | 'noService'>()

  /** The line to log for this status, or null when it is nothing new. */
  next(status: ConnectionStatus): { key: ConnectionLogKey; warn: boolean } | null {
    const problem = status.problem
    if ((problem === 'takenOver' || problem === 'noService') && !this.warned.has(problem)) {
      this.warned.add(problem)
      this.last = problem === 'noService' ? 'connected' : 'disconnected'
      return { key: problem, warn: true }
    }
    const shown: Shown | null =
      status.state === 'connected'
        ? 'connected'
        : status.problem === 'authFailed'
          ? 'authFailed'
          : status.state === 'disconnected'
            ? 'disconnected'
            : null
    if (shown === null || shown === this.last) return null
    const first = shown === 'disconnected' && this.last === null
    this.last = shown
    const key = shown === 'authFailed' && notAuthorized(status) ? 'notAuthorized' : shown
    return { key: first ? 'connectFailed' : key, warn: first || shown === 'authFailed' }
  }
}

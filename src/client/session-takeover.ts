import { backoffDelay } from './backoff'

/**
 * Reconnects after a takeover the broker announced back off up to this: two runtimes with one
 * client id would otherwise take turns forever. A takeover only inferred (DROPPED_SOON_MS) backs
 * off within reconnectMaxMs, as a connection that a proxy or a fault keeps dropping may look the same.
 */
const TAKEOVER_MAX_MS = 60_000
/** A connection that stayed up this long after a takeover starts its takeover backoff afresh. */
const TAKEOVER_CALM_MS = 2 * TAKEOVER_MAX_MS
/**
 * A broker that does not send DISCONNECT 0x8E (mosquitto 2.0.11 does not) just closes the old
 * connection. Closed without a word this soon after the broker accepted it, each time at the first
 * try, twice in a row: a takeover is what does that (a broker that went away refuses the reconnect).
 */
const DROPPED_SOON_MS = 10_000

/**
 * Another connection came with our client id and the broker handed it our session. Reconnecting
 * at once would take it back, and the other side would do the same: each takeover in a row
 * doubles the wait before the next attempt, up to TAKEOVER_MAX_MS. This keeps the count and the
 * delay; the connection tells it what happened.
 */
export class SessionTakeover {
  /** Takeovers in a row: DISCONNECT 0x8E, or a connection the broker closed without a word soon after accepting it. */
  private count = 0
  private named = false
  /** The last takeover was announced (DISCONNECT 0x8E), not inferred. */
  private said = false
  /** This connection's close was counted among the takeovers; when not, the close ends the run. */
  private closeCounted = false
  private onlineAt = 0
  /** The broker accepted this connection at the first attempt after the previous one closed. */
  private firstTry = false

  constructor(
    private readonly reconnectMinMs: number,
    private readonly reconnectMaxMs: number,
  ) {}

  /** The current connection was taken over (until the next one is accepted). */
  get takenOver(): boolean {
    return this.named
  }

  /** Takeovers in a row so far. */
  get times(): number {
    return this.count
  }

  /** The broker accepted a connection, `attempts` reconnect attempts after the previous one closed. */
  connected(attempts: number): void {
    this.named = false
    this.onlineAt = performance.now()
    this.firstTry = attempts <= 1
  }

  /** The connection closed: a close that was no takeover ends the run of takeovers. */
  closed(): void {
    if (!this.closeCounted) this.count = 0
    this.closeCounted = false
  }

  /**
   * The broker closed a connection it had accepted without a word: whether that was soon enough to count as a takeover.
   */
  droppedSoon(): boolean {
    return this.firstTry && performance.now() - this.onlineAt < DROPPED_SOON_MS
  }

  /**
   * Counts a takeover; `said`: the broker told us (DISCONNECT 0x8E); otherwise it closed the
   * connection soon after accepting it, which is named a takeover from the second time in a row.
   * Returns whether this one is named a takeover.
   */
  record(said: boolean): boolean {
    this.count = said && performance.now() - this.onlineAt >= TAKEOVER_CALM_MS ? 1 : this.count + 1
    this.closeCounted = true
    if (!said && this.count < 2) return false
    this.named = true
    this.said = said
    return true
  }

  /** The wait before reconnect attempt `attempt` after a takeover. */
  delay(attempt: number): number {
    const max = this.said ? Math.max(TAKEOVER_MAX_MS, this.reconnectMaxMs) : this.reconnectMaxMs
    return backoffDelay(this.count + attempt, this.reconnectMinMs, max)
  }
}

/**
 * The client's plain words for a takeover: `times` when it was inferred from closes in a row, undefined when announced.
 */
export function takeoverReason(clientId: string, times: number | undefined): string {
  return times !== undefined
    ? `the broker closed the connection right after accepting it, ${times} times in a row: another connection with ` +
        `client id ${JSON.stringify(clientId)} is most likely taking the session over; ` +
        'give each client its own client id'
    : `another connection with client id ${JSON.stringify(clientId)} took the session over (DISCONNECT 0x8E): give ` +
        `each client its own client id`
}

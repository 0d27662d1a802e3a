import { HlcError, type Hlc, type HybridLogicalClock } from '../hlc'
import { Prop } from '../protocol'

/** Node ids kept as the service's; past this many the oldest is forgotten (and confirmed again when it notifies). */
const MAX_NODE_IDS = 64

/** What becomes of a notification: taken, dropped (why), or held until a read of its key confirms what holds. */
export type Verdict = { take: true } | { take: false; confirm: true } | { take: false; confirm: false; reason: string }

/**
 * Which notifications a client takes as the service's: one with a valid `__ts` (the service always
 * sends one; the Rust and .NET clients ignore a notification without) that is not further ahead of
 * this client's clock than the service accepts for a request (the clock's drift limit, 60 s by
 * default), from a node id an answer of the service carried. A notification from any other node id
 * is not taken as it is: a read of its key (whose answer teaches the node id when it is the service's,
 * as after a restart of the store behind a broker that stays up) delivers what holds instead, so a
 * forged value never reaches a cache, and a genuine change is not lost. What is dropped is counted.
 * The broker's ACL is the real guard (docs/security.md); this is the client's own check.
 */
export class NotificationTrust {
  /** Notifications dropped by these rules since the client started. */
  dropped = 0
  /** Node ids the service answered with, oldest first. */
  private readonly nodeIds = new Set<string>()
  /** The latest time (ms) an answer's `__ts` carried. */
  private answeredMs = 0

  constructor(private readonly clock: HybridLogicalClock) {}

  /** An answer's `__ts` (its text): the node id it carries is the service's. */
  answered(timestamp: string | undefined): void {
    if (timestamp === undefined) return
    // `%015d:%05d:<nodeId>`: the node id is what follows the second colon.
    const at = timestamp.indexOf(':', timestamp.indexOf(':') + 1)
    if (at < 0) return
    const ms = Number(timestamp.slice(0, timestamp.indexOf(':')))
    if (Number.isSafeInteger(ms) && ms > this.answeredMs) this.answeredMs = ms
    const nodeId = timestamp.slice(at + 1)
    if (nodeId === '' || this.nodeIds.has(nodeId)) return
    if (this.nodeIds.size >= MAX_NODE_IDS) this.nodeIds.delete(this.nodeIds.values().next().value!)
    this.nodeIds.add(nodeId)
  }

  /** Whether an answer has carried this version's node id (a version then known is merged into the clock). */
  knows(version: Hlc): boolean {
    if (!this.nodeIds.has(version.nodeId)) return false
    try {
      this.merge(version)
    } catch {
      // Past the drift limit now: still the service's node id; the clock stays as it was.
    }
    return true
  }

  /** What becomes of a notification with this version; a version taken is merged into the clock. */
  judge(version: Hlc | null): Verdict {
    if (version === null) return this.drop(`it has no valid ${Prop.timestamp}, which the service always sends`)
    // Before any answer has carried a node id there is nothing to tell the service's from another's:
    // taken (a client learns the node id with its first answer that has a version).
    const known = this.nodeIds.size === 0 || this.nodeIds.has(version.nodeId)
    try {
      // A version from an unknown node id is not merged: a forged one would carry the clock ahead.
      if (known) this.merge(version)
      else this.clock.validate(version)
    } catch (err) {
      // Any other refusal of the clock (its counter) leaves the notification as the service's.
      if (!(err instanceof HlcError) || err.reason !== 'clockDrift') return { take: true }
      return this.drop(`its version is further ahead than the service accepts: ${err.message}`)
    }
    return known ? { take: true } : { take: false, confirm: true }
  }

  /**
   * A notification's version moves the clock no further than an answer of the service or the wall
   * clock has: anyone who may publish to the notification topic can stamp the service's node id
   * (an ACL-less broker), and a clock carried ahead goes into every request after.
   */
  private merge(version: Hlc): void {
    const wall = this.clock.tick().timestamp
    if (version.timestamp > Math.max(wall, this.answeredMs)) this.clock.validate(version)
    else this.clock.update(version)
  }

  /** A notification left unconfirmed: nobody observes its key, so no read confirms it. */
  unconfirmed(): string {
    this.dropped++
    return 'its node id is not one the service answered with, and no observation of the key reads it to confirm'
  }

  private drop(reason: string): Verdict {
    this.dropped++
    return { take: false, confirm: false, reason }
  }
}

import { HlcError, type Hlc, type HybridLogicalClock } from '../hlc'
import { Prop } from '../protocol'

/**
 * Which notifications a client takes as the service's: one with a valid `__ts` (the service always
 * sends one; the Rust and .NET clients ignore a notification without) that is not further ahead of
 * this client's clock than the service accepts for a request (the clock's drift limit, 60 s by
 * default). A forged notification a year ahead would otherwise become the key's version in every
 * cache that watches it, and hide every genuine write after it. What is dropped is counted. The
 * node id of the version is not judged: a state store restarted behind a broker that stays up
 * mints versions under a new node id and notifies before any answer tells the client so. The
 * broker's ACL is the real guard (docs/security.md); this is the client's own check.
 */
export class NotificationTrust {
  /** Notifications dropped by these rules since the client started. */
  dropped = 0

  constructor(private readonly clock: HybridLogicalClock) {}

  /**
   * Why a notification with this version is not the service's (and is dropped, counted), or null
   * when it is taken; a version the clock accepts is merged into it.
   */
  refusal(version: Hlc | null): string | null {
    if (version === null) {
      this.dropped++
      return `it has no valid ${Prop.timestamp}, which the service always sends`
    }
    try {
      this.clock.update(version)
    } catch (err) {
      // Any other refusal of the clock (its counter) leaves the notification as the service's.
      if (!(err instanceof HlcError) || err.reason !== 'clock-drift') return null
      this.dropped++
      return `its version is further ahead than the service accepts: ${err.message}`
    }
    return null
  }
}

import type { Lease } from '../../src/locks'
import { unregister, type Hold, type HoldInfo } from './holds'

/** Why a hold ended while its msg was still in the flow (msg.reason on output 2). */
export type LossReason = 'holdAtMost' | 'expired' | 'lost' | 'released'

export interface Loss {
  readonly reason: LossReason
  readonly detail?: string
}

/** What a hold holds: a lock, or one slot of a semaphore. */
export interface Held {
  readonly lease: Lease
  release(options?: { timeoutMs?: number }): Promise<boolean>
}

/** One msg's hold: a lease of its own value, renewed until released, lost, or held for *Hold at most*. */
export class MsgHold implements Hold {
  ended = false
  renewing = false
  readonly since = Date.now()
  private readonly timers: NodeJS.Timeout[] = []

  constructor(
    readonly info: HoldInfo,
    readonly lock: Held,
    private readonly onEnd: (loss: Loss | null) => void,
  ) {}

  /** Ends the hold after `ms` (the *Hold at most* limit, or the lease's own end without renewal). */
  limit(ms: number, reason: LossReason): void {
    this.timers.push(
      setTimeout(() => {
        if (reason === 'holdAtMost') void this.finish({ reason })
        else this.drop({ reason })
      }, ms),
    )
  }

  remainingMs(): number {
    return this.ended ? 0 : this.lock.lease.remainingMs
  }

  async release(options?: { timeoutMs?: number }): Promise<boolean> {
    return this.finish(null, options)
  }

  async renew(): Promise<string | null> {
    if (this.ended) return null
    this.renewing = true
    try {
      const lease = this.lock.lease
      const token = (await lease.renew()) && lease.fencingToken ? lease.fencingToken.toString() : null
      if (token) this.info.fencingToken = token
      // Refused: the renew msg itself tells so on output 2.
      else this.drop(null)
      return token
    } finally {
      this.renewing = false
    }
  }

  /** The lease is gone (refused renewal, or its time ran out): nothing to delete. */
  drop(loss: Loss | null): void {
    if (this.ended) return
    this.end()
    void this.lock.lease.close()
    this.onEnd(loss)
  }

  private async finish(loss: Loss | null, options?: { timeoutMs?: number }): Promise<boolean> {
    if (this.ended) return false
    this.end()
    try {
      // The key is deleted before the next msg's turn, so it finds the lock free.
      return await this.lock.release(options)
    } finally {
      this.onEnd(loss)
    }
  }

  private end(): void {
    this.ended = true
    for (const t of this.timers) clearTimeout(t)
    unregister(this)
  }
}

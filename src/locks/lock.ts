import { TimeoutError } from '../diagnostics/errors'
import type { Bytes } from '../protocol'
import { acquireLease, type WaitOptions } from './acquire'
import { Lease, type LeaseOptions } from './lease'
import type { Hlc } from '../hlc'
import type { DeleteResult, RequestOptions, SetResult, StateStoreClient } from '../client'

export type LockOptions = LeaseOptions

/** What an edit's function learns besides the current value. */
export interface EditContext {
  /** The version of the key as read (null when it does not exist). */
  version: Hlc | null
  /** The fencing token the write will carry. */
  fencingToken: Hlc
}

/** A lock over a lease: acquire waits until the lock is free. */
export class Lock {
  readonly lease: Lease

  constructor(
    private readonly client: StateStoreClient,
    name: Bytes,
    options: LockOptions = {},
  ) {
    this.lease = new Lease(client, name, options)
  }

  /** Waits until the lock is ours and returns its fencing token; TimeoutError / CancelledError / ConnectionError. */
  acquire(options: WaitOptions = {}): Promise<Hlc> {
    return acquireLease(this.lease, options, 'lock acquire')
  }

  /** The time the lease surely still holds, for a request under it; TimeoutError when none is left. */
  private leaseLeft(): number {
    const ms = Math.floor(this.lease.remainingMs)
    if (ms < 1) throw new TimeoutError(this.lease.leaseMs, 'lock edit: the lease')
    return ms
  }

  release(options?: RequestOptions): Promise<boolean> {
    return this.lease.release(options)
  }

  /**
   * Read-modify-write under the lock: acquire, read `key`, let `fn` compute the new value (null
   * deletes the key), write it fenced with the lock's token, release in every case.
   */
  async edit(
    key: Bytes,
    fn: (current: Buffer | null, context: EditContext) => Bytes | null | Promise<Bytes | null>,
    options: WaitOptions = {},
  ): Promise<SetResult | DeleteResult> {
    const acquired = await this.acquire(options)
    try {
      const { value, version } = await this.client.get(key, { timeoutMs: this.leaseLeft() })
      // The token `fn` is told is the one the write carries, though a renewal meanwhile mints a
      // greater one: a caller that fences its own later writes with it must match this write. Had the
      // lock been lost meanwhile, the service refuses it once the next holder has written with its
      // own: that is what fencing is for.
      const fencingToken = this.lease.fencingToken ?? acquired
      const next = await fn(value, { version, fencingToken })
      // Fencing cannot refuse a write that lands between the next holder's read and its write: so
      // write only while the lease surely holds, and answered only if it landed in time.
      const timeoutMs = this.leaseLeft()
      return next === null
        ? await this.client.del(key, { fencingToken, timeoutMs })
        : await this.client.set(key, next, { fencingToken, persist: this.lease.persist, timeoutMs })
    } finally {
      await this.release().catch(() => {})
    }
  }
}

import type { Bytes } from '../protocol'
import { acquireLease, type WaitOptions } from './acquire'
import { Lease, type LeaseOptions } from './lease'
import type { Hlc } from '../hlc'
import type { DeleteResult, RequestOptions, SetResult, StateStoreClient } from '../client'

export type LockOptions = LeaseOptions

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

  release(options?: RequestOptions): Promise<boolean> {
    return this.lease.release(options)
  }

  /**
   * Read-modify-write under the lock: acquire, read `key`, let `fn` compute the new value (null
   * deletes the key), write it fenced with the lock's token, release in every case.
   */
  async edit(
    key: Bytes,
    fn: (current: Buffer | null) => Bytes | null | Promise<Bytes | null>,
    options: WaitOptions = {},
  ): Promise<SetResult | DeleteResult> {
    const acquired = await this.acquire(options)
    try {
      const { value } = await this.client.get(key)
      const next = await fn(value)
      // The newest token (renewal mints greater ones). Had the lock been lost meanwhile, the service
      // refuses the old token once the next holder has written with its own: that is what fencing is for.
      const fencingToken = this.lease.fencingToken ?? acquired
      return next === null ? await this.client.del(key, { fencingToken }) : await this.client.set(key, next, { fencingToken, persist: this.lease.persist })
    } finally {
      await this.release().catch(() => {})
    }
  }
}

type Waiter = (err?: Error) => void

/**
 * The writes of one key: one at a time, in order; a write queued behind another replaces it (its
 * value is newer) and every caller waiting on either hears when the newer one lands.
 */
export class WriteQueue {
  private inflight: Promise<void> | null = null
  private next: { bytes: Buffer | null; waiters: Waiter[] } | null = null

  constructor(
    /** Sends one write (null deletes); rejects with the error its callers get. */
    private readonly send: (bytes: Buffer | null) => Promise<void>,
    /** Called each time the queue runs dry. */
    private readonly idle: () => void = () => {},
  ) {}

  /** A write is in flight or queued. */
  get busy(): boolean {
    return this.inflight !== null
  }

  /** Settles once the queue has run dry (null when it is). */
  get drained(): Promise<void> | null {
    return this.inflight
  }

  push(bytes: Buffer | null): Promise<void> {
    const done = new Promise<void>((resolve, reject) => {
      const waiter: Waiter = (err) => (err ? reject(err) : resolve())
      if (this.next) {
        this.next.bytes = bytes
        this.next.waiters.push(waiter)
      } else {
        this.next = { bytes, waiters: [waiter] }
      }
    })
    this.inflight ??= this.pump()
    return done
  }

  private async pump(): Promise<void> {
    while (this.next) {
      const job = this.next
      this.next = null
      try {
        await this.send(job.bytes)
        for (const waiter of job.waiters) waiter()
      } catch (err) {
        for (const waiter of job.waiters) waiter(err as Error)
      }
    }
    this.inflight = null
    this.idle()
  }
}

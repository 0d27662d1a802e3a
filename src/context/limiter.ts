/**
 * At most `max` operations at once; the rest wait in order. A context store cannot refuse a write
 * (a synchronous `set` has nobody to tell), so instead of letting a burst overrun the client's
 * request limit (which answers OverloadedError), the store queues its own work here.
 */
export class Limiter {
  private active = 0
  /**
   * Waiting in order from `head` on: shift() on an array moves every element, and opening a large store queues one
   * entry per key.
   */
  private waiting: Array<() => void> = []
  private head = 0

  constructor(private readonly max: number) {}

  /** `expired`: asked when a slot comes free after waiting; an error given back is thrown instead of running `fn`. */
  async run<T>(fn: () => Promise<T>, expired?: () => Error | null): Promise<T> {
    if (this.active >= this.max) await new Promise<void>((resolve) => this.waiting.push(resolve))
    else this.active += 1
    try {
      const error = expired?.()
      if (error) throw error
      return await fn()
    } finally {
      const next = this.next()
      if (next) next()
      else this.active -= 1
    }
  }

  private next(): (() => void) | undefined {
    if (this.head >= this.waiting.length) return undefined
    const next = this.waiting[this.head]
    this.head += 1
    if (this.head === this.waiting.length) {
      this.waiting = []
      this.head = 0
    } else if (this.head >= 1024 && this.head * 2 >= this.waiting.length) {
      this.waiting = this.waiting.slice(this.head)
      this.head = 0
    }
    return next
  }
}

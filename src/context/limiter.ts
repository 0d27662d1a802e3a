/**
 * At most `max` operations at once; the rest wait in order. A context store cannot refuse a write
 * (a synchronous `set` has nobody to tell), so instead of letting a burst overrun the client's
 * request limit (which answers OverloadedError), the store queues its own work here.
 */
export class Limiter {
  private active = 0
  private readonly waiting: Array<() => void> = []

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
      const next = this.waiting.shift()
      if (next) next()
      else this.active -= 1
    }
  }
}

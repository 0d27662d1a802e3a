import { ContextNotLoadedError } from './not-loaded'

/**
 * A call made before the store loaded: run once it has, in order; one with a callback gives up after the request
 * timeout.
 */
interface Held {
  run: () => void
  settled: boolean
  timer?: NodeJS.Timeout
  giveUp?: (err: Error) => void
}

/**
 * Until the store has loaded its context, calls wait here (docs/context.md, "Opening with the
 * broker down"): held in order and run once loaded, or told after the request timeout.
 */
export class LoadGate {
  private isOpen = false
  private readonly held: Held[] = []
  private readonly waiters = new Set<() => void>()

  constructor(
    private readonly timeoutMs: number,
    /** The error a call gets while the store has not loaded: it says why (loading, or waiting for the broker). */
    private readonly notLoaded: () => ContextNotLoadedError,
  ) {}

  get loaded(): boolean {
    return this.isOpen
  }

  /** The store has loaded: runs what was held, in order, and wakes those waiting. */
  open(): void {
    this.isOpen = true
    for (const op of this.held.splice(0)) {
      if (op.settled) continue
      op.settled = true
      clearTimeout(op.timer)
      op.run()
    }
    for (const wake of this.waiters) wake()
    this.waiters.clear()
  }

  /** Resolves once loaded; rejects with ContextNotLoadedError after the request timeout. */
  whenLoaded(): Promise<void> {
    if (this.isOpen) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const wake = () => {
        clearTimeout(timer)
        resolve()
      }
      const timer = setTimeout(() => {
        this.waiters.delete(wake)
        reject(this.notLoaded())
      }, this.timeoutMs)
      this.waiters.add(wake)
    })
  }

  /** Holds a call until loaded; with `giveUp`, tells it after the request timeout and drops it. */
  hold(run: () => void, giveUp?: (err: Error) => void): void {
    const op: Held = { run, settled: false }
    if (giveUp) {
      op.giveUp = giveUp
      op.timer = setTimeout(() => {
        op.settled = true
        giveUp(this.notLoaded())
      }, this.timeoutMs)
    }
    this.held.push(op)
  }

  /**
   * The store closes before it loaded: those with a callback hear `err`; returns how many changes without one are
   * dropped.
   */
  drop(err: Error): number {
    const held = this.held.splice(0).filter((op) => !op.settled)
    for (const op of held) {
      op.settled = true
      clearTimeout(op.timer)
      op.giveUp?.(err)
    }
    return held.filter((op) => !op.giveUp).length
  }
}

import type { Glob, GlobProgress } from './glob'

/**
 * The one way a glob meets many keys (SCAN's pages, the admin channel's listings): a walk over the
 * store's keys that spends a time budget in steps (a key looked at is one, a glob step is one, a
 * key byte compared is one) and stops when it is spent, also in the middle of one key's match, so
 * that no pattern over any keys holds the event loop longer than the budget and one clock interval.
 * The clock is read every CLOCK_EVERY steps, not per step.
 */

/** Steps between two looks at the clock: some 40 µs of matching. */
export const CLOCK_EVERY = 4096

/** A time budget counted in steps, with the clock read now and then. */
export class StepBudget {
  private deadline = 0
  private untilClock = CLOCK_EVERY
  private spent = false

  constructor(private readonly ms: number) {
    this.restart()
  }

  /** A fresh budget of `ms` from now (after a yield to the event loop). */
  restart(): void {
    this.deadline = performance.now() + this.ms
    this.untilClock = CLOCK_EVERY
    this.spent = false
  }

  /** Steps that may be taken before the clock is read again. */
  get stepsBeforeClock(): number {
    return this.untilClock
  }

  /** Whether the deadline has passed (as of the last look at the clock). */
  get late(): boolean {
    return this.spent
  }

  /** Counts steps; reads the clock once CLOCK_EVERY of them have been counted since the last look. */
  spend(steps: number): void {
    this.untilClock -= steps
    if (this.untilClock <= 0) this.look()
  }

  /** Reads the clock now: after work the steps do not count (a policy decision per key). */
  look(): void {
    this.untilClock = CLOCK_EVERY
    if (performance.now() > this.deadline) this.spent = true
  }
}

/** What `KeyWalk.next` gives when the budget (time or keys looked at) ran out: call again later. */
export const PAUSED = Symbol('paused')

/**
 * A walk over keys (latin1 strings, in the store's order) keeping those a glob matches (every key
 * with no glob). Resumable: it keeps its iterator and a match paused mid-key.
 */
export class KeyWalk {
  /** Keys looked at so far. */
  visited = 0
  private paused: { id: string; progress: GlobProgress } | null = null

  constructor(
    private readonly glob: Glob | null,
    private readonly ids: Iterator<string>,
  ) {}

  /**
   * The next key the glob matches; PAUSED once the budget is late or `maxVisited` keys have been
   * looked at; null when the keys are done.
   */
  next(budget: StepBudget, maxVisited = Infinity): string | typeof PAUSED | null {
    const glob = this.glob
    for (;;) {
      if (budget.late) return PAUSED
      let id: string
      let step
      if (this.paused) {
        const { id: pausedId, progress } = this.paused
        this.paused = null
        id = pausedId
        step = glob!.match(id, budget.stepsBeforeClock, progress)
      } else {
        if (this.visited >= maxVisited) return PAUSED
        const next = this.ids.next()
        if (next.done) return null
        id = next.value
        this.visited++
        budget.spend(1)
        if (glob === null) return id
        step = glob.match(id, budget.stepsBeforeClock)
      }
      budget.spend(step.steps)
      if (!step.done) {
        // A paused match used every step before the clock, so the clock was just read.
        this.paused = { id, progress: step.progress }
        continue
      }
      if (step.matched) return id
    }
  }
}

/**
 * Collects the ids of things that changed and hands them over at most once per interval, each id
 * once however often it changed meanwhile: a store changing 2,000 times a second becomes a few
 * updates a second per item. Unref'd timer; nothing runs while nothing changes.
 */
export class Coalescer<Id> {
  private dirty = new Set<Id>()
  private timer: NodeJS.Timeout | null = null
  private lastFlush = 0

  constructor(
    private readonly intervalMs: number,
    private readonly flush: (ids: Set<Id>) => void,
    private readonly now: () => number = Date.now,
  ) {}

  mark(id: Id): void {
    this.dirty.add(id)
    if (this.timer) return
    const wait = Math.max(0, this.lastFlush + this.intervalMs - this.now())
    this.timer = setTimeout(() => this.run(), wait)
    this.timer.unref()
  }

  /** Forgets what is pending (nobody is looking any more). */
  clear(): void {
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    this.dirty = new Set()
  }

  private run(): void {
    this.timer = null
    this.lastFlush = this.now()
    const ids = this.dirty
    this.dirty = new Set()
    if (ids.size > 0) this.flush(ids)
  }
}

/**
 * How far behind one connection's key notifications arrive: the backlog they waited in (the
 * broker's queue for this subscriber, the sockets, this process's event loop).
 *
 * A notification's delay is its arrival (this clock) less the wall-clock milliseconds of its
 * version (the service's clock, when it made the change). That holds the offset between the two
 * clocks and the network's own time, so the backlog is the delay less the least delay seen over
 * the last ten minutes: a constant offset cancels, and a clock stepped by NTP is absorbed within the
 * window. A backlog that lasts the whole window reads as the floor, and so as none; the window is
 * long beside the seconds a falling-behind flow shows.
 */
const FLOOR_BUCKET_MS = 30_000
const FLOOR_BUCKETS = 20
const PEAK_WINDOW_MS = 60_000

export interface LagFigures {
  /** The newest notification's backlog, ms; null before the first. */
  behindMs: number | null
  /** The largest backlog over the last minute, ms; null without a notification in it. */
  maxBehindMs: number | null
}

export class NotificationLag {
  /** The least delay of each 30 s of the window, by bucket number. */
  private readonly floors = new Map<number, number>()
  private floor = Infinity
  private newest: number | null = null
  /** [bucket start, most behind in it] of the last minute, 10 s each. */
  private readonly peaks: Array<{ at: number; ms: number }> = []

  constructor(private readonly now: () => number = Date.now) {}

  /** A notification whose version says `versionMs`; returns its backlog in ms. */
  sample(versionMs: number): number {
    const now = this.now()
    const delay = now - versionMs
    const bucket = Math.floor(now / FLOOR_BUCKET_MS)
    const least = this.floors.get(bucket)
    if (least === undefined || delay < least) {
      this.floors.set(bucket, delay)
      if (least === undefined) this.forgetOldFloors(bucket)
      if (delay < this.floor) this.floor = delay
    }
    const behind = Math.max(0, delay - this.floor)
    this.newest = behind
    const last = this.peaks[this.peaks.length - 1]
    const slot = now - (now % 10_000)
    if (last?.at === slot) last.ms = Math.max(last.ms, behind)
    else this.peaks.push({ at: slot, ms: behind })
    while (this.peaks.length > 0 && this.peaks[0]!.at <= now - PEAK_WINDOW_MS) this.peaks.shift()
    return behind
  }

  figures(): LagFigures {
    const now = this.now()
    let max: number | null = null
    for (const p of this.peaks) if (p.at > now - PEAK_WINDOW_MS) max = Math.max(max ?? 0, p.ms)
    return { behindMs: this.newest, maxBehindMs: max }
  }

  private forgetOldFloors(bucket: number): void {
    let dropped = false
    for (const b of this.floors.keys()) {
      if (b <= bucket - FLOOR_BUCKETS) {
        this.floors.delete(b)
        dropped = true
      }
    }
    if (dropped) this.floor = Math.min(...this.floors.values())
  }
}

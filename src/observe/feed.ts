import type { ActivityChange, StoreActivity } from './activity'
import { Coalescer } from './coalescer'
import { lockView, watchView, type ConnectionView, type LockView, type WatchView } from './views'

/** One push to the viewers: what changed in one store since the last push. */
export interface StoreUpdate {
  store: string
  connection?: ConnectionView
  watches?: WatchView[]
  /** Keys no longer observed. */
  unwatched?: string[]
  locks?: LockView[]
  /** Lock ids no longer followed. */
  forgotten?: string[]
  /** Lock entries the registry's bounds dropped so far, sent with any lock change. */
  droppedLocks?: number
}

export interface LiveFeedOptions {
  publish(update: StoreUpdate): void
  /** Coalescing interval: every item is pushed at most once per interval (default 250 ms). */
  intervalMs?: number
  /** A viewer that has not renewed within this long is gone (default 30 s). */
  leaseMs?: number
  /** How often connection figures (rate, latency) are pushed while someone looks (default 1 s). */
  figuresMs?: number
  now?: () => number
}

interface Followed {
  activity: StoreActivity
  listener: (change: ActivityChange) => void
  coalescer: Coalescer<string>
}

/**
 * Pushes store activity to viewers only while at least one viewer holds a lease (an editor with the
 * sidebar tab open renews it), throttled per item. With no viewer, nothing listens, nothing runs.
 */
export class LiveFeed {
  private readonly viewers = new Map<string, number>()
  private readonly followed = new Map<string, Followed>()
  private stores = new Map<string, StoreActivity>()
  private timer: NodeJS.Timeout | null = null
  private readonly intervalMs: number
  private readonly leaseMs: number
  private readonly figuresMs: number
  private readonly now: () => number

  constructor(private readonly options: LiveFeedOptions) {
    this.intervalMs = options.intervalMs ?? 250
    this.leaseMs = options.leaseMs ?? 30_000
    this.figuresMs = options.figuresMs ?? 1000
    this.now = options.now ?? Date.now
  }

  get live(): boolean {
    return this.viewers.size > 0
  }

  /** The stores there are now (after a deploy); followed at once when someone looks. */
  setStores(stores: Map<string, StoreActivity>): void {
    this.stores = stores
    if (this.live) this.follow()
  }

  /** A viewer looks (or still looks): for leaseMs from now. */
  open(viewer: string): void {
    this.viewers.set(viewer, this.now() + this.leaseMs)
    this.follow()
    if (!this.timer) {
      this.timer = setInterval(() => this.tick(), this.figuresMs)
      this.timer.unref()
    }
  }

  close(viewer: string): void {
    this.viewers.delete(viewer)
    if (!this.live) this.stop()
  }

  stop(): void {
    this.viewers.clear()
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    for (const id of [...this.followed.keys()]) this.unfollow(id)
  }

  private tick(): void {
    const now = this.now()
    for (const [viewer, until] of this.viewers) if (until <= now) this.viewers.delete(viewer)
    if (!this.live) return this.stop()
    for (const [store, f] of this.followed) this.options.publish({ store, connection: f.activity.metrics.figures() })
  }

  private follow(): void {
    for (const [id, f] of this.followed) if (this.stores.get(id) !== f.activity) this.unfollow(id)
    for (const [id, activity] of this.stores) {
      if (this.followed.has(id)) continue
      const coalescer = new Coalescer<string>(this.intervalMs, (changed) => this.push(id, activity, changed), this.now)
      const listener = (change: ActivityChange) => coalescer.mark(change.kind === 'watch' ? `w${change.key}` : change.kind === 'lock' ? `l${change.id}` : 'c')
      activity.on('change', listener)
      this.followed.set(id, { activity, listener, coalescer })
    }
  }

  private unfollow(id: string): void {
    const f = this.followed.get(id)
    if (!f) return
    f.activity.off('change', f.listener)
    f.coalescer.clear()
    this.followed.delete(id)
  }

  private push(store: string, activity: StoreActivity, changed: Set<string>): void {
    const update: StoreUpdate = { store }
    for (const item of changed) {
      const id = item.slice(1)
      if (item === 'c') update.connection = activity.metrics.figures()
      else if (item[0] === 'w') {
        const w = activity.watches.get(id)
        if (w) (update.watches ??= []).push(watchView(w))
        else (update.unwatched ??= []).push(id)
      } else {
        const l = activity.locks.get(id)
        if (l) (update.locks ??= []).push(lockView(l))
        else (update.forgotten ??= []).push(id)
        update.droppedLocks = activity.droppedLocks
      }
    }
    this.options.publish(update)
  }
}

/** What a lock name is used as: a lease, a lock (a mutex for msgs) or an election's position. */
export type LockKind = 'lease' | 'lock' | 'leader'

/** One stretch of time in which a lock name had one holder (null: free). */
export interface HoldSpan {
  /** The holder value as written in the key (`<holder>:<session>` in lock mode), or null when free. */
  holder: string | null
  /** Whether the hold was this runtime's. */
  ours: boolean
  from: number
  /** Wall-clock ms it ended; null while it lasts. */
  to: number | null
}

/** The history of one lock name: who held it when, hand-overs, and how many msgs waited over time. */
export interface LockTimelineView {
  name: string
  kind: LockKind
  spans: HoldSpan[]
  /** Wall-clock ms at which a holder took over from another holder (another node or runtime). */
  handovers: number[]
  /** `[at, msgs waiting from then on]`, in time order. */
  waiting: Array<[number, number]>
}

/** The numeric values a watched key took: `[at, value]`, in time order. */
export interface ValueTimelineView {
  key: string
  points: Array<[number, number]>
}

export interface TimelineView {
  now: number
  /** The window the history covers, ending at `now`. */
  windowMs: number
  locks: LockTimelineView[]
  values: ValueTimelineView[]
}

interface LockLine {
  kind: LockKind
  /** The holder name of the last hold, to tell a hand-over without walking the spans. */
  lastHolder: string | null
  spans: HoldSpan[]
  handovers: number[]
  waiting: Array<[number, number]>
}

/** How long history is kept, and the most events kept per lock name or key within it. */
export const TIMELINE_WINDOW_MS = 10 * 60_000
const MAX_EVENTS = 2000
/** The most lock names and keys kept: a msg may name any, so the one active longest ago goes first. */
export const TIMELINE_MAX_NAMES = 1000

/** A hold's holder name: the value without the session a lock-mode hold adds (`<holder>:<12 hex digits>`). */
export function holderName(value: string): string {
  return value.replace(/:[0-9a-f]{12}$/, '')
}

/**
 * The last minutes of the application's locks, elections and watched numeric keys, for people to
 * look at: each name's holders as spans, hand-overs, the msgs waiting, a key's values. Bounded in
 * time (TIMELINE_WINDOW_MS) and in events per name, so a busy lock costs a fixed amount of memory.
 */
export class Timeline {
  private readonly locks = new Map<string, LockLine>()
  private readonly values = new Map<string, Array<[number, number]>>()

  constructor(
    private readonly now: () => number = Date.now,
    private readonly windowMs = TIMELINE_WINDOW_MS,
  ) {}

  /** Who holds `name` now, as far as this runtime knows. A change of holder name (not only of session) is a hand-over. */
  holder(name: string, kind: LockKind, holder: string | null, ours: boolean): void {
    const at = this.now()
    const line = this.line(name, kind)
    const last = line.spans[line.spans.length - 1]
    if (last && last.to === null && last.holder === holder) {
      last.ours ||= ours
      return
    }
    if (last && last.to === null) last.to = at
    if (holder !== null) {
      const name = holderName(holder)
      if (line.lastHolder !== null && line.lastHolder !== name) line.handovers.push(at)
      line.lastHolder = name
    }
    line.spans.push({ holder, ours, from: at, to: null })
    this.trim(line.spans, line.handovers, line.waiting)
  }

  /** How many msgs wait for `name` in this runtime now. */
  waiting(name: string, kind: LockKind, count: number): void {
    const line = this.line(name, kind)
    const last = line.waiting[line.waiting.length - 1]
    if (last && last[1] === count) return
    line.waiting.push([this.now(), count])
    this.trim(line.spans, line.handovers, line.waiting)
  }

  /** A watched key's new value, when it reads as a number. */
  value(key: string, value: number): void {
    const points = latest(this.values, key, () => [])
    points.push([this.now(), value])
    this.trim(points)
  }

  /** A key no longer watched keeps its history until it falls out of the window. */
  view(windowMs = this.windowMs): TimelineView {
    const now = this.now()
    const start = now - Math.min(windowMs, this.windowMs)
    const locks: LockTimelineView[] = []
    for (const [name, line] of this.locks) {
      const spans = line.spans.filter((s) => s.to === null || s.to >= start).map((s) => ({ ...s }))
      if (spans.length === 0 && line.waiting.every(([at]) => at < start)) continue
      // The waiting count in force at the start of the window, then its changes.
      const before = line.waiting.filter(([at]) => at < start).pop()
      const waiting = [...(before ? [[start, before[1]] as [number, number]] : []), ...line.waiting.filter(([at]) => at >= start)]
      locks.push({ name, kind: line.kind, spans, handovers: line.handovers.filter((at) => at >= start), waiting })
    }
    const values: ValueTimelineView[] = []
    for (const [key, points] of this.values) {
      const inWindow = points.filter(([at]) => at >= start)
      if (inWindow.length > 0) values.push({ key, points: inWindow })
    }
    locks.sort((a, b) => a.name.localeCompare(b.name))
    values.sort((a, b) => a.key.localeCompare(b.key))
    return { now, windowMs: Math.min(windowMs, this.windowMs), locks, values }
  }

  private line(name: string, kind: LockKind): LockLine {
    return latest(this.locks, name, () => ({ kind, lastHolder: null, spans: [], handovers: [], waiting: [] }))
  }

  /** Drops what fell out of the window, and the oldest events past MAX_EVENTS. */
  private trim(...lists: Array<Array<unknown>>): void {
    const start = this.now() - this.windowMs
    for (const list of lists) {
      let drop = Math.max(0, list.length - MAX_EVENTS)
      while (drop < list.length - 1 && endOf(list[drop]) < start) drop++
      if (drop > 0) list.splice(0, drop)
    }
  }
}

/** The entry for `name`, put last (active most recently); past TIMELINE_MAX_NAMES the first goes. */
function latest<T>(map: Map<string, T>, name: string, make: () => T): T {
  const entry = map.get(name) ?? make()
  map.delete(name)
  map.set(name, entry)
  if (map.size > TIMELINE_MAX_NAMES) map.delete(map.keys().next().value!)
  return entry
}

/** When an entry (a span, a time, a `[time, n]` pair) ended, for trimming. */
function endOf(entry: unknown): number {
  if (typeof entry === 'number') return entry
  if (Array.isArray(entry)) return entry[0] as number
  const span = entry as HoldSpan
  return span.to ?? Infinity
}

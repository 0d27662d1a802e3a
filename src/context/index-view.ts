import {
  BUCKETS,
  bucketOf,
  mark,
  markDelta,
  type Delta,
  type DeltaChange,
  type IndexEntry,
  type IndexState,
} from './index-format'

/** What a change to a bucket or the delta did to the merged list. */
export interface ViewChange {
  added: IndexEntry[]
  removed: IndexEntry[]
}

/**
 * The index as a reader sees it: every bucket merged, the delta's entries overriding theirs. Each
 * replacement of a bucket or the delta reports which entries it added to or removed from the
 * merged list, comparing old and new entries of what changed only, so its cost does not grow with
 * the number of keys. Pure: no I/O.
 */
export class IndexView {
  /** Every bucket merged, the delta applied: what keys() answers from. */
  readonly current: IndexState = new Map()
  private readonly buckets: IndexState[] = Array.from({ length: BUCKETS }, (): IndexState => new Map())
  private delta: Delta = new Map()

  /** Makes bucket `i` hold `next`. */
  replaceBucket(i: number, next: IndexState): ViewChange {
    const before = this.buckets[i]!
    this.buckets[i] = next
    const changed: IndexEntry[] = []
    for (const [scope, tops] of next)
      for (const top of tops) if (!before.get(scope)?.has(top)) changed.push({ scope, top })
    for (const [scope, tops] of before)
      for (const top of tops) if (!next.get(scope)?.has(top)) changed.push({ scope, top })
    return this.refresh(changed)
  }

  /** Makes the delta hold `next`. */
  replaceDelta(next: Delta): ViewChange {
    const before = this.delta
    this.delta = next
    const changed: IndexEntry[] = []
    for (const [scope, tops] of next)
      for (const [top, exists] of tops) if (before.get(scope)?.get(top) !== exists) changed.push({ scope, top })
    for (const [scope, tops] of before)
      for (const top of tops.keys()) if (!next.get(scope)?.has(top)) changed.push({ scope, top })
    return this.refresh(changed)
  }

  /** Applies changes to the delta in place. */
  applyDelta(changes: readonly DeltaChange[]): ViewChange {
    for (const [scope, top, exists] of changes) markDelta(this.delta, scope, top, exists)
    return this.refresh(changes.map(([scope, top]) => ({ scope, top })))
  }

  /** Whether the merged list holds the key. */
  has(scope: string, top: string): boolean {
    return this.current.get(scope)?.has(top) ?? false
  }

  /** Brings `current` in step for entries whose bucket or delta entry changed. */
  private refresh(changed: readonly IndexEntry[]): ViewChange {
    const added: IndexEntry[] = []
    const removed: IndexEntry[] = []
    for (const entry of changed) {
      const { scope, top } = entry
      const listed =
        this.delta.get(scope)?.get(top) ?? this.buckets[bucketOf(scope, top)]!.get(scope)?.has(top) ?? false
      if (listed === this.has(scope, top)) continue
      mark(this.current, scope, top, listed)
      ;(listed ? added : removed).push(entry)
    }
    return { added, removed }
  }
}

import { setImmediate as yieldToEventLoop } from 'node:timers/promises'
import type { Glob } from '../core/glob'
import { KeyWalk, PAUSED, StepBudget } from '../core/key-walk'
import type { Keyspace } from '../core/keyspace'

/** The smallest matching keys after a cursor, ascending. */
export interface KeyWindow {
  /** The keys as latin1 strings (records are read again when a page is served). */
  readonly ids: string[]
  /** Their bytes. */
  readonly bytes: number
  /** Keys the glob matches in the whole store (at the time of the pass). */
  readonly matching: number
  /** Whether matching keys after the window were left out of it. */
  readonly truncated: boolean
}

/**
 * One pass over the store for the `size` smallest keys after `after` that `glob` matches (every key
 * without one): a KeyWalk on a time budget, so it yields to the event loop every `stepMs`, also in
 * the middle of one key's match and while it orders what it kept. The keys are kept in a max-heap
 * (O(n log size), no sorted copy of the store); a key compared costs its bytes in steps.
 */
export async function keyWindow(
  store: Keyspace,
  glob: Glob | null,
  after: string | null,
  size: number,
  stepMs: number,
  signal?: AbortSignal,
): Promise<KeyWindow> {
  const budget = new StepBudget(stepMs)
  const pause = async () => {
    await yieldToEventLoop()
    signal?.throwIfAborted()
    budget.restart()
  }
  const walk = new KeyWalk(glob, store.ids())
  const heap = new MaxHeap(budget)
  let matching = 0
  let truncated = false
  for (;;) {
    const id = walk.next(budget)
    if (id === null) break
    if (id === PAUSED) {
      await pause()
      continue
    }
    if (!store.has(id)) continue
    matching++
    budget.spend(id.length)
    if (after !== null && id <= after) continue
    if (heap.size === size) {
      truncated = true
      budget.spend(id.length)
      if (id >= heap.top) continue
      heap.pop()
    }
    heap.push(id)
  }
  const ids = new Array<string>(heap.size)
  let bytes = 0
  for (let i = heap.size - 1; i >= 0; i--) {
    ids[i] = heap.pop()
    bytes += ids[i]!.length
    if (budget.late) await pause()
  }
  return { ids, bytes, matching, truncated }
}

/** A binary max-heap of keys; its comparisons are spent from the budget. */
class MaxHeap {
  private readonly items: string[] = []

  constructor(private readonly budget: StepBudget) {}

  get size(): number {
    return this.items.length
  }

  get top(): string {
    return this.items[0]!
  }

  push(id: string): void {
    const items = this.items
    let i = items.push(id) - 1
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (!this.above(i, parent)) break
      ;[items[i], items[parent]] = [items[parent]!, items[i]!]
      i = parent
    }
  }

  pop(): string {
    const items = this.items
    const top = items[0]!
    const last = items.pop()!
    if (items.length === 0) return top
    items[0] = last
    for (let i = 0; ;) {
      const left = 2 * i + 1
      const right = left + 1
      let largest = i
      if (left < items.length && this.above(left, largest)) largest = left
      if (right < items.length && this.above(right, largest)) largest = right
      if (largest === i) break
      ;[items[i], items[largest]] = [items[largest]!, items[i]!]
      i = largest
    }
    return top
  }

  /** Whether the key at `a` sorts after the one at `b`. */
  private above(a: number, b: number): boolean {
    const x = this.items[a]!
    const y = this.items[b]!
    this.budget.spend(Math.min(x.length, y.length))
    return x > y
  }
}

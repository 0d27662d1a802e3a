/** One item's outcome: its result, or the error its work failed with. */
export type Settled<R> = { ok: true; value: R } | { ok: false; error: unknown }

/**
 * Runs `work` for every item with at most `limit` running at once, in the items' order; resolves
 * when every item has settled and never rejects: a failure is one item's outcome. `settled` hears
 * of each outcome as it comes (completion order).
 */
export async function settleEach<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<R>,
  settled?: (item: T, outcome: Settled<R>) => void,
): Promise<Array<Settled<R>>> {
  const outcomes = new Array<Settled<R>>(items.length)
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++
      const item = items[i] as T
      let outcome: Settled<R>
      try {
        outcome = { ok: true, value: await work(item) }
      } catch (error) {
        outcome = { ok: false, error }
      }
      outcomes[i] = outcome
      settled?.(item, outcome)
    }
  }
  const workers = Math.max(1, Math.min(limit, items.length))
  await Promise.all(Array.from({ length: workers }, worker))
  return outcomes
}

/** How much of a stream's work may run at once: a count, and optionally a weight (bytes) in all. */
export interface StreamBound<T> {
  count: number
  /** With `weight`: the most weight running at once; an item heavier than it runs alone. */
  maxWeight?: number
  weight?: (item: T) => number
}

/**
 * Runs `work` for each item of an async iterable as the items come, within `bound`, and keeps no
 * outcome: `settled` hears of each (completion order). Reads the next item only when it may start,
 * so a stream is never read further ahead than the work. Resolves once every started item has
 * settled; an error of the iterable itself rejects, after the started items have settled.
 */
export async function settleStream<T, R>(
  items: AsyncIterable<T>,
  bound: StreamBound<T>,
  work: (item: T) => Promise<R>,
  settled: (item: T, outcome: Settled<R>) => void,
): Promise<void> {
  const maxWeight = bound.maxWeight ?? Infinity
  let running = 0
  let load = 0
  let wake: (() => void) | null = null
  const changed = () => new Promise<void>((resolve) => (wake = resolve))
  const run = async (item: T, weight: number): Promise<void> => {
    let outcome: Settled<R>
    try {
      outcome = { ok: true, value: await work(item) }
    } catch (error) {
      outcome = { ok: false, error }
    }
    running--
    load -= weight
    settled(item, outcome)
    const resume = wake
    wake = null
    resume?.()
  }
  try {
    for await (const item of items) {
      const weight = bound.weight?.(item) ?? 0
      while (running > 0 && (running >= bound.count || load + weight > maxWeight)) await changed()
      running++
      load += weight
      void run(item, weight)
    }
  } finally {
    while (running > 0) await changed()
  }
}

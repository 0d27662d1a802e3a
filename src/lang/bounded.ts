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

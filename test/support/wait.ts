/**
 * Waiting in tests, one way for every suite: sleep only where nothing can be waited for, poll a
 * condition with a generous limit that names what it waited for (never an assertion about time).
 * Limits are written for a quiet machine and stretched by the suite's time scale (deadline.ts).
 */
import { describeLimit, scaled } from './deadline'

export async function sleep(ms: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms))
}

/** Polls until `predicate` holds; fails after `ms` (scaled) naming `what`. */
export async function until(
  predicate: () => boolean | Promise<boolean>,
  what: string,
  ms = 10_000,
  everyMs = 10,
): Promise<void> {
  await eventually(async () => ((await predicate()) ? true : undefined), what, ms, everyMs)
}

/**
 * Resolves with the first value `poll` returns that is not undefined. A poll that throws counts as
 * not yet (a wait rides through a server still starting or a connection loss); after `ms` (scaled)
 * it fails naming `what`, with the last error the poll threw.
 */
export async function eventually<T>(
  poll: () => T | undefined | Promise<T | undefined>,
  what: string,
  ms = 5000,
  everyMs = 10,
): Promise<T> {
  const limit = scaled(ms)
  const deadline = Date.now() + limit
  let lastError: unknown
  for (;;) {
    try {
      const value = await poll()
      if (value !== undefined) return value
    } catch (err) {
      lastError = err
    }
    if (Date.now() > deadline) {
      const last =
        lastError === undefined
          ? ''
          : ` (the last poll threw: ${lastError instanceof Error ? lastError.message : String(lastError)})`
      throw new Error(`timed out after ${describeLimit(ms, limit)} waiting for ${what}${last}`, { cause: lastError })
    }
    await sleep(everyMs)
  }
}

/** Retries `attempt` until it resolves; the last error after `ms` (scaled). */
export async function retry<T>(attempt: () => Promise<T>, ms = 10_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + scaled(ms)
  for (;;) {
    try {
      return await attempt()
    } catch (err) {
      if (Date.now() > deadline) throw err
      await sleep(everyMs)
    }
  }
}

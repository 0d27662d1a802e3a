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
export async function until(predicate: () => boolean | Promise<boolean>, what: string, ms = 10_000, everyMs = 10): Promise<void> {
  await eventually(async () => ((await predicate()) ? true : undefined), what, ms, everyMs)
}

/** Resolves with the first value `poll` returns that is not undefined; fails after `ms` (scaled) naming `what`. */
export async function eventually<T>(poll: () => T | undefined | Promise<T | undefined>, what: string, ms = 5000, everyMs = 10): Promise<T> {
  const limit = scaled(ms)
  const deadline = Date.now() + limit
  for (;;) {
    const value = await poll()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${describeLimit(ms, limit)} waiting for ${what}`)
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

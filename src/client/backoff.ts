/**
 * Exponential backoff with jitter: the delay before attempt `attempt` (0-based) lies between half
 * and all of `min(max, min * 2^attempt)`, so clients that lost the same broker do not return in step.
 */
export function backoffDelay(
  attempt: number,
  minMs: number,
  maxMs: number,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(maxMs, minMs * 2 ** Math.min(attempt, 30))
  return Math.max(1, Math.round(ceiling / 2 + (random() * ceiling) / 2))
}

/**
 * The context store's own keys under its prefix: the key index (`<prefix>#keys/00` … `ff`,
 * `<prefix>#keys/delta`, an earlier version's `<prefix>#keys`) and its lock (`<prefix>#lock`).
 * The key browser leaves them out unless the pattern asks for them with a `#`.
 */
const INTERNAL = /#(?:keys(?:\/(?:[0-9a-f]{2}|delta))?|lock)$/

export function isContextInternalKey(key: string): boolean {
  return INTERNAL.test(key)
}

/** Whether a key browser pattern asks for internal keys. */
export function asksForInternalKeys(pattern: string | undefined): boolean {
  return pattern !== undefined && pattern.includes('#')
}

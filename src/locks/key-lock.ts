import type { Bytes } from '../protocol'

/** What follows a key's name to name the lock that guards it. */
export const KEY_LOCK_SUFFIX = '.lock'

/**
 * The lock that guards a key's read-modify-write: the key followed by `.lock` (`counter` is guarded by
 * `counter.lock`). The ss-update node locks it; `new Lock(client, keyLockName(key)).edit(key, fn)` in
 * code and the CLI's `lock counter.lock` exclude it and each other.
 */
export function keyLockName(key: Bytes): Bytes {
  return typeof key === 'string'
    ? key + KEY_LOCK_SUFFIX
    : Buffer.concat([Buffer.from(key), Buffer.from(KEY_LOCK_SUFFIX)])
}

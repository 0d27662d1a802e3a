import type { StateStoreClient } from '../client'
import { ServiceError, StateStoreError, TimeoutError } from '../diagnostics/errors'
import type { Hlc } from '../hlc'
import type { Bytes } from '../protocol'
import { keyLockName } from './key-lock'
import { Lock } from './lock'

/** What an update did: the value before (null for a missing key), the value written, and the write's version and token. */
export interface Updated {
  previous: Buffer | null
  value: Bytes
  version: Hlc
  fencingToken: Hlc
}

export interface UpdateOptions {
  /**
   * The value each attempt's lock writes, asked for once per attempt: a value of its own per
   * attempt (and per update) keeps concurrent updates of one holder apart, and an attempt from
   * taking over the hold an earlier one left.
   */
  holdValue: () => string
  leaseMs: number
  timeoutMs: number
  /** Ask the store to persist the key (and its lock, so a restarted store keeps the hold too). */
  persist?: boolean
  /** Told each time a lock is made, so that a viewer can follow it. */
  onLock?: (lock: Lock) => void
}

/**
 * A read-modify-write of `key` under its lock (`keyLockName`): Lock.edit, tried again while time is
 * left when the hold ran out before the write (the lease's time, or a fenced write refused because
 * a later holder had written). `fn` gets the current value (null: missing) and its version, and may
 * run once per attempt; an attempt whose write may have landed (its failure's `written` is not
 * false, read back by the client) is never tried again, so the update is applied at most once.
 */
export async function updateKey(
  client: StateStoreClient,
  key: string,
  fn: (current: Buffer | null, version: Hlc | null) => Bytes | Promise<Bytes>,
  options: UpdateOptions,
): Promise<Updated> {
  const deadline = Date.now() + options.timeoutMs
  for (;;) {
    const remaining = deadline - Date.now()
    if (remaining <= 0) throw new TimeoutError(options.timeoutMs, 'update key')
    const lock = new Lock(client, keyLockName(key), { holder: options.holdValue(), leaseMs: options.leaseMs, persist: options.persist === true })
    options.onLock?.(lock)
    // Filled in by the edit's function, which runs before the write.
    let seen: { previous: Buffer | null; value: Bytes; fencingToken: Hlc } | undefined
    try {
      const result = await lock.edit(
        key,
        async (current, { version, fencingToken }) => {
          const value = await fn(current, version)
          seen = { previous: current, value, fencingToken }
          return value
        },
        { timeoutMs: remaining },
      )
      if (!seen || !('applied' in result)) throw new TimeoutError(options.timeoutMs, 'update key')
      return { ...seen, version: result.version }
    } catch (err) {
      // A write that timed out and was written, or may have been, ends the update: trying again would apply it twice.
      if (seen && mayHaveWritten(err)) throw err
      if (!lostHold(err) || Date.now() >= deadline) throw err
    }
  }
}

/**
 * The hold ended before the write landed (its lease ran short, or a later holder had written and the
 * fenced write was refused): someone else's turn came, so the whole update is tried again.
 */
function lostHold(err: unknown): boolean {
  if (err instanceof ServiceError) return err.code === 'FencingTokenLowerVersion'
  return err instanceof TimeoutError
}

/** The failure of the update's own write, read back by the client: not known to have missed the store. */
function mayHaveWritten(err: unknown): boolean {
  return err instanceof StateStoreError && err.written !== undefined && err.written !== false
}

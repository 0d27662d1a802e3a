import type { StateStoreClient } from '../../src/client'
import { ServiceError, TimeoutError } from '../../src/errors'
import type { Hlc } from '../../src/hlc'
import { keyLockName, Lock } from '../../src/locks'
import { holdValue } from '../lock/holds'

/** What one update did: the value before (null for a missing key), the value written, and the write's version and token. */
export interface Updated<T> {
  previous: T | null
  value: T
  version: Hlc
  fencingToken: Hlc
}

/** Turns the current value (null: missing) and its version into the new one; runs under the key's lock. */
export type Compute<T> = (current: Buffer | null, version: Hlc | null) => Promise<{ value: T; bytes: Buffer; previous: T | null }>

export interface UpdateOptions {
  holder: string
  leaseMs: number
  timeoutMs: number
  /** Ask the store to persist the key (and its lock, so a restarted store keeps the hold too). */
  persist?: boolean
  /** Told each time a lock is made, so the sidebar can follow it. */
  onLock?: (lock: Lock) => void
}

/**
 * A read-modify-write of `key` under its lock (`keyLockName`): the client's Lock.edit, tried again
 * while time is left when the hold ran out before the write (the lease's time, or a fenced write
 * refused because a later holder had written).
 */
export async function updateKey<T>(client: StateStoreClient, key: string, compute: Compute<T>, options: UpdateOptions): Promise<Updated<T>> {
  const deadline = Date.now() + options.timeoutMs
  for (;;) {
    const remaining = deadline - Date.now()
    if (remaining <= 0) throw new TimeoutError(options.timeoutMs, 'update key')
    // A value of its own per update: two updates of one node must exclude each other too.
    const lock = new Lock(client, keyLockName(key), { holder: holdValue(options.holder), leaseMs: options.leaseMs, persist: options.persist === true })
    options.onLock?.(lock)
    // Filled in by the edit's function, which runs before the write.
    const seen: { computed?: { value: T; previous: T | null }; token?: Hlc } = {}
    try {
      const result = await lock.edit(
        key,
        async (current, { version, fencingToken }) => {
          const next = await compute(current, version)
          seen.computed = next
          seen.token = fencingToken
          return next.bytes
        },
        { timeoutMs: remaining },
      )
      const version = 'applied' in result ? result.version : null
      if (!seen.computed || !seen.token || version === null) throw new TimeoutError(options.timeoutMs, 'update key')
      return { previous: seen.computed.previous, value: seen.computed.value, version, fencingToken: seen.token }
    } catch (err) {
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

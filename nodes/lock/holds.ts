import { randomBytes } from 'node:crypto'
import type { StateStoreClient } from '../../src/client'

/**
 * What an acquired msg carries in `msg.lock`: enough for any node to release or renew this hold.
 * `value` is what the hold wrote under the lock name (`<holder>:<session>` in lock mode, as the SDKs'
 * session ids do), so no other hold can take or delete the key by mistake.
 */
export interface HoldInfo {
  name: string
  holder: string
  value: string
  fencingToken: string
}

/** A hold made in this runtime: ending it stops its renewal and its *Hold at most* timer. */
export interface Hold {
  readonly info: HoldInfo
  /** Stops renewal and deletes the key if it still holds this hold's value; true when it did. */
  release(options?: { timeoutMs?: number }): Promise<boolean>
  /** Renews it; the new fencing token, or null when the hold is gone. */
  renew(): Promise<string | null>
  /** How long it surely still holds, as this runtime measures it; 0 when it has ended. */
  remainingMs(): number
  /** Wall-clock ms at which it was acquired. */
  readonly since: number
  /** A run-once claim: marks its work done; true when it still held (see Claim.complete). */
  complete?(): Promise<boolean>
}

/** The holds of this runtime, by name and value: a release from any node finds the one a msg carries. */
const holds = new Map<string, Hold>()

const id = (name: string, value: string): string => `${name}\u0000${value}`

export function register(hold: Hold): void {
  holds.set(id(hold.info.name, hold.info.value), hold)
}

/** Holds of this runtime that have ended, newest last: a msg that still carries one writes under no hold. */
const ended = new Set<string>()
const ENDED_KEPT = 10_000

/** Forgets a hold, if it is still the one registered under its identity. */
export function unregister(hold: Hold): void {
  const key = id(hold.info.name, hold.info.value)
  if (holds.get(key) !== hold) return
  holds.delete(key)
  ended.add(key)
  if (ended.size > ENDED_KEPT) ended.delete(ended.values().next().value as string)
}

/**
 * How long the hold a msg carries surely lasts, to bound a write under it (a write that lands after
 * the hold could land before the next holder's first, where fencing cannot refuse it): 0 for a hold
 * of this runtime that has ended; undefined when the msg carries none made in this runtime.
 */
export function holdTimeLeft(lock: unknown): number | undefined {
  const info = carried(lock)
  if (!info) return undefined
  const key = id(info.name, info.value)
  const hold = holds.get(key)
  if (hold) return Math.floor(hold.remainingMs())
  return ended.has(key) ? 0 : undefined
}

export function find(info: Pick<HoldInfo, 'name' | 'value'>): Hold | undefined {
  return holds.get(id(info.name, info.value))
}

/** Holders seen by a waiting msg, by lock name, with when they were first seen: how long a hold of another runtime has lasted at least. */
const sightings = new Map<string, { value: string; since: number }>()
const SIGHTINGS_KEPT = 10_000

/**
 * Since when `value` has held the lock `name`, as this runtime knows it: exactly for a hold made
 * here, otherwise since a msg of this runtime first saw it hold the lock (`now` when first seen now).
 */
export function heldSince(name: string, value: string, now: number): number {
  const local = holds.get(id(name, value))
  if (local) return local.since
  const seen = sightings.get(name)
  if (seen?.value === value) return seen.since
  sightings.delete(name)
  sightings.set(name, { value, since: now })
  if (sightings.size > SIGHTINGS_KEPT) sightings.delete(sightings.keys().next().value as string)
  return now
}

/**
 * The holder a lock or update key node writes under: its Holder setting, or by default
 * `<client id>/<node id>` (the editor's placeholder), unique to the node across runtimes.
 */
export function holderName(setting: string | undefined, clientId: string | undefined, nodeId: string): string {
  return setting?.trim() || `${clientId ?? 'nodered'}/${nodeId}`
}

/** A session of its own for each hold: 12 hex digits after the holder's name. */
export function holdValue(holder: string): string {
  return `${holder}:${randomBytes(6).toString('hex')}`
}

/** The hold a msg carries, if `msg.lock` has the shape of one. */
export function carried(lock: unknown): HoldInfo | null {
  if (typeof lock !== 'object' || lock === null) return null
  const { name, holder, value, fencingToken } = lock as Record<string, unknown>
  if (typeof name !== 'string' || name === '' || typeof value !== 'string' || value === '') return null
  return { name, value, holder: typeof holder === 'string' ? holder : value, fencingToken: typeof fencingToken === 'string' ? fencingToken : '' }
}

/**
 * Releases the hold a msg carries. Made in this runtime, the hold ends there (renewal and timers
 * stop); otherwise (another runtime, a node since redeployed) the key is deleted if it still holds
 * this hold's value.
 */
export async function releaseCarried(client: StateStoreClient, info: HoldInfo): Promise<boolean> {
  const hold = find(info)
  if (hold) return hold.release()
  return (await client.vdel(info.name, info.value)).deleted === 1
}

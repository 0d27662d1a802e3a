import { randomBytes } from 'node:crypto'
import { TimeoutError } from '../diagnostics/errors'
import type { Hlc } from '../hlc'
import type { Bytes } from '../protocol'
import { requirePositive, requireValue } from '../checks/arguments'
import { wholeNumber } from '../checks/whole-number'
import { ArgumentError } from '../diagnostics/errors'
import type { RequestOptions, StateStoreClient } from '../client'
import { DEFAULT_LEASE_MS, Lease } from './lease'
import { KeyWatch } from './key-watch'
import { Latch, pause } from './wait'
import type { WaitOptions } from './acquire'

/** How long a completed claim keeps a later redelivery a duplicate unless told otherwise: a day. */
export const DEFAULT_KEEP_MS = 24 * 60 * 60 * 1000

export interface ClaimOptions extends WaitOptions {
  /** Who claims, stored in the claim (with a session of its own); default the client id. */
  holder?: string
  /** How long a claim lasts without renewal; a claim whose runtime died is claimable again after it. Default 10000 ms. */
  leaseMs?: number
  /** Renew the claim at this period while the work runs; default a third of leaseMs. */
  renewPeriodMs?: number
  /** How long a completed claim is kept (the store is not filled by old ids); default a day. */
  keepMs?: number
  persist?: boolean
}

/** What a claim key holds: in work (`claimed`) or completed (`done`), by whom and since when (wall-clock ms). */
export interface ClaimRecord {
  readonly state: 'claimed' | 'done'
  readonly by: string
  readonly at: number
  readonly doneAt?: number
}

export type ClaimOutcome =
  | { readonly claimed: true; readonly claim: Claim }
  /** Someone claimed it first: its record (null when the key holds something that is not a claim), and the raw value. */
  | { readonly claimed: false; readonly record: ClaimRecord | null; readonly value: Buffer }

/** A claim's value: a record with a session of its own, so no other claim, not even a restarted runtime's, equals it. */
function claimValue(record: ClaimRecord, session: string): string {
  return JSON.stringify({ ...record, session })
}

/** The record in a claim key's value, or null when it is not one. */
export function parseClaim(value: Buffer): ClaimRecord | null {
  try {
    const v = JSON.parse(value.toString('utf8')) as Record<string, unknown>
    if ((v.state !== 'claimed' && v.state !== 'done') || typeof v.by !== 'string' || typeof v.at !== 'number') return null
    return { state: v.state, by: v.by, at: v.at, ...(typeof v.doneAt === 'number' ? { doneAt: v.doneAt } : {}) }
  } catch {
    return null
  }
}

/**
 * A msg's claim, held: a lease on the claim key with a value of its own, renewed while the work
 * runs. `complete` marks it done (kept keepMs), `release` gives it up (claimable at once).
 */
export class Claim {
  private ended = false

  constructor(
    readonly key: Buffer,
    readonly lease: Lease,
    readonly record: ClaimRecord,
    readonly fencingToken: Hlc,
    private readonly keepMs: number,
  ) {}

  /** The value the claim wrote under its key. */
  get value(): string {
    return this.lease.holderValue.toString('utf8')
  }

  /**
   * Marks the work done: the key then says `done` for keepMs, so a redelivery is a duplicate. Written
   * only while the claim surely holds (answered within the time it has left, as Lock.edit writes),
   * so it never overwrites a claim made after ours ran out; false when it had already run out.
   */
  async complete(options: RequestOptions = {}): Promise<boolean> {
    if (this.ended) return false
    const left = Math.floor(this.lease.remainingMs)
    this.ended = true
    // No renewal and no follow from here: the done value replaces ours.
    await this.lease.close()
    if (left < 1) return false
    const session = (JSON.parse(this.value) as { session: string }).session
    const done = claimValue({ ...this.record, state: 'done', doneAt: Date.now() }, session)
    try {
      await this.lease.client.set(this.key, done, {
        ...options,
        expiryMs: this.keepMs,
        persist: this.lease.persist,
        timeoutMs: Math.min(left, options.timeoutMs ?? left),
      })
    } catch (err) {
      if (err instanceof TimeoutError) return false
      throw err
    }
    return true
  }

  /** Gives the claim up without completing it (the work failed): the next delivery claims it at once. */
  async release(options: RequestOptions = {}): Promise<boolean> {
    if (this.ended) return false
    this.ended = true
    return this.lease.release(options)
  }

  /** Whether complete or release has ended it here. */
  get isEnded(): boolean {
    return this.ended
  }
}

/**
 * Claims `key` for one msg's work (`SET key <record> NEX PX leaseMs`, the record a value of its own).
 * Claimed: the claim, with its fencing token. Claimed by someone else and `done`: a duplicate at once.
 * In work elsewhere: waits (up to timeoutMs; 0 or none: not at all) for that claim to complete (a
 * duplicate) or to run out (a runtime that died mid-work: claimed again here), on the key's watch.
 */
export async function claimOnce(client: StateStoreClient, key: Bytes, options: ClaimOptions = {}): Promise<ClaimOutcome> {
  const name = Buffer.from(requireValue(key, 'claim key'))
  const leaseMs = requirePositive(options.leaseMs, 'leaseMs') ?? DEFAULT_LEASE_MS
  const keepMs = requirePositive(options.keepMs, 'keepMs') ?? DEFAULT_KEEP_MS
  if (wholeNumber(keepMs, 1) === undefined) throw new ArgumentError(`keepMs must be a whole number of milliseconds, got ${keepMs}`)
  const waitMs = options.timeoutMs ?? 0
  const deadline = Date.now() + waitMs
  const record: ClaimRecord = { state: 'claimed', by: options.holder ?? client.clientId, at: Date.now() }
  const session = randomBytes(6).toString('hex')
  const lease = new Lease(client, name, {
    holder: claimValue(record, session),
    leaseMs,
    renewPeriodMs: options.renewPeriodMs ?? Math.max(1, Math.floor(leaseMs / 3)),
    ...(options.persist ? { persist: true } : {}),
  })
  const changed = new Latch()
  const watch = client.canObserve ? KeyWatch.of(client, name) : null
  const unlisten = watch?.listen(() => changed.set())
  const { signal } = options
  try {
    for (;;) {
      changed.reset()
      const watched = watch?.registered ?? false
      const tried = await lease.tryAcquire({ ...(signal ? { signal } : {}) })
      if (tried.acquired) return { claimed: true, claim: new Claim(name, lease, record, tried.fencingToken!, keepMs) }
      const { value } = await client.get(name, signal ? { signal } : {})
      // Ran out or completed-and-expired between the SET and the GET: try again.
      if (value === null) continue
      const seen = parseClaim(value)
      const remaining = deadline - Date.now()
      if (seen?.state !== 'claimed' || remaining <= 0) return { claimed: false, record: seen, value }
      // A change between that try and the registration would be missed: register, then try again.
      if (watch && !watched) {
        await watch.ready({ timeoutMs: remaining, ...(signal ? { signal } : {}) })
        continue
      }
      await pause(Math.min(watch ? leaseMs : 100, remaining), { latch: changed, client, what: 'claim', ...(signal ? { signal } : {}) })
    }
  } finally {
    unlisten?.()
  }
}

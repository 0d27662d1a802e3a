import { randomBytes } from 'node:crypto'
import { ArgumentError, isTransient, TimeoutError } from '../diagnostics/errors'
import type { Hlc } from '../hlc'
import type { Bytes } from '../protocol'
import { cancelledBy, requirePositive, requireValue } from '../checks/arguments'
import { wholeNumber } from '../checks/whole-number'
import type { RequestOptions, StateStoreClient } from '../client'
import type { WaitOptions } from './acquire'
import { KeyWatch } from './key-watch'
import { DEFAULT_LEASE_MS, Lease } from './lease'
import { head, initialSemaphore, semaphoreStep, slotsToTry, type SemaphoreInput, type SemaphoreState } from './semaphore-state'
import { Latch, pause } from './wait'

/** What follows a semaphore's name to name its slot i: `<name>/slot-<i>`. */
export const SLOT_SEPARATOR = '/slot-'

const BACKOFF_BASE_MS = 20
const BACKOFF_MAX_MS = 250
const POLL_MS = 100

export interface SemaphoreOptions {
  /** How many may hold it at once, across every runtime that uses the same name and limit. */
  limit: number
  /** How long a slot lasts without renewal: a dead holder's slot comes back after it. Default 10000 ms. */
  leaseMs?: number
  /** Renew a held slot at this period; default none (the holder renews or releases). */
  renewPeriodMs?: number
  persist?: boolean
}

export interface PermitOptions extends WaitOptions {
  /** The value written under the slot; default `<client id>:<12 hex digits>`, unique to this permit. */
  holder?: Bytes
}

/** One slot of a semaphore, held: a lease on the slot's key, fenced by its own token. */
export class Permit {
  constructor(
    private readonly semaphore: Semaphore,
    readonly slot: number,
    readonly lease: Lease,
    readonly fencingToken: Hlc,
  ) {}

  /** The slot's key. */
  get key(): Buffer {
    return this.lease.name
  }

  /** Gives the slot back (VDEL of our value); true when it still held it. */
  async release(options: RequestOptions = {}): Promise<boolean> {
    try {
      return await this.lease.release(options)
    } finally {
      this.semaphore.slotEnded(this.slot, true)
    }
  }
}

/**
 * At most `limit` holders of one name across runtimes: slot i is a lease on `<name>/slot-<i>`, so a
 * slot is held by one holder at a time, fenced by its own token, and a dead holder's slot comes back
 * when its lease runs out. This runtime's waiters take their turns in arrival order; the one whose
 * turn it is tries the slots (semaphore-state.ts says which first) and, when all are held, waits for
 * a DELETE on any of them, or a lease length at most in case a notification was lost.
 */
export class Semaphore {
  readonly name: Buffer
  readonly limit: number
  readonly leaseMs: number
  readonly renewPeriodMs: number | undefined
  readonly persist: boolean
  private state: SemaphoreState
  private waiters = 0
  /** Wakes the waiter whose turn has come. */
  private readonly turns = new Map<number, () => void>()

  constructor(
    readonly client: StateStoreClient,
    name: Bytes,
    options: SemaphoreOptions,
  ) {
    this.name = Buffer.from(requireValue(name, 'semaphore name'))
    if (wholeNumber(options.limit, 1) === undefined) throw new ArgumentError(`limit must be a whole number of 1 or more, got ${options.limit}`)
    this.limit = options.limit
    this.leaseMs = requirePositive(options.leaseMs, 'leaseMs') ?? DEFAULT_LEASE_MS
    this.renewPeriodMs = options.renewPeriodMs
    this.persist = options.persist === true
    this.state = initialSemaphore(this.limit)
  }

  /** The key of slot i. */
  slotKey(slot: number): Buffer {
    return Buffer.concat([this.name, Buffer.from(`${SLOT_SEPARATOR}${slot}`)])
  }

  /** Who holds each slot now (null: free). */
  async holders(options: RequestOptions = {}): Promise<Array<{ slot: number; holder: Buffer | null; version: Hlc | null }>> {
    return Promise.all(
      Array.from({ length: this.limit }, async (_, slot) => {
        const { value, version } = await this.client.get(this.slotKey(slot), options)
        return { slot, holder: value, version }
      }),
    )
  }

  /** Waits for a slot, in turn behind this runtime's earlier waiters; TimeoutError / CancelledError / ConnectionError. */
  async acquire(options: PermitOptions = {}): Promise<Permit> {
    const timeoutMs = requirePositive(options.timeoutMs, 'timeoutMs')
    const deadline = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs
    const waiter = ++this.waiters
    this.step({ kind: 'wait', waiter })
    try {
      await this.turn(waiter, deadline, options.signal)
      return await this.take(options, deadline, timeoutMs ?? 0)
    } finally {
      this.turns.delete(waiter)
      this.step({ kind: 'leave', waiter })
    }
  }

  /** @internal A permit's slot ended: released by us (free) or lost (not known). */
  slotEnded(slot: number, released: boolean): void {
    this.step(released ? { kind: 'freed', slot } : { kind: 'lost', slot })
  }

  private step(input: SemaphoreInput): void {
    const before = head(this.state)
    this.state = semaphoreStep(this.state, input)
    const now = head(this.state)
    if (now !== null && now !== before) this.turns.get(now)?.()
  }

  /** Resolves when `waiter` is the first of this runtime's waiters. */
  private turn(waiter: number, deadline: number, signal: AbortSignal | undefined): Promise<void> {
    if (head(this.state) === waiter) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const finish = (err?: Error) => {
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        this.turns.delete(waiter)
        if (err) reject(err)
        else resolve()
      }
      const onAbort = () => finish(cancelledBy(signal!, 'semaphore acquire'))
      if (signal?.aborted) return onAbort()
      const timer = Number.isFinite(deadline)
        ? setTimeout(() => finish(new TimeoutError(Math.max(0, deadline - Date.now()), 'semaphore acquire')), Math.max(0, deadline - Date.now()))
        : undefined
      signal?.addEventListener('abort', onAbort, { once: true })
      this.turns.set(waiter, () => finish())
    })
  }

  /** The head's tries: every slot worth trying, then a wait for a DELETE on any of them. */
  private async take(options: PermitOptions, deadline: number, timeoutMs: number): Promise<Permit> {
    const { client } = this
    const { signal } = options
    const value = Buffer.from(options.holder ?? `${client.clientId}:${randomBytes(6).toString('hex')}`)
    const remaining = () => deadline - Date.now()
    const expired = () => new TimeoutError(timeoutMs, 'semaphore acquire')
    const freed = new Latch()
    const watches = client.canObserve ? Array.from({ length: this.limit }, (_, slot) => KeyWatch.of(client, this.slotKey(slot))) : []
    const unlisten = watches.map((w, slot) =>
      w.listen((n) => {
        if (n.operation === 'DELETE') {
          this.step({ kind: 'freed', slot })
          freed.set()
        } else if (!n.value?.equals(value)) this.step({ kind: 'taken', slot })
      }),
    )
    try {
      for (let attempt = 0; ; attempt++) {
        if (signal?.aborted) throw cancelledBy(signal, 'semaphore acquire')
        if (remaining() <= 0) throw expired()
        freed.reset()
        const watched = watches.every((w) => w.registered)
        let failed = false
        for (const slot of slotsToTry(this.state)) {
          const lease = new Lease(client, this.slotKey(slot), {
            holder: value,
            leaseMs: this.leaseMs,
            followKey: true,
            ...(this.renewPeriodMs !== undefined ? { renewPeriodMs: this.renewPeriodMs } : {}),
            ...(this.persist ? { persist: true } : {}),
          })
          try {
            const requestTimeout = Number.isFinite(remaining()) ? { timeoutMs: Math.max(1, remaining()) } : {}
            const tried = await lease.tryAcquire({ ...requestTimeout, ...(signal ? { signal } : {}) })
            this.step({ kind: 'tried', slot, acquired: tried.acquired })
            if (tried.acquired) {
              const permit = new Permit(this, slot, lease, tried.fencingToken!)
              lease.on('lost', () => this.slotEnded(slot, false))
              return permit
            }
          } catch (err) {
            if (client.status.state === 'closed' || !(err instanceof TimeoutError || isTransient(err))) throw err
            if (remaining() <= 0) throw expired()
            failed = true
            break
          }
        }
        if (!failed && watches.length > 0 && !watched) {
          // A DELETE between those tries and the registrations would be missed: register, then try again.
          await Promise.all(watches.map((w) => w.ready({ timeoutMs: Math.max(1, Math.min(remaining(), this.leaseMs)), ...(signal ? { signal } : {}) })))
          continue
        }
        if (!failed) {
          await pause(Math.min(watches.length > 0 ? this.leaseMs : POLL_MS, remaining()), { signal, latch: freed, client, what: 'semaphore acquire' })
          if (freed.value) continue
        }
        if (remaining() <= 0) throw expired()
        const backoff = Math.random() * Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** Math.min(attempt, 10))
        await pause(Math.min(backoff, remaining()), { signal, client, what: 'semaphore acquire' })
      }
    } finally {
      for (const u of unlisten) u()
    }
  }
}

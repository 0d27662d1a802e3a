import { ArgumentError, isTransient } from '../errors'
import type { Hlc } from '../hlc'
import { requireKey, type Bytes } from '../protocol'
import { requirePositive, requireValue } from '../arguments'
import { TypedEmitter } from '../typed-emitter'
import type { KeyNotification, Observation, RequestOptions, SetResult, StateStoreClient } from '../client'
import { wholeNumber } from '../whole-number'

/** How soon a renewal that met a connection loss tries again. */
const RENEW_RETRY_MS = 100

export interface LeaseOptions {
  /** The value stored under the lease name; default the client id. */
  holder?: Bytes
  /** How long the lease lasts without renewal; default 10000 ms. */
  leaseMs?: number
  /** Renew automatically at this period after acquiring; must be shorter than leaseMs. */
  renewPeriodMs?: number
  /** Ask the service to persist the lease (`aio-persistence`), so it outlives an emulator restart with `--persist`; Lock.edit's write too. */
  persist?: boolean
  /**
   * Follow the key while held (KEYNOTIFY, shared per key by the client): when someone else deletes it
   * (a release elsewhere, a `del`, an expiry) or writes another value, the lease ends at once with
   * 'lost' (`deleted: true` for a delete) and no renewal writes it back; a renewal in flight that
   * re-created the key is undone with a VDEL of our own value. Needs key notifications (not the preview dialect).
   */
  followKey?: boolean
}

export interface HolderChange {
  holder: Buffer | null
  version: Hlc | null
  reconciled: boolean
}

export type LeaseEvents = {
  acquired: [{ fencingToken: Hlc }]
  renewed: [{ fencingToken: Hlc }]
  /** Automatic renewal stopped: another holder has it, or the renewal request failed. */
  lost: [{ reason: string; error?: Error; deleted?: boolean }]
  released: []
  holder: [{ holder: Buffer | null; version: Hlc | null }]
  error: [Error]
}

export const DEFAULT_LEASE_MS = 10_000

/**
 * A lease on a key: `SET name holder NEX PX leaseMs`. The version the service returns is the
 * fencing token. Renewal is the same SET (NEX lets the holder overwrite its own value and mints
 * a greater token); release is VDEL with our own holder value, so it never removes someone else's.
 */
export class Lease extends TypedEmitter<LeaseEvents> {
  readonly name: Buffer
  readonly holderValue: Buffer
  readonly leaseMs: number
  readonly renewPeriodMs: number | undefined
  readonly persist: boolean
  readonly followKey: boolean
  private token: Hlc | null = null
  /** performance.now() by which the lease surely still holds: when the request that took or renewed it was sent, plus leaseMs. */
  private heldUntil = 0
  private timer: NodeJS.Timeout | null = null
  /** Bumped by release and close, so a renewal answer that arrives afterwards changes nothing. */
  private generation = 0
  private closed = false
  /** followKey: the observation of the key, from before acquiring until the lease ends. */
  private following: Promise<Observation | null> | null = null
  /** followKey: our own SET has been seen on the key, so a change notified after it came after our acquisition. */
  private armed = false
  /** followKey: a change by someone else seen while our acquiring request was still unanswered. */
  private changedWhileAcquiring: { deleted: boolean } | null = null
  /** The renewal request in flight, if any: a foreign delete waits for it before undoing what it wrote. */
  private renewal: Promise<unknown> | null = null
  /** While renewal is scheduled: a closing client ends it at once instead of at the next tick. */
  private readonly onClientStatus = (status: { state: string }) => {
    if (status.state === 'closed') this.drop({ reason: 'the client was closed' })
  }

  constructor(
    readonly client: StateStoreClient,
    name: Bytes,
    options: LeaseOptions = {},
  ) {
    super()
    this.name = Buffer.from(requireKey(requireValue(name, 'lease name')))
    this.holderValue = Buffer.from(requireValue(options.holder ?? client.clientId, 'holder'))
    if (this.holderValue.length === 0) throw new ArgumentError('the holder must not be empty')
    this.leaseMs = requireWholeMs(options.leaseMs ?? DEFAULT_LEASE_MS, 'leaseMs')
    this.persist = options.persist === true
    this.followKey = options.followKey === true
    this.renewPeriodMs = options.renewPeriodMs === undefined ? undefined : requireWholeMs(options.renewPeriodMs, 'renewPeriodMs')
    if (this.renewPeriodMs !== undefined && this.renewPeriodMs >= this.leaseMs) {
      throw new ArgumentError(`renewPeriodMs (${this.renewPeriodMs}) must be shorter than leaseMs (${this.leaseMs})`)
    }
  }

  /** The token of the lease as last acquired or renewed by us; null when we do not hold it. */
  get fencingToken(): Hlc | null {
    return this.token
  }

  /** How long the lease surely still holds, as this client measures it (the service may keep it longer); 0 when not held. */
  get remainingMs(): number {
    return this.token === null ? 0 : Math.max(0, this.heldUntil - performance.now())
  }

  /** One attempt; on success starts automatic renewal when renewPeriodMs is set. */
  async tryAcquire(options: RequestOptions = {}): Promise<{ acquired: boolean; fencingToken: Hlc | null }> {
    const generation = this.generation
    const held = this.token !== null
    if (!held) await this.follow(options)
    if (generation !== this.generation) return { acquired: false, fencingToken: null }
    const sentAt = performance.now()
    let result: SetResult
    try {
      result = await this.write(options)
    } catch (err) {
      // Not taken (as far as we know): no observation is left open for a lease that may never be tried again.
      if (!held && generation === this.generation && this.token === null) this.unfollow()
      throw err
    }
    if (generation !== this.generation) return { acquired: result.applied, fencingToken: result.applied ? result.version : null }
    if (!result.applied) {
      this.drop(held ? { reason: 'another holder has the lease' } : null)
      return { acquired: false, fencingToken: null }
    }
    if (!held && this.changedWhileAcquiring) {
      // Ours, and already deleted or taken by someone else before we heard it was ours: not acquired.
      this.foreignChange(null)
      return { acquired: false, fencingToken: null }
    }
    this.token = result.version
    this.heldUntil = sentAt + this.leaseMs
    this.emit(held ? 'renewed' : 'acquired', { fencingToken: result.version })
    this.schedule()
    return { acquired: true, fencingToken: result.version }
  }

  /** Extends the lease we hold; false (and 'lost') when someone else holds it now. */
  async renew(options: RequestOptions = {}): Promise<boolean> {
    const generation = this.generation
    const sentAt = performance.now()
    const result = await this.write(options)
    if (generation !== this.generation) return result.applied
    if (!result.applied) {
      this.drop({ reason: 'another holder has the lease' })
      return false
    }
    const renewed = this.token !== null
    this.token = result.version
    this.heldUntil = sentAt + this.leaseMs
    this.emit(renewed ? 'renewed' : 'acquired', { fencingToken: result.version })
    this.schedule()
    return true
  }

  /** The SET that takes or renews the lease, remembered while in flight (see foreignChange). */
  private async write(options: RequestOptions): Promise<SetResult> {
    const request = this.client.set(this.name, this.holderValue, { ...options, condition: 'NEX', expiryMs: this.leaseMs, persist: this.persist })
    this.renewal = request
    try {
      return await request
    } finally {
      if (this.renewal === request) this.renewal = null
    }
  }

  /** Stops renewal and deletes the lease if it still holds our value; true when it did. */
  async release(options: RequestOptions = {}): Promise<boolean> {
    this.generation += 1
    this.stopRenewal()
    this.token = null
    this.unfollow()
    const result = await this.client.vdel(this.name, this.holderValue, options)
    if (result.deleted === 1) this.emit('released')
    return result.deleted === 1
  }

  async holder(options: RequestOptions = {}): Promise<{ holder: Buffer | null; version: Hlc | null }> {
    const { value, version } = await this.client.get(this.name, options)
    return { holder: value, version }
  }

  /** Holder changes (SET = acquired or renewed, DELETE = released or expired) until the observation is closed. */
  observe(listener: (change: HolderChange) => void, options: RequestOptions = {}): Promise<Observation> {
    return this.client.observe(
      this.name,
      (n) => {
        const change: HolderChange = { holder: n.operation === 'SET' ? n.value : null, version: n.version, reconciled: n.reconciled }
        this.emit('holder', { holder: change.holder, version: change.version })
        listener(change)
      },
      options,
    )
  }

  /** Stops automatic renewal without releasing: the lease lapses at its expiry. */
  async close(): Promise<void> {
    this.closed = true
    this.generation += 1
    this.stopRenewal()
    this.unfollow()
  }

  /** followKey: observes the key before acquiring, so our own SET and every change after it are heard in order. */
  private async follow(options: RequestOptions): Promise<void> {
    if (!this.followKey || !this.client.canObserve || this.following) return
    this.armed = false
    this.changedWhileAcquiring = null
    const { timeoutMs, signal } = options
    const following = this.client
      .observe(this.name, (n) => this.onKey(n), { ...(timeoutMs !== undefined ? { timeoutMs } : {}), ...(signal ? { signal } : {}) })
      .catch((err: unknown) => {
        if (this.following === following) this.following = null
        throw err
      })
    this.following = following
    await following
  }

  private unfollow(): void {
    const following = this.following
    this.following = null
    this.armed = false
    this.changedWhileAcquiring = null
    void following?.then((o) => o?.close()).catch(() => {})
  }

  private onKey(n: KeyNotification): void {
    if (n.operation === 'SET' && n.value?.equals(this.holderValue)) {
      this.armed = true
      return
    }
    // A change notified before our own SET came before our acquisition (the previous holder's release).
    if (!this.armed) return
    this.armed = false
    const deleted = n.operation === 'DELETE'
    if (this.token === null) this.changedWhileAcquiring = { deleted }
    else this.foreignChange(deleted)
  }

  /**
   * Someone else deleted the key or wrote another value after our acquisition: the lease ends without
   * writing. A renewal sent meanwhile may have re-created the key (NEX on a missing key): once it is
   * answered, our own value is deleted (VDEL: only our value, never the next holder's).
   */
  private foreignChange(deleted: boolean | null): void {
    this.generation += 1
    const renewal = this.renewal ?? Promise.resolve()
    this.drop(deleted === null ? null : { reason: deleted ? 'the key was deleted by someone else' : 'another holder has the lease', deleted })
    void renewal
      .catch(() => {})
      .then(() => this.client.vdel(this.name, this.holderValue))
      .catch((err: unknown) => {
        if (this.client.status.state !== 'closed' && this.listenerCount('error') > 0) this.emit('error', err as Error)
      })
  }

  private schedule(): void {
    this.stopRenewal()
    if (this.renewPeriodMs === undefined || this.closed) return
    const generation = this.generation
    this.client.on('status', this.onClientStatus)
    this.timer = setTimeout(() => {
      this.timer = null
      // A renewal slower than the time the lease has left is worthless.
      void this.renewBefore(generation, performance.now() + this.leaseMs - this.renewPeriodMs!)
    }, this.renewPeriodMs)
  }

  /**
   * Renews, trying again after a connection loss (the service keeps the lease meanwhile) until
   * the lease would have run out; any other failure, or running out, loses the lease.
   */
  private async renewBefore(generation: number, deadline: number): Promise<void> {
    for (;;) {
      try {
        await this.renew({ timeoutMs: Math.max(1, deadline - performance.now()) })
        return
      } catch (err) {
        if (generation !== this.generation) return
        if (!isTransient(err) || deadline - performance.now() <= RENEW_RETRY_MS) {
          this.drop({ reason: `renewal failed: ${(err as Error).message}`, error: err as Error })
          return
        }
      }
      await new Promise((resolve) => setTimeout(resolve, RENEW_RETRY_MS))
      if (generation !== this.generation) return
    }
  }

  private stopRenewal(): void {
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    this.client.off('status', this.onClientStatus)
  }

  private drop(lost: { reason: string; error?: Error; deleted?: boolean } | null): void {
    this.stopRenewal()
    this.unfollow()
    this.token = null
    if (lost) this.emit('lost', lost)
  }
}

function requireWholeMs(value: number, name: string): number {
  requirePositive(value, name)
  if (wholeNumber(value, 1) === undefined) throw new ArgumentError(`${name} must be a whole number of milliseconds, got ${value}`)
  return value
}

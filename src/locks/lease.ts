import { ArgumentError, isTransient } from '../diagnostics/errors'
import type { Hlc } from '../hlc'
import { requireKey, type Bytes } from '../protocol'
import { requirePositive, requireValue } from '../checks/arguments'
import { TypedEmitter } from '../lang/typed-emitter'
import type { Observation, RequestOptions, SetResult, StateStoreClient } from '../client'
import { KeyWatch } from './key-watch'
import { IDLE, leaseStep, type LeaseInput, type LeaseLossReason, type LeasePhase, type LeaseRules } from './lease-state'
import { wholeNumber } from '../checks/whole-number'

/** How soon a renewal that met a connection loss tries again. */
const RENEW_RETRY_MS = 100

export interface LeaseOptions {
  /** The value stored under the lease name; default the client id. */
  holder?: Bytes
  /** How long the lease lasts without renewal; default 10000 ms. */
  leaseMs?: number
  /** Renew automatically at this period after acquiring; must be shorter than leaseMs. */
  renewPeriodMs?: number
  /**
   * Ask the service to persist the lease (`aio-persistence`), so it outlives an emulator restart with `--persist`;
   * Lock.edit's write too.
   */
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
  lost: [LeaseLoss]
  released: []
  holder: [{ holder: Buffer | null; version: Hlc | null }]
  error: [Error]
}

/** A lost lease: `reason` to tell the cases apart, `message` to show a person. */
export interface LeaseLoss {
  reason: LeaseLossReason
  message: string
  error?: Error
  deleted?: boolean
}

export const DEFAULT_LEASE_MS = 10_000

/**
 * A lease on a key: `SET name holder NEX PX leaseMs`. The version the service returns is the
 * fencing token. Renewal is the same SET (NEX lets the holder overwrite its own value and mints
 * a greater token); release is VDEL with our own holder value, so it never removes someone else's.
 * Its phases are lease-state.ts's machine; this class does the requests and timers it asks for.
 */
export class Lease extends TypedEmitter<LeaseEvents> {
  readonly name: Buffer
  readonly holderValue: Buffer
  readonly leaseMs: number
  readonly renewPeriodMs: number | undefined
  readonly persist: boolean
  readonly followKey: boolean
  private phase: LeasePhase = IDLE
  private readonly rules: LeaseRules
  /** Numbers our SETs, so that an answer to one the machine no longer waits for changes nothing. */
  private requests = 0
  /** Cleared by close: no renewal is scheduled after it. */
  private renews = true
  private timer: NodeJS.Timeout | null = null
  /** The SET in flight, if any: an undo waits for it before deleting what it may have written. */
  private inFlight: Promise<unknown> | null = null
  /** followKey: our listener on the key's watch, while acquiring or held. */
  private unlisten: (() => void) | null = null
  /** While renewal is scheduled: a closing client ends it at once instead of at the next tick. */
  private readonly onClientStatus = (status: { state: string }) => {
    if (status.state === 'closed') this.step({ kind: 'drop', reason: 'clientClosed', message: 'the client was closed' })
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
    this.renewPeriodMs =
      options.renewPeriodMs === undefined ? undefined : requireWholeMs(options.renewPeriodMs, 'renewPeriodMs')
    if (this.renewPeriodMs !== undefined && this.renewPeriodMs >= this.leaseMs) {
      throw new ArgumentError(`renewPeriodMs (${this.renewPeriodMs}) must be shorter than leaseMs (${this.leaseMs})`)
    }
    this.rules = { holder: this.holderValue, leaseMs: this.leaseMs, followKey: this.followKey && client.canObserve }
  }

  /** The token of the lease as last acquired or renewed by us; null when we do not hold it. */
  get fencingToken(): Hlc | null {
    return this.phase.kind === 'held' ? this.phase.token : null
  }

  /**
   * How long the lease surely still holds, as this client measures it (the service may keep it longer); 0 when not
   * held.
   */
  get remainingMs(): number {
    return this.phase.kind === 'held' ? Math.max(0, this.phase.heldUntil - performance.now()) : 0
  }

  /** One attempt (one SET); on success starts automatic renewal when renewPeriodMs is set. */
  async tryAcquire(options: RequestOptions = {}): Promise<{ acquired: boolean; fencingToken: Hlc | null }> {
    const { result, taken, waited } = await this.write(options)
    if (taken) return { acquired: true, fencingToken: taken }
    // Answered after a release or a newer SET of ours: as the service said.
    if (!waited && result.applied) return { acquired: true, fencingToken: result.version }
    return { acquired: false, fencingToken: null }
  }

  /** Extends the lease we hold; false (and 'lost') when someone else holds it now. */
  async renew(options: RequestOptions = {}): Promise<boolean> {
    const { result, taken, waited } = await this.write(options)
    return taken !== null || (!waited && result.applied)
  }

  /**
   * The SET that takes or renews the lease. `waited`: the machine waited for this answer (no release
   * or newer SET came first); `taken`: the token, when the machine holds the lease by this answer.
   */
  private async write(options: RequestOptions): Promise<{ result: SetResult; waited: boolean; taken: Hlc | null }> {
    const request = ++this.requests
    this.follow()
    this.step({
      kind: 'send',
      request,
      sentAt: performance.now(),
      watched: this.rules.followKey && KeyWatch.of(this.client, this.name).registered,
    })
    const sending = this.client.set(this.name, this.holderValue, {
      ...options,
      condition: 'NEX',
      expiryMs: this.leaseMs,
      persist: this.persist,
    })
    this.inFlight = sending
    let result: SetResult
    try {
      result = await sending
    } catch (err) {
      this.step({ kind: 'failed', request })
      throw err
    } finally {
      if (this.inFlight === sending) this.inFlight = null
    }
    const waited =
      (this.phase.kind === 'acquiring' && this.phase.request === request) ||
      (this.phase.kind === 'held' && this.phase.renewal?.request === request)
    this.step({ kind: 'answer', request, applied: result.applied, version: result.version })
    const taken = waited && this.phase.kind === 'held' && this.phase.token === result.version ? result.version : null
    return { result, waited, taken }
  }

  /** Stops renewal and deletes the lease if it still holds our value; true when it did. */
  async release(options: RequestOptions = {}): Promise<boolean> {
    this.step({ kind: 'end' })
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
        const change: HolderChange = {
          holder: n.operation === 'SET' ? n.value : null,
          version: n.version,
          reconciled: n.reconciled,
        }
        this.emit('holder', { holder: change.holder, version: change.version })
        listener(change)
      },
      options,
    )
  }

  /** Stops automatic renewal without releasing: the lease lapses at its expiry. */
  async close(): Promise<void> {
    this.renews = false
    this.step({ kind: 'end' })
  }

  /** Moves the machine and does what it asks for. */
  private step(input: LeaseInput): void {
    const { phase, effects } = leaseStep(this.phase, input, this.rules)
    this.phase = phase
    if (phase.kind === 'idle') {
      this.stopRenewal()
      this.unfollow()
    }
    for (const effect of effects) {
      switch (effect.kind) {
        case 'acquired':
        case 'renewed':
          this.emit(effect.kind, { fencingToken: effect.token })
          this.schedule()
          break
        case 'lost':
          this.emit('lost', {
            reason: effect.reason,
            message: effect.message,
            ...(effect.error ? { error: effect.error } : {}),
            ...(effect.deleted !== undefined ? { deleted: effect.deleted } : {}),
          })
          break
        case 'undo':
          this.undo()
          break
        case 'check':
          this.check()
          break
      }
    }
  }

  /**
   * followKey: listens to the key's watch (shared by the client's leases and waiters of this name) from before our SET.
   */
  private follow(): void {
    if (!this.rules.followKey || this.unlisten) return
    this.unlisten = KeyWatch.of(this.client, this.name).listen((n) => this.step({ kind: 'heard', change: n }))
  }

  private unfollow(): void {
    this.unlisten?.()
    this.unlisten = null
  }

  /**
   * Our SET was sent before the watch was registered: register it, then read whether the key is
   * still ours (the registration's own read when it made one after our SET, else a GET).
   */
  private check(): void {
    if (this.phase.kind !== 'held') return
    const acquiredBy = this.phase.acquiredBy
    const stillOurs = () => this.phase.kind === 'held' && this.phase.acquiredBy === acquiredBy
    void KeyWatch.of(this.client, this.name)
      .ready({ timeoutMs: this.leaseMs })
      .then((read) => read ?? (stillOurs() ? this.client.get(this.name, { timeoutMs: this.leaseMs }) : null))
      .then((read) => read && this.step({ kind: 'read', acquiredBy, value: read.value }))
      // Not registered or not read: our next renewal's own SET, heard, arms the follow.
      .catch(() => {})
  }

  /**
   * Someone else deleted the key or wrote another value after our acquisition. A SET of ours sent
   * meanwhile may have re-created the key (NEX on a missing key): once it is answered, our own value
   * is deleted (VDEL: only our value, never the next holder's).
   */
  private undo(): void {
    const inFlight = this.inFlight ?? Promise.resolve()
    void inFlight
      .catch(() => {})
      .then(() => this.client.vdel(this.name, this.holderValue))
      .catch((err: unknown) => {
        if (this.client.status.state !== 'closed' && this.listenerCount('error') > 0) this.emit('error', err as Error)
      })
  }

  private schedule(): void {
    this.stopRenewal()
    if (this.renewPeriodMs === undefined || !this.renews || this.phase.kind !== 'held') return
    const acquiredBy = this.phase.acquiredBy
    this.client.on('status', this.onClientStatus)
    this.timer = setTimeout(() => {
      this.timer = null
      // A renewal slower than the time the lease has left is worthless.
      void this.renewBefore(acquiredBy, performance.now() + this.leaseMs - this.renewPeriodMs!)
    }, this.renewPeriodMs)
  }

  /**
   * Renews, trying again after a connection loss (the service keeps the lease meanwhile) until
   * the lease would have run out; any other failure, or running out, loses the lease.
   */
  private async renewBefore(acquiredBy: number, deadline: number): Promise<void> {
    const stillHeld = () => this.phase.kind === 'held' && this.phase.acquiredBy === acquiredBy
    for (;;) {
      if (!stillHeld()) return
      try {
        await this.renew({ timeoutMs: Math.max(1, deadline - performance.now()) })
        return
      } catch (err) {
        if (!stillHeld()) return
        if (!isTransient(err) || deadline - performance.now() <= RENEW_RETRY_MS) {
          this.step({
            kind: 'drop',
            reason: 'renewalFailed',
            message: `renewal failed: ${(err as Error).message}`,
            error: err as Error,
          })
          return
        }
      }
      await new Promise((resolve) => setTimeout(resolve, RENEW_RETRY_MS))
    }
  }

  private stopRenewal(): void {
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    this.client.off('status', this.onClientStatus)
  }
}

function requireWholeMs(value: number, name: string): number {
  requirePositive(value, name)
  if (wholeNumber(value, 1) === undefined)
    throw new ArgumentError(`${name} must be a whole number of milliseconds, got ${value}`)
  return value
}

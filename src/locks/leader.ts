import { randomUUID } from 'node:crypto'
import { ArgumentError, isTransient } from '../diagnostics/errors'
import type { Hlc } from '../hlc'
import type { Bytes } from '../protocol'
import { acquireLease, type WaitOptions } from './acquire'
import { pause } from './wait'
import { requirePositive, requireValue } from '../checks/arguments'
import { DEFAULT_LEASE_MS, Lease, type LeaseLoss } from './lease'
import type { LeaseLossReason } from './lease-state'
import { TypedEmitter } from '../lang/typed-emitter'
import type { Observation, RequestOptions, StateStoreClient } from '../client'

export interface LeaderElectionOptions {
  /** This candidate's name, stored under the position while it leads; default the client id. */
  candidate?: Bytes
  /** How long a term lasts without renewal; default 10000 ms. */
  termMs?: number
  /** The leader renews its term at this period; default a third of termMs. */
  renewPeriodMs?: number
  /**
   * Hold the candidate's name while campaigning and leading, so that no two candidates campaign under one name (the
   * position holds the name, so two of one name would both lead): the key `<position>/candidates/<name>` is a lease
   * of this election alone. A campaign under a name another live election holds is refused (an ArgumentError naming
   * it); a name left by a process that died is free once its term has passed.
   */
  exclusiveCandidate?: boolean
  /**
   * A term lost to a write this candidate did not make while its term still held (by its own clock; no candidate can
   * take a term that holds) is not given up at once: 'overwritten' is emitted, the candidate stays leader for one
   * term, then takes the position back if nobody renewed that write (deleting it by its value, then campaigning)
   * and emits 'reclaimed'; if someone did renew it, or the position cannot be taken back, the term is lost
   * (anotherHolder). Off, such a term is lost at once.
   */
  rideOutOverwrite?: boolean
}

export interface StandOptions {
  /** Ends the candidacy; a term held then is kept (resign to give it up). */
  signal: AbortSignal
  /** Wait this long before campaigning again after a campaign failed; default 1000 ms. */
  retryMs?: number
  /** Called each time a campaign starts: at first, and again after a lost term or a failed campaign. */
  onCampaign?: () => void
  /** A campaign failed (the service refused it, say); it is tried again after retryMs. */
  onError?: (err: Error) => void
}

const STAND_RETRY_MS = 1000

export type LeaderElectionEvents = {
  /** This candidate became the leader. */
  elected: [{ fencingToken: Hlc }]
  /** This candidate is no longer the leader: resigned, closed, or a renewal failed. */
  lost: [LeaderLoss]
  /** The position changed hands, as observed: the new leader's name, or null when nobody leads. */
  leader: [{ leader: Buffer | null }]
  /** rideOutOverwrite: the position was overwritten while our term held; we stay leader for a term and see. */
  overwritten: [{ holder: Buffer | null; message: string }]
  /** rideOutOverwrite: nobody renewed the overwrite within a term, and we hold the position again. */
  reclaimed: [{ fencingToken: Hlc }]
  error: [Error]
}

/** Why a term ended: as a lease ends, or resigned, or the election closed. */
export type LeaderLossReason = LeaseLossReason | 'resigned' | 'closed'

/** An ended term: `reason` to tell the cases apart, `message` to show a person. */
export interface LeaderLoss {
  reason: LeaderLossReason
  message: string
  error?: Error
}

/**
 * Leader election over a lease on the position key (as the .NET client does it): campaigning is
 * acquiring, the term is renewed automatically, resigning is releasing. Changes of leader are
 * observed with KEYNOTIFY on the position.
 */
export class LeaderElection extends TypedEmitter<LeaderElectionEvents> {
  readonly lease: Lease
  private elected = false
  private known: Buffer | null | undefined = undefined
  private watching: Promise<Observation> | null = null
  private closed = false
  /** Why the last term ended, so that a candidacy can tell a resignation from a lost term. */
  private lastLoss: LeaderLossReason | null = null
  /** exclusiveCandidate: the lease on the candidate's name, held by this election's own id. */
  private readonly name: Lease | null
  private readonly rideOut: boolean
  /** performance.now() until which our term surely holds, as of its last renewal. */
  private termUntil = 0

  constructor(client: StateStoreClient, position: Bytes, options: LeaderElectionOptions = {}) {
    super()
    const termMs = requirePositive(options.termMs, 'termMs') ?? DEFAULT_LEASE_MS
    const renewPeriodMs = options.renewPeriodMs ?? Math.max(1, Math.floor(termMs / 3))
    const candidate = requireValue(options.candidate ?? client.clientId, 'candidate')
    this.lease = new Lease(client, position, { holder: candidate, leaseMs: termMs, renewPeriodMs })
    this.name = options.exclusiveCandidate
      ? new Lease(client, Buffer.concat([this.lease.name, Buffer.from('/candidates/'), Buffer.from(candidate)]), {
          holder: randomUUID(),
          leaseMs: termMs,
          renewPeriodMs,
        })
      : null
    this.rideOut = options.rideOutOverwrite === true
    const held = () => (this.termUntil = performance.now() + this.lease.remainingMs)
    this.lease.on('acquired', ({ fencingToken }) => {
      held()
      if (this.elected) return
      this.elected = true
      this.emit('elected', { fencingToken })
    })
    this.lease.on('renewed', held)
    this.lease.on('lost', (lost) => {
      if (this.rideOut && this.elected && lost.reason === 'anotherHolder' && performance.now() < this.termUntil)
        void this.rideOutOverwrite(lost)
      else this.lose(lost)
    })
    // Our name taken by another election (ours lapsed, say, in a long disconnection): two of one name must not lead.
    this.name?.on('lost', () => {
      if (!this.elected) return
      void this.lease.release().catch(() => {})
      this.lose({ reason: 'anotherHolder', message: 'another candidate holds this candidate name' })
    })
  }

  get isLeader(): boolean {
    return this.elected
  }

  /** One attempt to become (or stay) the leader. */
  async tryCampaign(options: RequestOptions = {}): Promise<boolean> {
    await this.watch(options)
    await this.claimName(options)
    const { acquired } = await this.lease.tryAcquire(options)
    return acquired
  }

  /** Waits until elected; returns the term's fencing token. */
  async campaign(options: WaitOptions = {}): Promise<Hlc> {
    // Knowing who leads is not needed to wait: a connection loss here is for acquireLease to ride through.
    await this.watch(options).catch((err: unknown) => {
      if (!isTransient(err)) throw err
    })
    await this.claimName(options)
    return acquireLease(this.lease, options, 'campaign')
  }

  /** exclusiveCandidate: holds the candidate's name, or refuses when another live election holds it. */
  private async claimName(options: RequestOptions): Promise<void> {
    if (!this.name || this.name.fencingToken) return
    if ((await this.name.tryAcquire(options)).acquired) return
    throw new ArgumentError(
      `the candidate name ${this.lease.holderValue.toString('utf8')} is held by another running candidate ` +
        `(${this.name.name.toString('utf8')}): each candidate needs a name of its own`,
    )
  }

  /**
   * rideOutOverwrite: the position was written by someone else while our term held. We stay leader for one term;
   * then a write nobody renewed (the same value at the same version) is deleted and the position taken back.
   */
  private async rideOutOverwrite(lost: LeaseLoss): Promise<void> {
    const client = this.lease.client
    try {
      const seen = await client.get(this.lease.name)
      if (!this.elected) return
      this.emit('overwritten', {
        holder: seen.value,
        message:
          "the position was written by someone else while this candidate's term held; " +
          `waiting a term (${this.lease.leaseMs} ms) to see whether anyone renews it`,
      })
      await pause(this.lease.leaseMs, { client, what: 'riding out an overwrite' })
      if (!this.elected) return
      const now = await client.get(this.lease.name)
      if (!this.elected) return
      const unrenewed =
        now.value === null ||
        (seen.value !== null &&
          now.value.equals(seen.value) &&
          (now.version?.toString() ?? '') === (seen.version?.toString() ?? ''))
      if (!unrenewed) return this.lose({ ...lost, message: 'another holder renewed the position: it leads' })
      if (now.value !== null) await client.vdel(this.lease.name, now.value)
      const again = await this.lease.tryAcquire()
      if (!this.elected) return
      if (!again.acquired || !again.fencingToken) return this.lose(lost)
      this.emit('reclaimed', { fencingToken: again.fencingToken })
    } catch (err) {
      this.lose({ ...lost, error: err as Error })
    }
  }

  /**
   * Stands for the position until `signal` aborts: campaigns until elected, and again whenever a
   * term is lost other than by resigning (a renewal refused or failed); a campaign that fails is
   * tried again after retryMs. Ends, without rejecting, when the signal aborts, on resign or close,
   * or when the client is closed.
   */
  async stand(options: StandOptions): Promise<void> {
    const { signal } = options
    const retryMs = requirePositive(options.retryMs, 'retryMs') ?? STAND_RETRY_MS
    const client = this.lease.client
    const stopped = () => signal.aborted || this.closed || client.status.state === 'closed'
    while (!stopped()) {
      options.onCampaign?.()
      try {
        await this.campaign({ signal })
      } catch (err) {
        if (stopped()) return
        options.onError?.(err as Error)
        try {
          await pause(retryMs, { signal, client, what: 'campaign' })
        } catch {
          return // aborted or the client closed
        }
        continue
      }
      const reason = await this.termEnded(signal)
      if (reason === null || reason === 'resigned' || reason === 'closed') return
    }
  }

  /** Gives up the position if we hold it; true when our term was ended. */
  async resign(options: RequestOptions = {}): Promise<boolean> {
    void this.name?.release().catch(() => {})
    const released = this.lease.release(options)
    this.lose({ reason: 'resigned', message: 'resigned' })
    return released
  }

  /** The current leader's name, or null when nobody leads. */
  async leader(options: RequestOptions = {}): Promise<Buffer | null> {
    return (await this.lease.holder(options)).holder
  }

  /** Stops renewing (the term lapses, nothing is deleted) and stops observing. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.lease.close()
    await this.name?.close()
    this.lose({ reason: 'closed', message: 'the election was closed' })
    const watching = this.watching
    this.watching = null
    if (watching) await watching.then((o) => o.close()).catch(() => {})
  }

  private watch(options: RequestOptions): Promise<Observation | null> {
    // Without key notifications (the preview dialect) leader() still answers; 'leader' events are not emitted.
    if (!this.lease.client.canObserve) return Promise.resolve(null)
    if (!this.watching) {
      this.watching = this.lease.observe((change) => this.seen(change.holder), options)
      // The current leader once, so that a follower knows who leads without waiting for a change.
      this.watching.then(
        () =>
          this.lease.holder().then(
            ({ holder }) => this.known === undefined && this.seen(holder),
            () => {},
          ),
        () => (this.watching = null),
      )
    }
    return this.watching
  }

  /** Resolves with the reason our term ended, or null when `signal` aborts first. */
  private termEnded(signal: AbortSignal): Promise<LeaderLossReason | null> {
    if (signal.aborted) return Promise.resolve(null)
    // The term may have ended already, between the election and this call.
    if (!this.elected) return Promise.resolve(this.lastLoss)
    return new Promise((resolve) => {
      const finish = (reason: LeaderLossReason | null) => {
        this.off('lost', onLost)
        signal.removeEventListener('abort', onAbort)
        resolve(reason)
      }
      const onLost = ({ reason }: LeaderLoss) => finish(reason)
      const onAbort = () => finish(null)
      this.on('lost', onLost)
      signal.addEventListener('abort', onAbort, { once: true })
    })
  }

  private seen(leader: Buffer | null): void {
    if (
      this.known !== undefined &&
      (this.known === null ? leader === null : leader !== null && this.known.equals(leader))
    )
      return
    this.known = leader
    this.emit('leader', { leader })
  }

  private lose(lost: LeaderLoss): void {
    if (!this.elected) return
    this.elected = false
    this.lastLoss = lost.reason
    this.emit('lost', lost)
  }
}

import type { KeyNotification } from '../client'
import type { LeaderElection } from '../locks/leader'
import type { Lease } from '../locks/lease'
import { TypedEmitter } from '../lang/typed-emitter'
import { ConnectionMetrics } from './metrics'
import { Timeline, type LockKind } from './timeline'

/** A key some part of the application observes, with the last change it heard of. */
export interface WatchRecord {
  readonly key: string
  /** Who observes it (node ids). */
  readonly observers: Set<string>
  operation: 'SET' | 'DELETE' | null
  /** The last value notified; kept by reference, shown only on request. */
  value: Buffer | null
  version: string | null
  /** Wall-clock ms of the last notification. */
  at: number | null
  notifications: number
  /** How far behind the last notification arrived, ms (see NotificationLag); null before one, or for one a reconnect's read made. */
  behindMs: number | null
}

export type { LockKind }

/** A lease, lock or election position used by one owner (a node) of this application. */
export interface LockRecord {
  /** `${owner}/${name}`: one owner may work with several names. */
  readonly id: string
  readonly owner: string
  readonly name: string
  readonly kind: LockKind
  /** Our holder (candidate) value. */
  readonly holder: string
  readonly leaseMs: number
  held: boolean
  fencingToken: string | null
  /** Wall-clock ms at which our hold lapses unless renewed; null when not held. */
  expiresAt: number | null
  renewals: number
  /** Who holds it as far as we know (ourselves when held), null when free, undefined when unknown. */
  currentHolder: string | null | undefined
  lastReason: string | null
  /** Wall-clock ms of the last change. */
  at: number
}

export type ActivityChange = { kind: 'watch'; key: string } | { kind: 'lock'; id: string; name: string } | { kind: 'connection' }

/**
 * How many lock entries the registry keeps, and how long one that is not held stays without a
 * change: a msg may name any lock, so past either bound the entry changed longest ago is dropped
 * (and counted in `droppedLocks`).
 */
export interface ActivityBounds {
  maxLocks: number
  maxLockAgeMs: number
}

export const ACTIVITY_BOUNDS: ActivityBounds = { maxLocks: 1000, maxLockAgeMs: 60 * 60_000 }

export type ActivityEvents = {
  change: [ActivityChange]
}

/**
 * What one client of the application is doing, for people to look at: its connection figures,
 * the keys observed and the leases, locks and elections held or contested. The nodes report
 * into it; a viewer reads snapshots and listens to `change` (which says what changed, not how).
 */
export class StoreActivity extends TypedEmitter<ActivityEvents> {
  readonly metrics: ConnectionMetrics
  readonly watches = new Map<string, WatchRecord>()
  /** In the order of their last change, the oldest first. */
  readonly locks = new Map<string, LockRecord>()
  /** Lock entries dropped by the bounds since the runtime started. */
  droppedLocks = 0
  /** The entries per lock name, so an event on one name costs no walk of the others. */
  private readonly byName = new Map<string, Map<string, LockRecord>>()
  /** The last minutes of holders, hand-overs, waiting msgs and numeric values, for the sidebar's timeline. */
  readonly timeline: Timeline
  private readonly detachers = new Map<string, () => void>()
  /** Msgs waiting per `${owner}/${name}` (lock mode). */
  private readonly waits = new Map<string, { name: string; count: number }>()
  /** Msgs waiting per name, then per owner. */
  private readonly waitsByName = new Map<string, Map<string, number>>()

  constructor(
    private readonly now: () => number = Date.now,
    private readonly bounds: ActivityBounds = ACTIVITY_BOUNDS,
  ) {
    super()
    this.metrics = new ConnectionMetrics(now)
    this.timeline = new Timeline(now)
  }

  connectionChanged(): void {
    this.emit('change', { kind: 'connection' })
  }

  watchStarted(owner: string, key: string): void {
    let w = this.watches.get(key)
    if (!w) {
      w = { key, observers: new Set(), operation: null, value: null, version: null, at: null, notifications: 0, behindMs: null }
      this.watches.set(key, w)
    }
    w.observers.add(owner)
    this.emit('change', { kind: 'watch', key })
  }

  watchStopped(owner: string, key: string): void {
    const w = this.watches.get(key)
    if (!w) return
    w.observers.delete(owner)
    if (w.observers.size === 0) this.watches.delete(key)
    this.emit('change', { kind: 'watch', key })
  }

  /** A notification a node delivers; returns how far behind it arrived (ms), null when that cannot be told. */
  watchNotified(key: string, n: KeyNotification): number | null {
    // A reconnect's read tells a change made while away: its version's age is no backlog.
    const behindMs = n.version && !n.reconciled ? this.metrics.lag.sample(n.version.timestamp) : null
    const w = this.watches.get(key)
    if (!w) return behindMs
    w.behindMs = behindMs
    w.operation = n.operation
    w.value = n.value
    w.version = n.version?.toString() ?? null
    w.at = this.now()
    w.notifications += 1
    const number = n.value ? numberIn(n.value) : null
    if (number !== null) this.timeline.value(key, number)
    this.emit('change', { kind: 'watch', key })
    return behindMs
  }

  /** Follows a lease (of a lock node, a lock, or an election's position) until the owner forgets it. */
  trackLease(owner: string, name: string, kind: LockKind, holder: string, leaseMs: number, lease: Lease, election?: LeaderElection): void {
    const id = `${owner}/${name}`
    this.detachers.get(id)?.()
    const record: LockRecord = {
      id,
      owner,
      name,
      kind,
      holder,
      leaseMs,
      held: false,
      fencingToken: null,
      expiresAt: null,
      renewals: 0,
      currentHolder: undefined,
      lastReason: null,
      at: this.now(),
    }
    this.place(record)
    const changed = () => {
      if (this.locks.get(id) !== record) return
      record.at = this.now()
      this.place(record)
      this.noteHolder(name, kind)
      this.emit('change', { kind: 'lock', id, name })
      this.prune()
    }
    const onAcquired = ({ fencingToken }: { fencingToken: { toString(): string } }) => {
      record.held = true
      record.fencingToken = fencingToken.toString()
      record.expiresAt = this.now() + leaseMs
      record.currentHolder = holder
      record.lastReason = null
      changed()
    }
    const onRenewed = ({ fencingToken }: { fencingToken: { toString(): string } }) => {
      record.held = true
      record.currentHolder = holder
      record.renewals += 1
      record.fencingToken = fencingToken.toString()
      record.expiresAt = this.now() + leaseMs
      changed()
    }
    const onLost = ({ message, deleted }: { message: string; deleted?: boolean }) => {
      record.held = false
      record.fencingToken = null
      record.expiresAt = null
      // Its key was deleted (released elsewhere, expired): the lock is free, not contested.
      record.currentHolder = deleted ? null : undefined
      record.lastReason = message
      changed()
    }
    const onReleased = () => {
      record.held = false
      record.fencingToken = null
      record.expiresAt = null
      record.currentHolder = null
      changed()
    }
    const onHolder = ({ holder: h }: { holder: Buffer | null }) => {
      record.currentHolder = h ? h.toString('utf8') : null
      changed()
    }
    const onLeader = ({ leader }: { leader: Buffer | null }) => onHolder({ holder: leader })
    lease.on('acquired', onAcquired).on('renewed', onRenewed).on('lost', onLost).on('released', onReleased).on('holder', onHolder)
    election?.on('leader', onLeader)
    this.detachers.set(id, () => {
      lease.off('acquired', onAcquired).off('renewed', onRenewed).off('lost', onLost).off('released', onReleased).off('holder', onHolder)
      election?.off('leader', onLeader)
    })
    changed()
  }

  /** What another reader found out about who holds a name (e.g. a 'holder' action). */
  holderSeen(owner: string, name: string, holder: string | null): void {
    const record = this.locks.get(`${owner}/${name}`)
    if (!record) return
    record.currentHolder = holder
    record.at = this.now()
    this.place(record)
    this.noteHolder(name, record.kind)
    this.emit('change', { kind: 'lock', id: record.id, name })
    this.prune()
  }

  /**
   * What the store says the name's key now holds (a key notification): a holder, or null when it
   * was released or expired. An entry that showed the name as ours and no longer holds it shows it
   * lost at once, before its own lease notices at its next renewal.
   */
  storeHolder(name: string, holder: Buffer | null): void {
    const now = holder === null ? null : holder.toString('utf8')
    let kind: LockKind | null = null
    for (const record of [...(this.byName.get(name)?.values() ?? [])]) {
      record.currentHolder = now
      if (record.held && now !== record.holder) {
        record.held = false
        record.fencingToken = null
        record.expiresAt = null
      }
      record.at = this.now()
      this.place(record)
      kind = record.kind
      this.emit('change', { kind: 'lock', id: record.id, name })
    }
    if (kind) this.noteHolder(name, kind)
    this.prune()
  }

  /** How many msgs wait at one owner (a lock-mode node) for `name`: the timeline draws their sum per name. */
  waitingChanged(owner: string, name: string, kind: LockKind, count: number): void {
    const id = `${owner}/${name}`
    let owners = this.waitsByName.get(name)
    if (count === 0) {
      this.waits.delete(id)
      owners?.delete(owner)
      if (owners?.size === 0) this.waitsByName.delete(name)
    } else {
      this.waits.set(id, { name, count })
      if (!owners) this.waitsByName.set(name, (owners = new Map<string, number>()))
      owners.set(owner, count)
    }
    let total = 0
    for (const n of owners?.values() ?? []) total += n
    this.timeline.waiting(name, kind, total)
  }

  /** Whether some entry uses `name`. */
  usesName(name: string): boolean {
    return this.byName.has(name)
  }

  /** Puts an entry last (changed most recently), indexed by its name. */
  private place(record: LockRecord): void {
    const before = this.locks.get(record.id)
    if (before && before !== record) this.unindex(before)
    this.locks.delete(record.id)
    this.locks.set(record.id, record)
    let named = this.byName.get(record.name)
    if (!named) this.byName.set(record.name, (named = new Map<string, LockRecord>()))
    named.set(record.id, record)
  }

  private unindex(record: LockRecord): void {
    const named = this.byName.get(record.name)
    if (named?.get(record.id) !== record) return
    named.delete(record.id)
    if (named.size === 0) this.byName.delete(record.name)
  }

  /** Drops the entries past the count, then those not held that changed longer ago than the age; the oldest first. */
  private prune(): void {
    const cutoff = this.now() - this.bounds.maxLockAgeMs
    for (const record of this.locks.values()) {
      if (this.locks.size <= this.bounds.maxLocks) {
        if (record.at >= cutoff) break
        // A hold renews (and so moves last) within its lease: one held this long is passed over.
        if (record.held) continue
      }
      this.remove(record)
      this.droppedLocks += 1
    }
  }

  private remove(record: LockRecord): void {
    this.detachers.get(record.id)?.()
    this.detachers.delete(record.id)
    this.locks.delete(record.id)
    this.unindex(record)
    this.emit('change', { kind: 'lock', id: record.id, name: record.name })
  }

  /** Who holds `name` as this runtime knows it: one of our holds, else what the store or a reader told; unknown is not drawn. */
  private noteHolder(name: string, kind: LockKind): void {
    let told: string | null | undefined = undefined
    for (const record of this.byName.get(name)?.values() ?? []) {
      if (record.held) return this.timeline.holder(name, kind, record.holder, true)
      if (told === undefined) told = record.currentHolder
    }
    if (told !== undefined) this.timeline.holder(name, kind, told, false)
  }

  /** An owner (node) is gone: its watches and locks leave the registry. */
  forget(owner: string): void {
    for (const [id, w] of [...this.waits]) {
      if (!id.startsWith(`${owner}/`)) continue
      this.waits.delete(id)
      const owners = this.waitsByName.get(w.name)
      owners?.delete(owner)
      if (owners?.size === 0) this.waitsByName.delete(w.name)
    }
    for (const [key, w] of this.watches) if (w.observers.has(owner)) this.watchStopped(owner, key)
    for (const record of [...this.locks.values()]) if (record.owner === owner) this.remove(record)
  }
}

/**
 * A value that reads as a number, for the timeline's chart: a number (`21.5`, ` 7 `, `"21.5"`), or a
 * JSON object with one property and a number in it (`{"celsius": 21.5}`); null otherwise.
 */
function numberIn(value: Buffer): number | null {
  if (value.length === 0 || value.length > 256) return null
  // Every notification of a watched key comes here: text that cannot hold a number is told by its
  // first byte, without JSON.parse throwing on it (a throw per msg was 1 % of a busy runtime). Only
  // a digit, a minus, an object or a string can; a byte past ASCII may be Unicode blank space,
  // which trim() removes, so it takes the whole path.
  let i = 0
  while (i < value.length && (value[i] === 0x20 || (value[i]! >= 0x09 && value[i]! <= 0x0d))) i++
  const first = value[i]
  if (first === undefined) return null
  if (first < 0x80 && !(first >= 0x30 && first <= 0x39) && first !== 0x2d /* - */ && first !== 0x7b /* { */ && first !== 0x22 /* " */) return null
  const text = value.toString('utf8').trim()
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return null
  }
  if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
    const values = Object.values(parsed)
    parsed = values.length === 1 ? values[0] : null
  }
  if (typeof parsed === 'string' && /^\s*[-+0-9.eE]+\s*$/.test(parsed)) parsed = Number(parsed)
  return typeof parsed === 'number' && Number.isFinite(parsed) ? parsed : null
}

import type { IPublishPacket } from 'mqtt'
import { ArgumentError, ConnectionError } from '../diagnostics/errors'
import { Hlc } from '../hlc'
import { parseNotification, parseNotificationTopic, Prop, requireKey, userProperty, type Bytes } from '../protocol'
import { requireNotifiableKey, requireValue } from '../checks/arguments'
import { backoffDelay } from './backoff'
import { checkVersion } from './envelope'
import { get } from './get'
import { keyNotify, keyNotifyStop } from './keynotify'
import { NotificationTrust } from './notification-trust'
import type { ResolvedOptions } from './options'
import type { Invoker } from './pending-requests'
import type { KeyNotification, NotificationListener, Observation, ObservedRead, RequestOptions } from './types'

interface Watcher {
  listener: NotificationListener
}

/** Everything the client tracks about one observed key. */
interface Entry {
  readonly key: Buffer
  readonly id: string
  readonly slots: Set<Watcher>
  /** The service holds our KEYNOTIFY registration (as far as we know). */
  registered: boolean
  /** The registration was lost with the connection: the next one must reconcile with a GET. */
  stale: boolean
  /** Last state seen (notification or GET), to tell whether something changed while we were away. */
  known: boolean
  exists: boolean
  version: Hlc | null
  /** Counts notifications, so a GET answer overtaken by a real notification is not used. */
  seen: number
  /** KEYNOTIFY / STOP for one key run one after the other, each doing what the listener count asks for when it runs. */
  chain: Promise<void>
  busy: number
  retry: NodeJS.Timeout | null
  attempts: number
  /**
   * A read confirming a notification from an unknown node id is on its way; the notifications waiting for it, in order.
   */
  confirming: boolean
  held: KeyNotification[]
}

/**
 * Notifications of one key held while a read confirms them; past this the oldest go (the read still tells what holds).
 */
const MAX_HELD = 10_000
const RETRY_MIN_MS = 200
const RETRY_MAX_MS = 5000

/**
 * Key observations: reference-counted KEYNOTIFY registrations, in-order delivery to any number of
 * listeners per key, and after every reconnect re-registration plus a reconciling GET that turns a
 * change missed while disconnected into a synthetic notification (`reconciled: true`).
 */
export class Notifications {
  private readonly entries = new Map<string, Entry>()
  /** Bumped on every disconnect; a registration made in an older epoch may have died with it. */
  private epoch = 0
  private closed = false
  private sweepTimer: NodeJS.Timeout | null = null
  /** Changes found by the periodic reads whose notification never came while connected. */
  lost = 0

  constructor(
    private readonly invoke: Invoker,
    private readonly options: ResolvedOptions,
    private readonly isOnline: () => boolean,
    private readonly broadcast: (n: KeyNotification) => void,
    private readonly report: (err: Error) => void,
    private readonly trust: NotificationTrust = new NotificationTrust(options.clock),
  ) {
    this.scheduleSweep()
  }

  /**
   * Every reconcileIntervalMs, each observed key is read once more, one after the other: a broker
   * whose subscriber queue drops the oldest (AIO's DropOldest) loses notifications without a word,
   * and a read is the only way to learn it. What differs is delivered (`reconciled: true`), counted
   * and logged; a notification that arrives while the read is out wins.
   */
  private scheduleSweep(): void {
    if (this.options.reconcileIntervalMs === 0 || this.closed) return
    this.sweepTimer = setTimeout(() => {
      this.sweepTimer = null
      void this.sweep().finally(() => this.scheduleSweep())
    }, this.options.reconcileIntervalMs)
    this.sweepTimer.unref()
  }

  private async sweep(): Promise<void> {
    let found = 0
    for (const entry of [...this.entries.values()]) {
      if (this.closed || !this.isOnline()) return
      if (entry.slots.size === 0 || !entry.registered || entry.stale || entry.confirming || !entry.known) continue
      const epoch = this.epoch
      entry.busy += 1
      const step = entry.chain.then(async () => {
        const seen = entry.seen
        const current = await get(this.invoke, entry.key)
        // A notification overtook the read, or the connection dropped (the reconnect reconciles).
        if (entry.seen !== seen || epoch !== this.epoch || entry.slots.size === 0) return
        const exists = current.value !== null
        if (entry.exists === exists && (!exists || sameVersion(entry.version, current.version))) return
        found += 1
        this.lost += 1
        this.reconcile(entry, current)
      })
      entry.chain = step.then(
        () => this.done(entry),
        () => this.done(entry),
      )
      await step.catch((err: Error) =>
        this.options.logger('debug', `reading observed key ${entry.id} again failed: ${err.message}`),
      )
    }
    if (found > 0)
      this.options.logger(
        'warn',
        `${found} observed key(s) had changed without a notification while connected (${this.lost} so far): the ` +
          `broker dropped them (a subscriber queue limit with DropOldest?); told as reconciled notifications`,
      )
  }

  async observe(key: Bytes, listener: NotificationListener, options: RequestOptions = {}): Promise<Observation> {
    // Buffer.copyBytesFrom owns its memory: a pooled copy would keep a whole shared slab alive as long as the key is
    // observed.
    const bytes = Buffer.copyBytesFrom(
      requireNotifiableKey(requireKey(requireValue(key, 'key')), this.options.clientId),
    )
    if (typeof listener !== 'function') throw new ArgumentError('the listener must be a function')
    if (this.closed) throw new ConnectionError('ConnectionClosed', 'the client was closed')
    const entry = this.entryFor(bytes)
    const slot: Watcher = { listener }
    entry.slots.add(slot)
    let initial: ObservedRead | null
    try {
      initial = await this.sync(entry, options)
    } catch (err) {
      entry.slots.delete(slot)
      if (entry.slots.size === 0) this.sync(entry).catch(() => {})
      throw err
    }
    let open = true
    return {
      key: Buffer.from(bytes),
      initial,
      close: async () => {
        if (!open) return
        open = false
        entry.slots.delete(slot)
        if (entry.slots.size === 0 && !this.closed) await this.sync(entry).catch(() => {})
      },
    }
  }

  /** A message on the notification topic filter. */
  handle(topic: string, payload: Buffer, packet: IPublishPacket): void {
    const parsed = parseNotificationTopic(topic)
    if (!parsed || parsed.clientId !== this.options.clientId) {
      this.options.logger('warn', `dropped a notification on an unexpected topic ${JSON.stringify(topic)}`)
      return
    }
    let operation: ReturnType<typeof parseNotification>
    try {
      checkVersion(packet.properties)
      operation = parseNotification(payload)
    } catch (err) {
      this.options.logger(
        'warn',
        `dropped a malformed notification for key ${parsed.key.toString('hex')}: ${(err as Error).message}`,
      )
      return
    }
    const version = this.notificationVersion(packet)
    const verdict = this.trust.judge(version)
    const entry = this.entries.get(parsed.key.toString('hex'))
    const value = operation.operation === 'SET' ? operation.value : null
    // While a read confirms a notification of this key, the ones after it wait behind it, in order.
    if (entry?.confirming && version && (verdict.take || verdict.confirm)) {
      return this.confirm(entry, { key: parsed.key, operation: operation.operation, value, version, reconciled: false })
    }
    if (!verdict.take) {
      // From a node id no answer carried: a read of the key says what holds, and teaches the node id if it is the
      // service's.
      if (verdict.confirm && entry && entry.slots.size > 0 && version) {
        return this.confirm(entry, {
          key: parsed.key,
          operation: operation.operation,
          value,
          version,
          reconciled: false,
        })
      }
      const reason = verdict.confirm ? this.trust.unconfirmed() : verdict.reason
      this.options.logger(
        'warn',
        `dropped a notification for key ${parsed.key.toString('hex').slice(0, 64)}: ${reason} ` +
          `(${this.trust.dropped} dropped so far)`,
      )
      return
    }
    const n: KeyNotification = {
      key: parsed.key,
      operation: operation.operation,
      value: operation.operation === 'SET' ? operation.value : null,
      version,
      reconciled: false,
    }
    if (entry) {
      entry.seen += 1
      this.remember(entry, n)
    }
    this.deliver(entry, n)
  }

  onOffline(): void {
    this.epoch += 1
    for (const entry of this.entries.values()) {
      if (entry.registered) entry.stale = true
      entry.registered = false
    }
  }

  /** After a reconnect the service has forgotten our registrations: make them again and reconcile. */
  onOnline(first: boolean): void {
    if (first) return
    for (const entry of this.entries.values()) {
      if (entry.slots.size > 0 && (!entry.registered || entry.stale)) {
        entry.attempts = 0
        this.resync(entry)
      }
    }
  }

  close(): void {
    this.closed = true
    if (this.sweepTimer) clearTimeout(this.sweepTimer)
    this.sweepTimer = null
    for (const entry of this.entries.values()) {
      if (entry.retry) clearTimeout(entry.retry)
      entry.retry = null
      entry.slots.clear()
    }
    this.entries.clear()
  }

  private entryFor(key: Buffer): Entry {
    const id = key.toString('hex')
    let entry = this.entries.get(id)
    if (!entry) {
      entry = {
        key,
        id,
        slots: new Set(),
        registered: false,
        stale: false,
        known: false,
        exists: false,
        version: null,
        seen: 0,
        chain: Promise.resolve(),
        busy: 0,
        retry: null,
        attempts: 0,
        confirming: false,
        held: [],
      }
      this.entries.set(id, entry)
    }
    return entry
  }

  private sync(entry: Entry, options: RequestOptions = {}): Promise<ObservedRead | null> {
    entry.busy += 1
    const step = entry.chain.then(() => this.step(entry, options))
    entry.chain = step.then(
      () => this.done(entry),
      () => this.done(entry),
    )
    return step
  }

  private done(entry: Entry): void {
    entry.busy -= 1
    if (entry.busy === 0 && entry.slots.size === 0 && !entry.registered && this.entries.get(entry.id) === entry) {
      if (entry.retry) clearTimeout(entry.retry)
      this.entries.delete(entry.id)
    }
  }

  /** Resolves with what a registration it made read (see Observation.initial). */
  private async step(entry: Entry, options: RequestOptions): Promise<ObservedRead | null> {
    for (;;) {
      if (this.closed) throw new ConnectionError('ConnectionClosed', 'the client was closed')
      const wanted = entry.slots.size > 0
      if (wanted && (!entry.registered || entry.stale)) {
        const epoch = this.epoch
        await keyNotify(this.invoke, entry.key, options)
        // Acknowledged, but if the connection dropped meanwhile the service may already have forgotten it.
        if (epoch !== this.epoch) continue
        entry.registered = true
        const read = await this.refresh(entry, entry.stale)
        if (epoch !== this.epoch) continue
        entry.stale = false
        return read
      } else if (!wanted && entry.registered) {
        entry.registered = false
        entry.stale = false
        try {
          await keyNotifyStop(this.invoke, entry.key, options)
        } catch (err) {
          // The service forgets us on disconnect anyway; a failed STOP leaves at most a few stray notifications.
          this.options.logger('debug', `KEYNOTIFY STOP for key ${entry.id} failed: ${(err as Error).message}`)
        }
      }
      return null
    }
  }

  /**
   * Reads the key after (re-)registering. The first time it only records the state (and gives it
   * back); after a reconnect it delivers what changed meanwhile. Skipped when a real notification
   * overtook it.
   */
  private async refresh(entry: Entry, reconcile: boolean): Promise<ObservedRead | null> {
    const seen = entry.seen
    let current: { value: Buffer | null; version: Hlc | null }
    try {
      current = await get(this.invoke, entry.key)
    } catch (err) {
      if (reconcile) throw err
      this.options.logger('debug', `reading observed key ${entry.id} failed: ${(err as Error).message}`)
      return null
    }
    if (entry.seen !== seen) return null
    if (reconcile) {
      this.reconcile(entry, current)
      return null
    }
    entry.known = true
    entry.exists = current.value !== null
    entry.version = current.version
    return { value: current.value, version: current.version }
  }

  /**
   * Delivers what a read found as a notification (`reconciled: true`) when it differs from what the observers last had.
   */
  private reconcile(entry: Entry, current: { value: Buffer | null; version: Hlc | null }): void {
    const exists = current.value !== null
    const changed = !entry.known || entry.exists !== exists || (exists && !sameVersion(entry.version, current.version))
    if (!changed) return
    const n: KeyNotification = {
      key: Buffer.from(entry.key),
      operation: exists ? 'SET' : 'DELETE',
      value: current.value,
      version: exists ? current.version : null,
      reconciled: true,
    }
    this.remember(entry, n)
    this.deliver(entry, n)
  }

  /**
   * Reads an observed key after a notification from a node id no answer carried. Notifications of
   * the key that arrive meanwhile wait with it, in order; once the read is answered, those from a
   * node id an answer has carried by then (the read's own teaches the key's) are delivered as they
   * came, the others dropped. When none was delivered, what the read found is, if it differs from
   * what the observers last had. So a forged value reaches no observer, and a burst from a restarted
   * store arrives whole.
   */
  private confirm(entry: Entry, n: KeyNotification): void {
    if (entry.held.length >= MAX_HELD) entry.held.shift()
    entry.held.push(n)
    if (entry.confirming) return
    entry.confirming = true
    entry.busy += 1
    const step = entry.chain.then(async () => {
      let current: { value: Buffer | null; version: Hlc | null } | null = null
      // Those held before the read is sent are what it answers for; a later one waits for another read.
      let answered = entry.held.length
      let failed = false
      try {
        current = await get(this.invoke, entry.key)
      } catch (err) {
        failed = true
        answered = entry.held.length
        throw err
      } finally {
        const held = entry.held.splice(0)
        entry.confirming = false
        // No answer (the store restarting, the connection down): those held wait for another read.
        if (failed && entry.slots.size > 0 && !this.closed) for (const h of held) this.confirm(entry, h)
        else this.settleHeld(entry, held, answered, current)
      }
    })
    entry.chain = step.then(
      () => this.done(entry),
      () => this.done(entry),
    )
    step.catch((err: Error) =>
      this.options.logger('warn', `reading observed key ${entry.id} to confirm a notification failed: ${err.message}`),
    )
  }

  /** After the confirming read: what it confirmed is delivered, the rest dropped, or held for another read. */
  private settleHeld(
    entry: Entry,
    held: KeyNotification[],
    answered: number,
    current: { value: Buffer | null; version: Hlc | null } | null,
  ): void {
    // A DELETE the read confirms (the key is gone; a missing key's answer carries no node id to learn).
    const lastAnswered = held[Math.min(answered, held.length) - 1]
    const confirmedDelete =
      current !== null && current.value === null && lastAnswered?.operation === 'DELETE' ? lastAnswered : null
    let delivered = 0
    let i = 0
    for (; i < held.length; i++) {
      const h = held[i]!
      if (this.trust.knows(h.version!)) {
        // A read meanwhile (a reconnect's) may have told this change already.
        if (entry.version && Hlc.compare(h.version!, entry.version) <= 0) continue
        delivered += 1
        entry.seen += 1
        this.remember(entry, h)
        this.deliver(entry, h)
      } else if (i >= answered && entry.slots.size > 0 && !this.closed) break
      else if (h !== confirmedDelete) {
        const reason = this.trust.unconfirmed()
        this.options.logger(
          'warn',
          `dropped a notification for key ${entry.id.slice(0, 64)}: ${reason} (${this.trust.dropped} dropped so far)`,
        )
      }
    }
    if (delivered === 0 && confirmedDelete) {
      // Told as it came, as a store restarted without the key sends it; its version, from a node id
      // no answer carried, orders nothing after it.
      entry.seen += 1
      this.remember(entry, confirmedDelete)
      entry.version = null
      this.deliver(entry, confirmedDelete)
    } else if (delivered === 0 && current) this.reconcile(entry, current)
    for (const h of held.slice(i)) this.confirm(entry, h)
  }

  /** Re-registration after a reconnect, retried with backoff while connected until it succeeds or nobody listens. */
  private resync(entry: Entry): void {
    if (entry.retry) clearTimeout(entry.retry)
    entry.retry = null
    this.sync(entry).catch((err: Error) => {
      if (this.closed || entry.slots.size === 0) return
      this.options.logger('warn', `re-registering observed key ${entry.id} failed: ${err.message}`)
      this.report(err)
      if (!this.isOnline()) return // the next reconnect tries again
      const delay = backoffDelay(entry.attempts++, RETRY_MIN_MS, RETRY_MAX_MS)
      entry.retry = setTimeout(() => this.resync(entry), delay)
    })
  }

  private remember(entry: Entry, n: KeyNotification): void {
    entry.known = true
    entry.exists = n.operation === 'SET'
    entry.version = n.version
  }

  private deliver(entry: Entry | undefined, n: KeyNotification): void {
    if (entry) {
      for (const slot of [...entry.slots]) {
        try {
          slot.listener(n)
        } catch (err) {
          this.report(err instanceof Error ? err : new Error(String(err)))
        }
      }
    }
    this.broadcast(n)
  }

  /** `__ts` of a notification; null when it has none or it does not parse (the trust rules then drop it). */
  private notificationVersion(packet: IPublishPacket): Hlc | null {
    const text = userProperty(packet.properties, Prop.timestamp)
    if (text === undefined) return null
    try {
      return Hlc.parse(text)
    } catch {
      return null
    }
  }
}

function sameVersion(a: Hlc | null, b: Hlc | null): boolean {
  return a !== null && b !== null && a.equals(b)
}

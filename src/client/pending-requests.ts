import { randomBytes } from 'node:crypto'
import type { IPublishPacket } from 'mqtt'
import {
  ArgumentError,
  ConnectionError,
  NoServiceError,
  OverloadedError,
  ServiceError,
  StateStoreError,
  TimeoutError,
  type Written,
} from '../diagnostics/errors'
import type { Hlc } from '../hlc'
import { cancelledBy } from '../checks/arguments'
import { backoffDelay } from './backoff'
import { downCode, type PublishProperties, type Transport } from './transport'
import { stateStoreEnvelope, type Envelope } from './envelope'
import { ServicePresence } from './service-presence'
import type { ResolvedOptions } from './options'
import type { RequestRecorder } from './types'

export interface Invocation<T = unknown> {
  /** For messages only: GET, SET, … */
  verb: string
  payload: Buffer
  timeoutMs?: number
  signal?: AbortSignal
  fencingToken?: Hlc
  persist?: boolean
  /** A check for a service (service-check.ts): with no subscriber on the request topic it fails at once instead of being sent again. */
  probe?: boolean
  /**
   * Turns the answer (its payload and `__ts`, the headers already checked) into the caller's
   * result; what it throws fails the request. Given here rather than applied by the caller to a
   * resolved reply, so that a request is one promise, not a second one awaiting the first.
   */
  parse: (payload: Buffer, version: Hlc | null) => T
  /**
   * Given for a write: tells whether it was written when it failed after it was sent (a timeout,
   * a lost connection), by a read (write-outcome.ts); the failure waits for its answer, in
   * `err.written`. A write that fails before it is sent, or is answered with an error, is not
   * written: `err.written` is false without a read.
   */
  written?: (sent: SentWrite) => Promise<Written>
}

/** What a write's outcome is read back from. */
export interface SentWrite {
  /** The client clock's reading when the write was made: every version the write (or a later one) makes is above it. */
  before: Hlc
  /** performance.now() when the broker drops the last send unexecuted (its Message Expiry): after it nothing executes it. */
  expiresAt: number
}

export type Invoker = <T>(invocation: Invocation<T>) => Promise<T>

/**
 * Invokes the request `build` describes. What `build` throws (a bad argument) rejects the promise
 * instead of throwing, so that the operations need not be async: the request's own promise is their
 * result, not a second one awaiting it.
 */
export function invokeBuilt<T>(invoke: Invoker, build: () => Invocation<T>): Promise<T> {
  let invocation: Invocation<T>
  try {
    invocation = build()
  } catch (err) {
    return Promise.reject(err)
  }
  return invoke(invocation)
}

const RESEND_MIN_MS = 100
const RESEND_MAX_MS = 2000
const MAX_TIMER_MS = 2 ** 31 - 1
/** While requests are pending, the loop is looked at this often; a beat later than STALL_MS more found it blocked. */
const HEARTBEAT_MS = 100
const STALL_MS = 100
/** What a request waiting for a free slot is counted at besides its payload: its record, correlation data, promise and closures. */
export const QUEUED_REQUEST_BYTES = 512

type Phase = 'queued' | 'waiting' | 'sent'

interface Pending {
  /** The request's sequence number; its correlation data is this client's prefix followed by it. */
  readonly id: number
  readonly correlation: Buffer
  readonly invocation: Invocation
  readonly timeoutMs: number
  /** performance.now() when the request was made. */
  readonly startedAt: number
  /**
   * When the request times out, in loop time (now()): its timeout from when it got a slot (from when
   * it was made, if at once). While it waits for a slot, the time the queue keeps moving does not
   * count (sweep).
   */
  deadline: number
  phase: Phase
  settled: boolean
  properties?: PublishProperties
  messageId?: number
  /** Times the broker said no service was subscribed; each time the request is sent again after a pause. */
  unheard: number
  resend?: NodeJS.Timeout
  /** The end of the wait for the connection (connectionWaitMs), while the request waits for it. */
  connectionWait?: NodeJS.Timeout
  /** A write's clock reading at invoke time (Invocation.written); undefined for anything else. */
  before: Hlc | undefined
  /** performance.now() when the last send's Message Expiry ends. */
  expiresAt: number
  detach?: () => void
  resolve(result: unknown): void
  reject(err: Error): void
}

/**
 * Request/response over one connection: a correlation map of the requests in flight, bounded by
 * maxInFlight, with a wait queue behind it bounded by the memory it takes (maxQueuedBytes, and
 * maxQueued requests when set); every request settles exactly once (reply,
 * timeout, cancellation, close) and leaves no timer of its own behind. Responses that match nothing (late,
 * duplicate, foreign) are dropped.
 */
export class PendingRequests {
  private readonly inFlight = new Map<number, Pending>()
  /** Insertion-ordered, so the oldest waiter is admitted first. */
  private readonly queue = new Set<Pending>()
  /** What the queue's requests are counted at (queuedCost), against maxQueuedBytes. */
  private queued = 0
  private closedWith: Error | null = null
  private readonly service = new ServicePresence((absent) => this.onServiceChange?.(absent))
  /** Told when the service becomes known absent, or present again. */
  onServiceChange: ((absent: boolean) => void) | undefined
  /**
   * One timer for every request's deadline, armed for the earliest one, instead of a setTimeout
   * per request: with few requests in flight each of those created and dropped a timer list and
   * re-armed libuv's timer, a cost per request that the bare requester does not have. It stays
   * armed when nothing is pending (re-arming it per request would bring that cost back), but unref'd
   * then, so that as before only a pending request keeps the process alive; close() clears it.
   */
  private sweepTimer: NodeJS.Timeout | undefined
  private sweepAt = Infinity
  /** now() of the last answer (any response that matched a request): while answers come, the wait queue moves. */
  private lastAnswerAt = -Infinity
  /**
   * The time the event loop was seen blocked (a burst handled in one turn, a starved process), by a
   * heartbeat that runs while requests are pending: it counts for no request's timeout. now() is
   * performance.now() less it.
   */
  private stalledMs = 0
  private beatAt = 0
  private heartbeat: NodeJS.Timeout | undefined
  /**
   * Correlation data is 16 bytes: 8 random bytes drawn once per client (two 32-bit halves), then a
   * 64-bit sequence number. Unique per request like 16 random bytes each, without a call into the
   * CSPRNG per request (5 % of the requester's CPU in a profile) and with a number to look it up by.
   */
  private readonly prefixHigh: number
  private readonly prefixLow: number
  private sequence = 0

  constructor(
    private readonly transport: Transport,
    private readonly options: ResolvedOptions,
    private readonly responseTopic: string,
    private readonly envelope: Envelope = stateStoreEnvelope(options),
    /**
     * Told of every request as it settles, a service check (`probe`) excepted: here rather than
     * around the invoker, which cost each request a copy of its invocation and a promise more.
     */
    private readonly recorder?: RequestRecorder,
  ) {
    const prefix = randomBytes(8)
    this.prefixHigh = prefix.readUInt32BE(0)
    this.prefixLow = prefix.readUInt32BE(4)
  }

  get serviceAbsent(): boolean {
    return this.service.absent
  }

  get size(): { inFlight: number; queued: number } {
    return { inFlight: this.inFlight.size, queued: this.queue.size }
  }

  /** What the requests waiting for a free slot are counted at, against maxQueuedBytes. */
  get queuedBytes(): number {
    return this.queued
  }

  readonly invoke: Invoker = <T>(invocation: Invocation<T>) =>
    new Promise<T>((resolve, reject) => {
      const timeoutMs = invocation.timeoutMs ?? this.options.requestTimeoutMs
      const refused = this.refusal(invocation, timeoutMs)
      if (refused) {
        // Refused before it was sent: not written.
        if (invocation.written && refused instanceof StateStoreError) refused.written = false
        this.record(invocation, 0, refused)
        reject(refused)
        return
      }
      const id = ++this.sequence
      const correlation = Buffer.allocUnsafe(16)
      correlation.writeUInt32BE(this.prefixHigh, 0)
      correlation.writeUInt32BE(this.prefixLow, 4)
      correlation.writeUInt32BE(Math.floor(id / 0x1_0000_0000), 8)
      correlation.writeUInt32BE(id >>> 0, 12)
      // Every field from the start, so that each record has the same shape from its creation on.
      const p: Pending = {
        id,
        correlation,
        invocation,
        timeoutMs,
        startedAt: performance.now(),
        deadline: this.now() + timeoutMs,
        phase: 'queued',
        settled: false,
        properties: undefined,
        messageId: undefined,
        unheard: 0,
        resend: undefined,
        connectionWait: undefined,
        before: invocation.written ? this.options.clock.current : undefined,
        expiresAt: 0,
        detach: undefined,
        resolve,
        reject,
      }
      this.armSweep(p.deadline)
      this.sweepTimer?.ref()
      if (!this.heartbeat) {
        this.beatAt = performance.now()
        this.heartbeat = setInterval(this.beat, HEARTBEAT_MS)
        this.heartbeat.unref()
      }
      const signal = invocation.signal
      if (signal) {
        const onAbort = () => this.settle(p, cancelledBy(signal, `the ${invocation.verb} request`))
        signal.addEventListener('abort', onAbort, { once: true })
        p.detach = () => signal.removeEventListener('abort', onAbort)
      }
      if (this.inFlight.size < this.options.maxInFlight) this.admit(p)
      else {
        this.queue.add(p)
        this.queued += queuedCost(invocation)
      }
    })

  /** Why a request cannot be taken at all (a bad timeout, a closed client, a cancelled signal, a full queue); undefined when it can. */
  private refusal(invocation: Invocation, timeoutMs: number): Error | undefined {
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) return new ArgumentError(`the timeout must be a positive number of milliseconds, got ${timeoutMs}`)
    if (this.closedWith) return ownCopy(this.closedWith)
    if (invocation.signal?.aborted) return cancelledBy(invocation.signal, `the ${invocation.verb} request`)
    if (this.inFlight.size < this.options.maxInFlight) return undefined
    const { maxQueued, maxQueuedBytes } = this.options
    const waiting = `${this.inFlight.size} requests in flight (maxInFlight) and ${this.queue.size} waiting for a free slot`
    if (this.queued + queuedCost(invocation) > maxQueuedBytes) {
      return new OverloadedError(
        `${waiting}, taking ${this.queued} bytes: this request would go past the wait queue's memory bound, maxQueuedBytes ${maxQueuedBytes}`,
        'maxQueuedBytes',
        maxQueuedBytes,
      )
    }
    if (maxQueued !== undefined && this.queue.size >= maxQueued) {
      return new OverloadedError(`${waiting}: the wait queue's bound, maxQueued ${maxQueued}, is reached`, 'maxQueued', maxQueued)
    }
    return undefined
  }

  /** Tells the recorder of a request that ended; `failure` only when the request itself failed. A service check is not counted. */
  private record(invocation: Invocation, latencyMs: number, failure: Error | undefined): void {
    if (!this.recorder || invocation.probe) return
    if (failure) this.recorder.record(invocation.verb, latencyMs, failure)
    else this.recorder.record(invocation.verb, latencyMs)
  }

  /** A message on the response topic. */
  handleResponse(payload: Buffer, packet: IPublishPacket): void {
    const correlation = packet.properties?.correlationData
    const p = correlation ? this.inFlight.get(this.sequenceOf(correlation)) : undefined
    if (!p || p.phase !== 'sent') {
      this.options.logger(
        'debug',
        `dropped a response with ${correlation ? `unknown correlation ${correlation.toString('hex')}` : 'no correlation data'} (late, duplicate or foreign)`,
      )
      return
    }
    this.service.heard()
    this.lastAnswerAt = this.now()
    let version: Hlc | null
    try {
      version = this.envelope.readVersion(packet.properties)
    } catch (err) {
      // A response the protocol refuses (a bad status, a malformed `__ts`) is a failed request, of an outcome no read can tell better.
      this.settle(p, err as Error, undefined, false, true)
      return
    }
    let result: unknown
    try {
      result = p.invocation.parse(payload, version)
    } catch (err) {
      // An answer the caller refuses (an -ERR payload) is still an answered request.
      this.settle(p, err as Error, undefined, true)
      return
    }
    this.settle(p, undefined, result, true)
  }

  /** The sequence number in correlation data of ours; -1 (matching nothing) for anyone else's. */
  private sequenceOf(c: Buffer): number {
    if (c.length !== 16 || c.readUInt32BE(0) !== this.prefixHigh || c.readUInt32BE(4) !== this.prefixLow) return -1
    return c.readUInt32BE(8) * 0x1_0000_0000 + c.readUInt32BE(12)
  }

  /**
   * Connected (again): send what waited for the connection. When the broker did not keep our
   * session, responses to requests sent before the drop went nowhere (and mqtt.js re-sent the
   * unacknowledged ones before we had subscribed again), so those are published once more with
   * their original correlation data: the service answers a duplicate from its cache.
   */
  onOnline(resumed: boolean, first: boolean): void {
    for (const p of [...this.inFlight.values()]) {
      if (p.phase === 'waiting') this.send(p)
      else if (p.phase === 'sent' && !resumed && !first) this.send(p)
    }
  }

  /** Fails everything still pending; later invocations fail at once. */
  close(error = new ConnectionError('ConnectionClosed', 'the client was closed')): void {
    this.closedWith = error
    // An error of its own per request: a write's carries its own `written`.
    for (const p of [...this.queue, ...this.inFlight.values()]) this.settle(p, ownCopy(error))
    clearTimeout(this.sweepTimer)
    this.sweepTimer = undefined
    this.sweepAt = Infinity
    clearInterval(this.heartbeat)
    this.heartbeat = undefined
  }

  private admit(p: Pending): void {
    p.phase = 'waiting'
    this.inFlight.set(p.id, p)
    if (this.transport.online) this.send(p)
    else this.awaitConnection(p)
  }

  /**
   * Fails a request that waited connectionWaitMs for a connection that did not come, with the reason
   * it is down. A wait as long as the request's timeout or longer ends at the timeout (onTimeout).
   */
  private awaitConnection(p: Pending): void {
    const waitMs = this.options.connectionWaitMs
    if (waitMs === undefined || waitMs >= p.timeoutMs) return
    const fail = () => {
      if (p.phase === 'waiting' && !this.transport.online) this.settle(p, this.notConnected(p, waitMs))
    }
    if (waitMs === 0) fail()
    else p.connectionWait = setTimeout(fail, waitMs)
  }

  private notConnected(p: Pending, waitedMs: number): ConnectionError {
    const status = this.transport.status
    const { reason } = status
    const authFailed = status.problem === 'authFailed'
    const waited = waitedMs > 0 ? ` after waiting ${waitedMs} ms` : ''
    return new ConnectionError(
      downCode(status),
      `the ${p.invocation.verb} request failed: not connected${waited}${reason ? ` (${authFailed ? 'authentication failed: ' : ''}${reason})` : ''}`,
    )
  }

  private send(p: Pending): void {
    if (p.settled) return
    clearTimeout(p.connectionWait)
    // The broker drops the request once our wait is over, so a late duplicate is not executed.
    const expirySec = Math.ceil(Math.max(1, p.deadline - this.now()) / 1000)
    let properties: PublishProperties
    if (!p.properties) {
      try {
        properties = p.properties = this.envelope.properties({
          responseTopic: this.responseTopic,
          correlation: p.correlation,
          expirySec,
          fencingToken: p.invocation.fencingToken,
          persist: p.invocation.persist,
        })
      } catch (err) {
        this.settle(p, err as Error)
        return
      }
    } else {
      // mqtt.js holds on to the properties of the first send until its PUBACK: a re-send gets its own.
      properties = { ...p.properties, messageExpiryInterval: expirySec }
    }
    p.phase = 'sent'
    p.expiresAt = performance.now() + expirySec * 1000
    p.messageId = this.transport.publish(this.envelope.requestTopic, p.invocation.payload, properties, ({ error, noSubscribers }) => {
      if (error) this.settle(p, error)
      else if (!noSubscribers) this.service.heard()
      else if (p.settled) return
      else if (this.service.unheard(p.id, p.invocation.probe === true) === 'fail') {
        this.settle(
          p,
          new NoServiceError(
            `the ${p.invocation.verb} request failed: no state store service is subscribed to the request topic (is the broker the one with the state store?)`,
          ),
        )
      } else {
        // Nobody received it, so sending it again cannot execute it twice.
        clearTimeout(p.resend)
        p.resend = setTimeout(
          () => {
            if (this.transport.online) this.send(p)
            else p.phase = 'waiting'
          },
          backoffDelay(p.unheard++, RESEND_MIN_MS, RESEND_MAX_MS),
        )
      }
    })
  }

  private armSweep(deadline: number): void {
    if (this.sweepTimer !== undefined && deadline >= this.sweepAt) return
    clearTimeout(this.sweepTimer)
    this.sweepAt = deadline
    // Capped at Node's longest timer (a longer delay would fire after 1 ms); the sweep re-arms for the rest.
    this.sweepTimer = setTimeout(this.sweep, Math.min(MAX_TIMER_MS, Math.max(1, Math.ceil(deadline - this.now()))))
  }

  /** performance.now() less the time the event loop was seen blocked: the clock of the requests' deadlines. */
  private now(): number {
    return performance.now() - this.stalledMs
  }

  /**
   * A gap between two beats longer than HEARTBEAT_MS + STALL_MS is a blocked loop: the whole gap is
   * taken out of now(), so that what arrived meanwhile is read before any request times out.
   */
  private readonly beat = (): void => {
    const at = performance.now()
    const gap = at - this.beatAt
    if (gap > HEARTBEAT_MS + STALL_MS) this.stalledMs += gap
    this.beatAt = at
  }

  /**
   * Times out every request whose deadline has passed, then waits for the next deadline. A request
   * waiting for a slot times out only once no answer has come for its timeout (an outage, a silent
   * service); while answers come, the queue moves and it waits on, bounded by maxQueuedBytes.
   */
  private readonly sweep = (): void => {
    this.sweepTimer = undefined
    this.sweepAt = Infinity
    // The heartbeat may be due in the same turn, after this: a stall is counted first.
    this.beat()
    const now = this.now()
    let next = Infinity
    for (const p of [...this.queue, ...this.inFlight.values()]) {
      if (p.settled) continue
      if (p.deadline <= now && p.phase === 'queued' && now - this.lastAnswerAt < p.timeoutMs) p.deadline = this.lastAnswerAt + p.timeoutMs
      if (p.deadline <= now) this.onTimeout(p)
      else if (p.deadline < next) next = p.deadline
    }
    if (next !== Infinity && !this.sweepTimer) this.armSweep(next)
  }

  private onTimeout(p: Pending): void {
    // Its whole time spent waiting for the connection, with a connection wait set: a connection failure, not a timeout.
    if (p.phase === 'waiting' && p.unheard === 0 && this.options.connectionWaitMs !== undefined && !this.transport.online) {
      this.settle(p, this.notConnected(p, p.timeoutMs))
      return
    }
    const where =
      p.unheard > 0
        ? 'no state store service is subscribed to the request topic'
        : p.phase === 'sent'
          ? 'no response'
          : this.transport.online
            ? 'still waiting for a free slot'
            : 'not connected'
    const err = new TimeoutError(p.timeoutMs, `${p.invocation.verb} request`)
    err.message += ` (${where})`
    this.settle(p, err)
    // After settling: mqtt.js calls the publish back at once with "Message removed", which would
    // otherwise settle it first as a lost connection; a request that timed out is a TimeoutError.
    if (p.phase === 'sent' && p.messageId !== undefined) this.transport.forget(p.messageId)
  }

  /**
   * `answered`: the service answered, whatever the answer says; an error then is the caller's, not
   * the request's. `unreadable`: an answer came whose headers break the protocol.
   */
  private settle(p: Pending, err: Error | undefined, result?: unknown, answered = false, unreadable = false): void {
    if (p.settled) return
    p.settled = true
    clearTimeout(p.resend)
    clearTimeout(p.connectionWait)
    p.detach?.()
    if (p.phase === 'queued') this.dequeue(p)
    else this.inFlight.delete(p.id)
    if (this.recorder) this.record(p.invocation, performance.now() - p.startedAt, answered ? undefined : err)
    if (!err) p.resolve(result)
    else if (!p.invocation.written || !(err instanceof StateStoreError)) p.reject(err)
    else if (!this.outcomeUnknown(p, err, answered)) {
      err.written = false
      p.reject(err)
    } else if (this.closedWith || unreadable) {
      // Nothing can be read on a closed client; a service that answers out of protocol would not be read any better.
      err.written = 'unknown'
      p.reject(err)
    } else {
      p.invocation.written({ before: p.before!, expiresAt: p.expiresAt }).then(
        (written) => {
          err.written = written
          p.reject(err)
        },
        () => {
          err.written = 'unknown'
          p.reject(err)
        },
      )
    }
    this.promote()
    if (this.inFlight.size === 0 && this.queue.size === 0) {
      this.sweepTimer?.unref()
      clearInterval(this.heartbeat)
      this.heartbeat = undefined
    }
  }

  /**
   * Whether a failed request may have been executed: it was sent and no answer says it was not
   * (the service's -ERR does; so do a broker's refusal, a packet too large to send, nobody subscribed).
   */
  private outcomeUnknown(p: Pending, err: StateStoreError, answered: boolean): boolean {
    if (p.phase !== 'sent') return false
    if (answered) return !(err instanceof ServiceError)
    if (err instanceof ArgumentError || err instanceof NoServiceError) return false
    return !(err instanceof ConnectionError && err.code === 'BrokerRefused')
  }

  private dequeue(p: Pending): void {
    this.queue.delete(p)
    this.queued -= queuedCost(p.invocation)
  }

  private promote(): void {
    if (this.closedWith) return
    while (this.inFlight.size < this.options.maxInFlight && this.queue.size > 0) {
      const next = this.queue.values().next().value as Pending
      this.dequeue(next)
      // Its timeout counts from now: for the connection and for the answer.
      next.deadline = this.now() + next.timeoutMs
      this.admit(next)
    }
  }
}

function queuedCost(invocation: Invocation): number {
  return invocation.payload.length + QUEUED_REQUEST_BYTES
}

/** The client's closing error, once per request: a write's copy carries its own `written`. */
function ownCopy(error: Error): Error {
  return error instanceof ConnectionError && error.constructor === ConnectionError
    ? new ConnectionError(error.code, error.message, { cause: error.cause })
    : error
}

import { randomBytes } from 'node:crypto'
import type { IPublishPacket } from 'mqtt'
import { ArgumentError, ConnectionError, OverloadedError, ProtocolError, TimeoutError } from '../errors'
import { HlcError, type Hlc } from '../hlc'
import { REQUEST_TOPIC } from '../protocol'
import { cancelledBy } from './arguments'
import { backoffDelay } from './backoff'
import type { PublishProperties } from './connection'
import { readResponse, requestProperties, type Reply } from './envelope'
import type { ResolvedOptions } from './options'
import type { ConnectionStatus } from './types'

/** What the request layer needs from the connection; a seam for tests. */
export interface Transport {
  readonly online: boolean
  readonly status: ConnectionStatus
  publish(topic: string, payload: Buffer, properties: PublishProperties, onAck: (outcome: { error?: Error; noSubscribers?: boolean }) => void): number | undefined
  forget(messageId: number): void
}

export interface Invocation {
  /** For messages only: GET, SET, … */
  verb: string
  payload: Buffer
  timeoutMs?: number
  signal?: AbortSignal
  fencingToken?: Hlc
  persist?: boolean
}

export type Invoker = (invocation: Invocation) => Promise<Reply>

const RESEND_MIN_MS = 100
const RESEND_MAX_MS = 2000

type Phase = 'queued' | 'waiting' | 'sent'

interface Pending {
  readonly id: string
  readonly correlation: Buffer
  readonly invocation: Invocation
  readonly timeoutMs: number
  readonly deadline: number
  phase: Phase
  settled: boolean
  properties?: PublishProperties
  messageId?: number
  /** Times the broker said no service was subscribed; each time the request is sent again after a pause. */
  unheard: number
  timer?: NodeJS.Timeout
  resend?: NodeJS.Timeout
  /** The end of the wait for the connection (connectionWaitMs), while the request waits for it. */
  connectionWait?: NodeJS.Timeout
  detach?: () => void
  resolve(reply: Reply): void
  reject(err: Error): void
}

/**
 * Request/response over one connection: a correlation map of the requests in flight, bounded by
 * maxInFlight with a bounded wait queue behind it; every request settles exactly once (reply,
 * timeout, cancellation, close) and leaves no timer behind. Responses that match nothing (late,
 * duplicate, foreign) are dropped.
 */
export class Requests {
  private readonly inFlight = new Map<string, Pending>()
  /** Insertion-ordered, so the oldest waiter is admitted first. */
  private readonly queue = new Set<Pending>()
  private closedWith: Error | null = null

  constructor(
    private readonly transport: Transport,
    private readonly options: ResolvedOptions,
    private readonly responseTopic: string,
  ) {}

  get size(): { inFlight: number; queued: number } {
    return { inFlight: this.inFlight.size, queued: this.queue.size }
  }

  readonly invoke: Invoker = (invocation) =>
    new Promise<Reply>((resolve, reject) => {
      const timeoutMs = invocation.timeoutMs ?? this.options.requestTimeoutMs
      if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
        reject(new ArgumentError(`the timeout must be a positive number of milliseconds, got ${timeoutMs}`))
        return
      }
      if (this.closedWith) {
        reject(this.closedWith)
        return
      }
      if (invocation.signal?.aborted) {
        reject(cancelledBy(invocation.signal, `the ${invocation.verb} request`))
        return
      }
      if (this.inFlight.size >= this.options.maxInFlight && this.queue.size >= this.options.maxQueued) {
        reject(new OverloadedError(`${this.inFlight.size} requests in flight and ${this.queue.size} waiting: the limit is reached`))
        return
      }
      const correlation = randomBytes(16)
      const p: Pending = {
        id: correlation.toString('hex'),
        correlation,
        invocation,
        timeoutMs,
        deadline: Date.now() + timeoutMs,
        phase: 'queued',
        settled: false,
        unheard: 0,
        resolve,
        reject,
      }
      p.timer = setTimeout(() => this.onTimeout(p), timeoutMs)
      const signal = invocation.signal
      if (signal) {
        const onAbort = () => this.settle(p, cancelledBy(signal, `the ${invocation.verb} request`))
        signal.addEventListener('abort', onAbort, { once: true })
        p.detach = () => signal.removeEventListener('abort', onAbort)
      }
      if (this.inFlight.size < this.options.maxInFlight) this.admit(p)
      else this.queue.add(p)
    })

  /** A message on the response topic. */
  handleResponse(payload: Buffer, packet: IPublishPacket): void {
    const correlation = packet.properties?.correlationData
    const p = correlation ? this.inFlight.get(correlation.toString('hex')) : undefined
    if (!p || p.phase !== 'sent') {
      this.options.logger('debug', `dropped a response with ${correlation ? `unknown correlation ${correlation.toString('hex')}` : 'no correlation data'} (late, duplicate or foreign)`)
      return
    }
    let reply: Reply
    try {
      reply = readResponse(packet.properties, payload, this.options.clock)
    } catch (err) {
      this.settle(p, err as Error)
      return
    }
    this.settle(p, undefined, reply)
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
  close(error = new ConnectionError('the client was closed')): void {
    this.closedWith = error
    for (const p of [...this.queue, ...this.inFlight.values()]) this.settle(p, error)
  }

  private admit(p: Pending): void {
    p.phase = 'waiting'
    this.inFlight.set(p.id, p)
    if (this.transport.online) this.send(p)
    else this.awaitConnection(p)
  }

  /** Fails a request that waited connectionWaitMs for a connection that did not come, with the reason it is down. */
  private awaitConnection(p: Pending): void {
    const waitMs = this.options.connectionWaitMs
    if (waitMs === undefined || waitMs >= p.timeoutMs) return
    const fail = () => {
      if (p.phase !== 'waiting' || this.transport.online) return
      const { reason, authFailed } = this.transport.status
      const waited = waitMs > 0 ? ` after waiting ${waitMs} ms` : ''
      this.settle(p, new ConnectionError(`the ${p.invocation.verb} request failed: not connected${waited}${reason ? ` (${authFailed ? 'authentication failed: ' : ''}${reason})` : ''}`))
    }
    if (waitMs === 0) fail()
    else p.connectionWait = setTimeout(fail, waitMs)
  }

  private send(p: Pending): void {
    if (p.settled) return
    clearTimeout(p.connectionWait)
    const remaining = Math.max(1, p.deadline - Date.now())
    if (!p.properties) {
      let timestamp: Hlc
      try {
        timestamp = this.options.clock.tick()
      } catch (err) {
        this.settle(p, err instanceof HlcError ? new ProtocolError(`the clock cannot stamp the request: ${err.message}`, { cause: err }) : (err as Error))
        return
      }
      p.properties = requestProperties({
        clientId: this.options.clientId,
        responseTopic: this.responseTopic,
        correlation: p.correlation,
        timestamp,
        expirySec: 1,
        ...(p.invocation.fencingToken ? { fencingToken: p.invocation.fencingToken } : {}),
        ...(p.invocation.persist ? { persist: true } : {}),
      })
    }
    p.phase = 'sent'
    // The broker drops the request once our wait is over, so a late duplicate is not executed.
    const properties = { ...p.properties, messageExpiryInterval: Math.ceil(remaining / 1000) }
    p.messageId = this.transport.publish(REQUEST_TOPIC, p.invocation.payload, properties, ({ error, noSubscribers }) => {
      if (error) this.settle(p, error)
      else if (noSubscribers && !p.settled) {
        // Nobody received it, so sending it again cannot execute it twice.
        clearTimeout(p.resend)
        p.resend = setTimeout(() => {
          if (this.transport.online) this.send(p)
          else p.phase = 'waiting'
        }, backoffDelay(p.unheard++, RESEND_MIN_MS, RESEND_MAX_MS))
      }
    })
  }

  private onTimeout(p: Pending): void {
    if (p.phase === 'sent' && p.messageId !== undefined) this.transport.forget(p.messageId)
    const where = p.unheard > 0 ? 'no state store service is subscribed to the request topic' : p.phase === 'sent' ? 'no response' : this.transport.online ? 'still waiting for a free slot' : 'not connected'
    const err = new TimeoutError(p.timeoutMs, `${p.invocation.verb} request`)
    err.message += ` (${where})`
    this.settle(p, err)
  }

  private settle(p: Pending, err: Error | undefined, reply?: Reply): void {
    if (p.settled) return
    p.settled = true
    clearTimeout(p.timer)
    clearTimeout(p.resend)
    clearTimeout(p.connectionWait)
    p.detach?.()
    if (p.phase === 'queued') this.queue.delete(p)
    else this.inFlight.delete(p.id)
    if (err) p.reject(err)
    else p.resolve(reply!)
    this.promote()
  }

  private promote(): void {
    if (this.closedWith) return
    while (this.inFlight.size < this.options.maxInFlight && this.queue.size > 0) {
      const next = this.queue.values().next().value as Pending
      this.queue.delete(next)
      this.admit(next)
    }
  }
}

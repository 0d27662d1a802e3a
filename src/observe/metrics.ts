import type { ConnectionStatus, RequestRecorder } from '../client'
import { NotificationLag, type LagFigures } from './notification-lag'

export interface RecentError {
  /** Wall-clock ms. */
  at: number
  message: string
  /** The node whose msg failed (its name, else its type); absent for the connection's own errors. */
  node?: string
  /** That node's id, for the editor to show the node's label. */
  nodeId?: string
  /** The key of the failed msg, when it had resolved one. */
  key?: string
}

export interface ConnectionFigures extends LagFigures {
  state: ConnectionStatus['state']
  reason: string | null
  authFailed: boolean
  /** Wall-clock ms of the current connection's start; null while not connected. */
  connectedSince: number | null
  /** Connections made after the first one. */
  reconnects: number
  /** Over the last minute (or since the first request, when that is shorter). */
  requestsPerSecond: number
  requests: number
  failures: number
  /** Latency quantiles over the last minute, null without requests. Within 8 % (the histogram's resolution). */
  p50Ms: number | null
  p99Ms: number | null
  /** Newest first. */
  lastErrors: RecentError[]
}

const WINDOW_S = 60
/** Bucket i holds latencies up to MIN_MS * GROWTH^i: 8 % steps from 10 µs to beyond a minute. */
const MIN_MS = 0.01
const GROWTH = 1.08
const LOG_GROWTH = Math.log(GROWTH)
const BUCKETS = 210
const KEPT_ERRORS = 10
const ERROR_CHARS = 300

function bucketOf(ms: number): number {
  if (!(ms > MIN_MS)) return 0
  return Math.min(BUCKETS - 1, Math.ceil(Math.log(ms / MIN_MS) / LOG_GROWTH))
}

function upperBound(bucket: number): number {
  return MIN_MS * GROWTH ** bucket
}

/** One second of requests: a latency histogram and counts. */
class Second {
  second = -1
  count = 0
  failures = 0
  readonly histogram = new Uint32Array(BUCKETS)

  reset(second: number): void {
    this.second = second
    this.count = 0
    this.failures = 0
    this.histogram.fill(0)
  }
}

/**
 * The figures of one connection: request rate and latency over a sliding minute (sixty one-second
 * histograms, so recording is O(1) at any rate and the memory is fixed), reconnects and the last
 * errors. Never holds a value: error messages are the client's, which name none; a failed msg's
 * line keeps its key, cut short.
 */
export class ConnectionMetrics implements RequestRecorder {
  private readonly seconds = Array.from({ length: WINDOW_S }, () => new Second())
  private readonly errors: RecentError[] = []
  /** The errors record() has listed, so a msg that fails with one is not listed twice. */
  private readonly recorded = new WeakSet<Error>()
  /** The line of each recorded request failure, which the msg that failed with it then names. */
  private readonly listed = new WeakMap<Error, RecentError>()
  private status: ConnectionStatus = { state: 'disconnected' }
  /** How far behind this connection's key notifications arrive (the backlog before they reach a node). */
  readonly lag: NotificationLag
  private connectedSince: number | null = null
  private connections = 0
  private firstRequestAt: number | null = null

  constructor(private readonly now: () => number = Date.now) {
    this.lag = new NotificationLag(now)
  }

  record(_verb: string, latencyMs: number, error?: Error): void {
    const now = this.now()
    this.firstRequestAt ??= now
    const s = this.slot(now)
    s.count += 1
    s.histogram[bucketOf(latencyMs)]! += 1
    if (error) {
      s.failures += 1
      this.recorded.add(error)
      this.listed.set(error, this.addError(error.message, now))
    }
  }

  /**
   * A msg a node could not handle. Most never fail as a request (a refusal the service answered, a
   * bad key, no connection yet), so only these show a connection whose every msg fails; a request
   * failure already listed is not listed again.
   */
  msgFailed(node: string, error: unknown, about: { nodeId?: string; key?: string } = {}): void {
    const listed = error instanceof Error ? this.listed.get(error) : undefined
    if (listed) {
      // The request's own line: it now says whose msg it was and for which key.
      Object.assign(
        listed,
        { node },
        about.nodeId !== undefined ? { nodeId: about.nodeId } : {},
        about.key !== undefined ? { key: clip(about.key, KEY_CHARS) } : {},
      )
      return
    }
    if (error instanceof Error && this.recorded.has(error)) return
    const message = error instanceof Error ? error.message : String(error)
    this.addError(message, this.now(), node, about)
  }

  /** Every status change of the client. */
  onStatus(status: ConnectionStatus): void {
    const was = this.status.state
    this.status = status
    if (status.state === 'connected' && was !== 'connected') {
      this.connections += 1
      this.connectedSince = this.now()
    } else if (status.state !== 'connected') {
      this.connectedSince = null
      if (was === 'connected' && status.reason) this.addError(status.reason, this.now())
    }
  }

  /** An error with no request to blame (a failed re-registration, a broker refusal). */
  addError(
    message: string,
    at = this.now(),
    node?: string,
    about: { nodeId?: string; key?: string } = {},
  ): RecentError {
    const entry: RecentError = { at, message: clip(message, ERROR_CHARS) }
    if (node !== undefined) entry.node = node
    if (about.nodeId !== undefined) entry.nodeId = about.nodeId
    if (about.key !== undefined) entry.key = clip(about.key, KEY_CHARS)
    this.errors.unshift(entry)
    if (this.errors.length > KEPT_ERRORS) this.errors.length = KEPT_ERRORS
    return entry
  }

  figures(): ConnectionFigures {
    const now = this.now()
    const current = Math.floor(now / 1000)
    const merged = new Uint32Array(BUCKETS)
    let requests = 0
    let failures = 0
    for (const s of this.seconds) {
      if (s.second <= current - WINDOW_S || s.second > current) continue
      requests += s.count
      failures += s.failures
      for (let i = 0; i < BUCKETS; i++) merged[i]! += s.histogram[i]!
    }
    const spanS =
      this.firstRequestAt === null ? WINDOW_S : Math.min(WINDOW_S, Math.max(1, (now - this.firstRequestAt) / 1000))
    return {
      state: this.status.state,
      reason: this.status.reason ?? null,
      authFailed: this.status.problem === 'authFailed',
      connectedSince: this.connectedSince,
      reconnects: Math.max(0, this.connections - 1),
      requestsPerSecond: requests / spanS,
      requests,
      failures,
      p50Ms: quantile(merged, requests, 0.5),
      p99Ms: quantile(merged, requests, 0.99),
      lastErrors: this.errors.slice(),
      ...this.lag.figures(),
    }
  }

  private slot(now: number): Second {
    const second = Math.floor(now / 1000)
    const s = this.seconds[second % WINDOW_S]!
    if (s.second !== second) s.reset(second)
    return s
  }
}

function quantile(histogram: Uint32Array, total: number, q: number): number | null {
  if (total === 0) return null
  const rank = Math.max(1, Math.ceil(total * q))
  let seen = 0
  for (let i = 0; i < BUCKETS; i++) {
    seen += histogram[i]!
    if (seen >= rank) return upperBound(i)
  }
  return upperBound(BUCKETS - 1)
}

/** Characters of a failed msg's key kept in its error line. */
const KEY_CHARS = 120

function clip(text: string, chars: number): string {
  return text.length > chars ? `${text.slice(0, chars - 1)}…` : text
}

import { ConnectionError, isTransient, TimeoutError } from '../diagnostics/errors'
import type { Hlc } from '../hlc'
import { cancelledBy, requirePositive } from '../checks/arguments'
import type { Lease } from './lease'
import { KeyWatch } from './key-watch'
import { Latch, pause } from './wait'

export interface WaitOptions {
  /** Give up after this long (TimeoutError); default: wait until acquired, cancelled or the client closes. */
  timeoutMs?: number
  signal?: AbortSignal
}

const BACKOFF_BASE_MS = 20
const BACKOFF_MAX_MS = 250
/** How often a waiter without key notifications tries again. */
const POLL_MS = 100

/**
 * Waits until the lease is ours: try once (one SET); when someone else holds it, wait for its
 * DELETE on the key's watch (shared with the lease and kept across acquisitions, see KeyWatch), or
 * at most one lease length in case a notification was lost. A watch not yet registered when the
 * try was sent is registered, and the lease tried again, before the wait, so no DELETE is missed.
 * A DELETE is answered with a try at once, as the SDKs' waiters do, so a waiter of ours gets its
 * share beside them; only a try that follows no DELETE (a failed request, a wait that ran out, a
 * poll) waits a jittered backoff first. Returns the fencing token.
 */
export async function acquireLease(lease: Lease, options: WaitOptions, what: string): Promise<Hlc> {
  const client = lease.client
  const timeoutMs = requirePositive(options.timeoutMs, 'timeoutMs')
  const deadline = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs
  const { signal } = options
  const remaining = () => deadline - Date.now()
  /**
   * A wait that began with the connection down, and has had no answer since, fails with the
   * connection's error within the client's connection wait (the broker is down: said at once, as
   * every request says it). A wait that began connected rides through a loss until its own time.
   */
  let heard = client.status.state === 'connected'
  /** The connection was down for the client's whole connection wait at the last try (its error). */
  let down: ConnectionError | null = null
  // Out of time while the connection is down: the cause is the connection, not someone's hold.
  const expired = () => (down && client.status.state !== 'connected' ? down : new TimeoutError(timeoutMs!, what))
  if (signal?.aborted) throw cancelledBy(signal, what)

  const freed = new Latch()
  // Without key notifications (the preview dialect) a freed lease is found by trying again.
  const watch = client.canObserve ? KeyWatch.of(client, lease.name) : null
  const unlisten = watch?.listen((n) => n.operation === 'DELETE' && freed.set())
  try {
    for (let attempt = 0; ; attempt++) {
      if (signal?.aborted) throw cancelledBy(signal, what)
      if (remaining() <= 0) throw expired()
      freed.reset()
      const requestTimeout = Number.isFinite(remaining()) ? { timeoutMs: Math.max(1, remaining()) } : {}
      try {
        const watched = watch?.registered ?? false
        const result = await lease.tryAcquire({ ...requestTimeout, ...(signal ? { signal } : {}) })
        heard = true
        down = null
        if (result.acquired) return result.fencingToken!
        if (watch && !watched) {
          // A DELETE between that try and the registration would be missed: register, then try again.
          await watch.ready({ ...requestTimeout, ...(signal ? { signal } : {}) })
          continue
        }
        await pause(Math.min(watch ? lease.leaseMs : POLL_MS, remaining()), { signal, latch: freed, client, what })
        if (freed.value) continue
      } catch (err) {
        down = notConnected(err) ? err : null
        if (down && !heard) throw down
        if (remaining() <= 0 && (err instanceof TimeoutError || isTransient(err))) throw expired()
        // A lost connection or a request that timed out: try again while time remains.
        if (!retryable(err, client.status.state)) throw err
      }
      if (remaining() <= 0) throw expired()
      const backoff = Math.random() * Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** Math.min(attempt, 10))
      await pause(Math.min(backoff, remaining()), { signal, client, what })
    }
  } finally {
    unlisten?.()
  }
}

/** The client gave up waiting for its connection (connectionWaitMs), as opposed to losing it under a request. */
function notConnected(err: unknown): err is ConnectionError {
  return err instanceof ConnectionError && (err.code === 'NotConnected' || err.code === 'NotAuthenticated')
}

function retryable(err: unknown, state: string): boolean {
  if (state === 'closed') return false
  return err instanceof TimeoutError || isTransient(err)
}

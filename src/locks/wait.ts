import { ConnectionError } from '../diagnostics/errors'
import { cancelledBy } from '../checks/arguments'
import type { StateStoreClient } from '../client'

/** A flag that one side sets (a DELETE notification) and the other waits for, without missing a set that came first. */
export class Latch {
  private isSet = false
  private wake: (() => void) | null = null

  set(): void {
    this.isSet = true
    this.wake?.()
  }

  reset(): void {
    this.isSet = false
  }

  get value(): boolean {
    return this.isSet
  }

  /** @internal used by pause() */
  onSet(wake: (() => void) | null): void {
    this.wake = wake
  }
}

/**
 * Waits `ms`, or less when the latch is set; rejects with CancelledError on abort and with
 * ConnectionError when the client closes, so no waiter outlives its client.
 */
export function pause(
  ms: number,
  options: { signal?: AbortSignal; latch?: Latch; client?: StateStoreClient; what?: string } = {},
): Promise<void> {
  const { signal, latch, client } = options
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(cancelledBy(signal, options.what ?? 'waiting'))
    if (client?.status.state === 'closed')
      return reject(new ConnectionError('ConnectionClosed', 'the client was closed'))
    if (latch?.value) return resolve()
    const finish = (err?: Error) => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
      client?.off('status', onStatus)
      latch?.onSet(null)
      if (err) reject(err)
      else resolve()
    }
    const onAbort = () => finish(cancelledBy(signal!, options.what ?? 'waiting'))
    const onStatus = (s: { state: string }) => {
      if (s.state === 'closed') finish(new ConnectionError('ConnectionClosed', 'the client was closed'))
    }
    const timer = Number.isFinite(ms) ? setTimeout(() => finish(), Math.min(Math.max(0, ms), 2 ** 31 - 1)) : undefined
    signal?.addEventListener('abort', onAbort, { once: true })
    client?.on('status', onStatus)
    latch?.onSet(() => finish())
  })
}

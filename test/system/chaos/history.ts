import { ArgumentError, ConnectionError, OverloadedError, ServiceError } from '../../../src/diagnostics/errors'

/**
 * One operation of a chaos workload, as the checkers see it: invoked, then ok (with its output),
 * fail (it certainly did not happen) or unknown (it may have happened: timed out, connection lost
 * while it was out), with monotonic times.
 */
export interface Recorded<I, O> {
  process: string
  input: I
  invokedAt: number
  outcome: 'pending' | 'ok' | 'fail' | 'unknown'
  output?: O
  returnedAt: number
  /** When it failed, whatever its outcome (an unknown one keeps returnedAt at Infinity: it may take effect later). */
  endedAt?: number
  error?: string
  /** The error's kind, with a connection error's or a service error's code: `connection:ConnectionLost`, `service:TimestampSkew`, `timeout`. */
  errorCode?: string
}

export function errorCode(err: unknown): string {
  if (err instanceof ConnectionError || err instanceof ServiceError) return `${err.kind}:${err.code}`
  return err instanceof Error && 'kind' in err ? String(err.kind) : 'untyped'
}

/** Errors after which the request certainly was not executed: refused before sending, or answered with an error. */
export function certainlyNotDone(err: unknown): boolean {
  if (err instanceof ServiceError || err instanceof ArgumentError || err instanceof OverloadedError) return true
  // A request fails notConnected only while it waits for the connection, before it is ever sent.
  return err instanceof ConnectionError && err.code === 'NotConnected'
}

export class History<I, O> {
  readonly ops: Array<Recorded<I, O>> = []

  /** Runs `call` as one operation of `process` and records how it ended. */
  async record(process: string, input: I, call: () => Promise<O>): Promise<O | undefined> {
    const op: Recorded<I, O> = {
      process,
      input,
      invokedAt: performance.now(),
      outcome: 'pending',
      returnedAt: Infinity,
    }
    this.ops.push(op)
    try {
      const output = await call()
      op.outcome = 'ok'
      op.output = output
      op.returnedAt = performance.now()
      return output
    } catch (err) {
      op.endedAt = performance.now()
      op.error = err instanceof Error ? `${err.name}: ${err.message}` : String(err)
      op.errorCode = errorCode(err)
      if (certainlyNotDone(err)) {
        op.outcome = 'fail'
        op.returnedAt = performance.now()
      } else op.outcome = 'unknown'
      return undefined
    }
  }
}

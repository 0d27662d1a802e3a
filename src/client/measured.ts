import { performance } from 'node:perf_hooks'
import type { Hlc } from '../hlc'
import type { RequestRecorder } from './types'
import type { Invocation, Invoker } from './pending-requests'

/** The invoker, reporting each request's latency and outcome to `recorder` (which must not throw). */
export function measured(invoke: Invoker, recorder: RequestRecorder): Invoker {
  return <T>(invocation: Invocation<T>) => {
    const start = performance.now()
    // An answer the caller's parser refuses (an -ERR payload) still counts as a request that worked:
    // the recorder's errors are failures of the request itself (timeout, refusal, connection loss).
    let answered = false
    const parse = invocation.parse
    const reply = invoke({
      ...invocation,
      parse: (payload: Buffer, version: Hlc | null) => {
        answered = true
        return parse(payload, version)
      },
    })
    reply.then(
      () => recorder.record(invocation.verb, performance.now() - start),
      (err: unknown) => {
        if (answered) recorder.record(invocation.verb, performance.now() - start)
        else recorder.record(invocation.verb, performance.now() - start, err instanceof Error ? err : new Error(String(err)))
      },
    )
    return reply
  }
}

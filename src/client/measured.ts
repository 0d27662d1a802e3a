import { performance } from 'node:perf_hooks'
import type { RequestRecorder } from '../observe/metrics'
import type { Invoker } from './requests'

/** The invoker, reporting each request's latency and outcome to `recorder` (which must not throw). */
export function measured(invoke: Invoker, recorder: RequestRecorder): Invoker {
  return (invocation) => {
    const start = performance.now()
    const reply = invoke(invocation)
    reply.then(
      () => recorder.record(invocation.verb, performance.now() - start),
      (err: unknown) => recorder.record(invocation.verb, performance.now() - start, err instanceof Error ? err : new Error(String(err))),
    )
    return reply
  }
}

import { NoServiceError, ServiceError, TimeoutError } from '../diagnostics/errors'
import { Request, SERVICE_PROBE_KEY } from '../protocol'
import type { Invoker } from './pending-requests'

/** What a service check found behind the request topic. */
export type ServiceCheck = 'answered' | 'none' | 'silent'

/**
 * Asks whether a state store service answers on this connection: `answered` when it does,
 * `none` when the broker says nobody is subscribed to the request topic (a plain MQTT broker),
 * `silent` when something is subscribed but did not answer within `timeoutMs`. Goes through the
 * request layer directly, so it is not counted among the application's requests (metrics).
 */
export async function checkService(invoke: Invoker, timeoutMs: number): Promise<ServiceCheck> {
  try {
    await invoke({ verb: 'GET', payload: Request.get(SERVICE_PROBE_KEY), timeoutMs, probe: true, parse: () => true })
    return 'answered'
  } catch (err) {
    if (err instanceof NoServiceError) return 'none'
    if (err instanceof TimeoutError) return 'silent'
    // A service error is an answer too (the key is refused, the verb unknown to an old service).
    if (err instanceof ServiceError) return 'answered'
    throw err
  }
}

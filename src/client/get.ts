import type { Hlc } from '../hlc'
import { parseGetResponse, Request, type Bytes } from '../protocol'
import { requireBytes } from './arguments'
import type { Invoker } from './requests'
import type { GetResult, RequestOptions } from './types'

/** GET: the value and its version, or nulls when the key does not exist. */
export function get(invoke: Invoker, key: Bytes, options: RequestOptions = {}): Promise<GetResult> {
  // Not async: the request's own promise is the result. A bad argument still rejects, never throws.
  try {
    const payload = Request.get(requireBytes(key, 'key'))
    return invoke({ verb: 'GET', payload, timeoutMs: options.timeoutMs, signal: options.signal, fencingToken: undefined, persist: undefined, parse: getResult })
  } catch (err) {
    return Promise.reject(err as Error)
  }
}

function getResult(payload: Buffer, version: Hlc | null): GetResult {
  const value = parseGetResponse(payload)
  return { value, version: value === null ? null : version }
}

import type { Hlc } from '../hlc'
import { parseGetResponse, Request, type Bytes } from '../protocol'
import { requireBytes, requireOptions } from '../checks/arguments'
import { invokeBuilt, type Invoker } from './pending-requests'
import type { GetResult, RequestOptions } from './types'

/** GET: the value and its version, or nulls when the key does not exist. */
export function get(invoke: Invoker, key: Bytes, options: RequestOptions = {}): Promise<GetResult> {
  return invokeBuilt(invoke, () => {
    requireOptions(options)
    const payload = Request.get(requireBytes(key, 'key'))
    return {
      verb: 'GET',
      payload,
      timeoutMs: options.timeoutMs,
      signal: options.signal,
      fencingToken: undefined,
      persist: undefined,
      parse: getResult,
    }
  })
}

function getResult(payload: Buffer, version: Hlc | null): GetResult {
  const value = parseGetResponse(payload)
  return { value, version: value === null ? null : version }
}

import type { Hlc } from '../hlc'
import { parseDeleteResponse, Request, type Bytes } from '../protocol'
import { requireBytes, requireFencingToken } from './arguments'
import type { Invoker } from './requests'
import type { DeleteOptions, DeleteResult } from './types'

/** DEL: 1 deleted, 0 no such key. */
export function del(invoke: Invoker, key: Bytes, options: DeleteOptions = {}): Promise<DeleteResult> {
  // Not async: the request's own promise is the result. A bad argument still rejects, never throws.
  try {
    const fencingToken = requireFencingToken(options.fencingToken)
    const payload = Request.del(requireBytes(key, 'key'))
    return invoke({ verb: 'DEL', payload, timeoutMs: options.timeoutMs, signal: options.signal, fencingToken, persist: undefined, parse: delResult })
  } catch (err) {
    return Promise.reject(err as Error)
  }
}

function delResult(payload: Buffer, version: Hlc | null): DeleteResult {
  return { deleted: parseDeleteResponse(payload, 'DEL'), version }
}

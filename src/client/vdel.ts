import type { Hlc } from '../hlc'
import { parseDeleteResponse, Request, type Bytes } from '../protocol'
import { requireBytes, requireFencingToken } from './arguments'
import type { Invoker } from './requests'
import type { DeleteOptions, DeleteResult } from './types'

/** VDEL: delete only if the key holds `value`; 1 deleted, 0 no such key, -1 another value. */
export function vdel(invoke: Invoker, key: Bytes, value: Bytes, options: DeleteOptions = {}): Promise<DeleteResult> {
  // Not async: the request's own promise is the result. A bad argument still rejects, never throws.
  try {
    const fencingToken = requireFencingToken(options.fencingToken)
    const payload = Request.vdel(requireBytes(key, 'key'), requireBytes(value))
    return invoke({ verb: 'VDEL', payload, timeoutMs: options.timeoutMs, signal: options.signal, fencingToken, persist: undefined, parse: vdelResult })
  } catch (err) {
    return Promise.reject(err as Error)
  }
}

function vdelResult(payload: Buffer, version: Hlc | null): DeleteResult {
  return { deleted: parseDeleteResponse(payload, 'VDEL'), version }
}

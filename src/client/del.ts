import type { Hlc } from '../hlc'
import { parseDeleteResponse, Request, type Bytes } from '../protocol'
import { requireBytes, requireFencingToken, requireOptions } from '../checks/arguments'
import { get } from './get'
import { invokeBuilt, type Invoker } from './pending-requests'
import type { DeleteOptions, DeleteResult } from './types'
import { readBackDelete } from './write-outcome'

/**
 * DEL: 1 deleted, 0 no such key. A failure says in `err.written` whether the delete took effect, read
 * back when its answer was lost (write-outcome.ts).
 */
export function del(invoke: Invoker, key: Bytes, options: DeleteOptions = {}): Promise<DeleteResult> {
  return invokeBuilt(invoke, () => {
    requireOptions(options)
    const fencingToken = requireFencingToken(options.fencingToken)
    const payload = Request.del(requireBytes(key, 'key'))
    return {
      verb: 'DEL',
      payload,
      timeoutMs: options.timeoutMs,
      signal: options.signal,
      fencingToken,
      persist: undefined,
      parse: delResult,
      written: (sent) => readBackDelete({ read: () => get(invoke, key, { timeoutMs: options.timeoutMs }) }, sent),
    }
  })
}

function delResult(payload: Buffer, version: Hlc | null): DeleteResult {
  return { deleted: parseDeleteResponse(payload, 'DEL'), version }
}

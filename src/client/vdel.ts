import type { Hlc } from '../hlc'
import { parseDeleteResponse, Request, type Bytes } from '../protocol'
import { requireBytes, requireFencingToken, requireOptions } from '../checks/arguments'
import { get } from './get'
import { invokeBuilt, type Invoker } from './pending-requests'
import type { DeleteOptions, DeleteResult } from './types'
import { readBackDelete } from './write-outcome'

/**
 * VDEL: delete only if the key holds `value`; 1 deleted, 0 no such key, -1 another value. A failure says
 * in `err.written` whether the delete took effect, read back when its answer was lost (write-outcome.ts).
 */
export function vdel(invoke: Invoker, key: Bytes, value: Bytes, options: DeleteOptions = {}): Promise<DeleteResult> {
  return invokeBuilt(invoke, () => {
    requireOptions(options)
    const fencingToken = requireFencingToken(options.fencingToken)
    const payload = Request.vdel(requireBytes(key, 'key'), requireBytes(value))
    return {
      verb: 'VDEL',
      payload,
      timeoutMs: options.timeoutMs,
      signal: options.signal,
      fencingToken,
      persist: undefined,
      parse: vdelResult,
      written: (sent) => readBackDelete({ read: () => get(invoke, key, { timeoutMs: options.timeoutMs }) }, sent),
    }
  })
}

function vdelResult(payload: Buffer, version: Hlc | null): DeleteResult {
  return { deleted: parseDeleteResponse(payload, 'VDEL'), version }
}

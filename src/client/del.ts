import { parseDeleteResponse, Request, type Bytes } from '../protocol'
import { requireFencingToken, requireValue } from './arguments'
import type { Invoker } from './requests'
import type { DeleteOptions, DeleteResult } from './types'

/** DEL: 1 deleted, 0 no such key. */
export async function del(invoke: Invoker, key: Bytes, options: DeleteOptions = {}): Promise<DeleteResult> {
  const fencingToken = requireFencingToken(options.fencingToken)
  const payload = Request.del(requireValue(key, 'key'))
  const reply = await invoke({ verb: 'DEL', payload, timeoutMs: options.timeoutMs, signal: options.signal, ...(fencingToken ? { fencingToken } : {}) })
  return { deleted: parseDeleteResponse(reply.payload, 'DEL'), version: reply.version }
}

import { parseDeleteResponse, Request, type Bytes } from '../protocol'
import { requireFencingToken, requireValue } from './arguments'
import type { Invoker } from './requests'
import type { DeleteOptions, DeleteResult } from './types'

/** VDEL: delete only if the key holds `value`; 1 deleted, 0 no such key, -1 another value. */
export async function vdel(invoke: Invoker, key: Bytes, value: Bytes, options: DeleteOptions = {}): Promise<DeleteResult> {
  const fencingToken = requireFencingToken(options.fencingToken)
  const payload = Request.vdel(requireValue(key, 'key'), requireValue(value))
  const reply = await invoke({ verb: 'VDEL', payload, timeoutMs: options.timeoutMs, signal: options.signal, ...(fencingToken ? { fencingToken } : {}) })
  return { deleted: parseDeleteResponse(reply.payload, 'VDEL'), version: reply.version }
}

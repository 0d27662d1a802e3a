import { ArgumentError, ProtocolError } from '../errors'
import { parseSetResponse, Request, type Bytes } from '../protocol'
import { requireFencingToken, requireValue } from './arguments'
import type { Invoker } from './requests'
import type { SetOptions, SetResult } from './types'

/** SET with an optional NX/NEX condition, expiry, fencing token and persistence. */
export async function set(invoke: Invoker, key: Bytes, value: Bytes, options: SetOptions = {}): Promise<SetResult> {
  const fencingToken = requireFencingToken(options.fencingToken)
  if (options.persist !== undefined && typeof options.persist !== 'boolean') throw new ArgumentError('persist must be true or false')
  const payload = Request.set(requireValue(key, 'key'), requireValue(value), { condition: options.condition, expiryMs: options.expiryMs })
  const reply = await invoke({
    verb: 'SET',
    payload,
    timeoutMs: options.timeoutMs,
    signal: options.signal,
    ...(fencingToken ? { fencingToken } : {}),
    ...(options.persist ? { persist: true } : {}),
  })
  const applied = parseSetResponse(reply.payload)
  // The version is the point of a SET response (and the fencing token of a lease): the service always sends it.
  if (!reply.version) throw new ProtocolError('the SET response carries no __ts version')
  return { applied, version: reply.version }
}

import { ArgumentError, ProtocolError } from '../diagnostics/errors'
import type { Hlc } from '../hlc'
import { parseSetResponse, Request, type Bytes } from '../protocol'
import { requireBytes, requireFencingToken, requireOptions } from '../checks/arguments'
import { invokeBuilt, type Invoker } from './pending-requests'
import type { SetOptions, SetResult } from './types'

/** SET with an optional NX/NEX condition, expiry, fencing token and persistence. */
export function set(invoke: Invoker, key: Bytes, value: Bytes, options: SetOptions = {}): Promise<SetResult> {
  return invokeBuilt(invoke, () => {
    requireOptions(options)
    const fencingToken = requireFencingToken(options.fencingToken)
    if (options.persist !== undefined && typeof options.persist !== 'boolean') throw new ArgumentError('persist must be true or false')
    const payload = Request.set(requireBytes(key, 'key'), requireBytes(value), options)
    return {
      verb: 'SET',
      payload,
      timeoutMs: options.timeoutMs,
      signal: options.signal,
      fencingToken,
      persist: options.persist === true || undefined,
      parse: setResult,
    }
  })
}

function setResult(payload: Buffer, version: Hlc | null): SetResult {
  const applied = parseSetResponse(payload)
  // The version is the point of a SET response (and the fencing token of a lease): the service always sends it.
  if (!version) throw new ProtocolError('the SET response carries no __ts version')
  return { applied, version }
}

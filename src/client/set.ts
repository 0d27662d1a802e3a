import { ArgumentError, ProtocolError } from '../diagnostics/errors'
import type { Hlc } from '../hlc'
import { parseSetResponse, Request, toBytes, type Bytes } from '../protocol'
import { requireBytes, requireFencingToken, requireOptions } from '../checks/arguments'
import { get } from './get'
import { invokeBuilt, type Invoker } from './pending-requests'
import type { SetOptions, SetResult } from './types'
import { readBackWrite } from './write-outcome'

/**
 * SET with an optional NX/NEX condition, expiry, fencing token and persistence. A failure says in
 * `err.written` whether it was written, read back when its answer was lost (write-outcome.ts).
 */
export function set(invoke: Invoker, key: Bytes, value: Bytes, options: SetOptions = {}): Promise<SetResult> {
  return invokeBuilt(invoke, () => {
    requireOptions(options)
    const fencingToken = requireFencingToken(options.fencingToken)
    if (options.persist !== undefined && typeof options.persist !== 'boolean') throw new ArgumentError('persist must be true or false')
    const payload = Request.set(requireBytes(key, 'key'), requireBytes(value), options)
    const timeoutMs = options.timeoutMs
    return {
      verb: 'SET',
      payload,
      timeoutMs: options.timeoutMs,
      signal: options.signal,
      fencingToken,
      persist: options.persist === true || undefined,
      parse: setResult,
      written: (sent) => readBackWrite({ read: () => get(invoke, key, { timeoutMs }), value: toBytes(value), expiring: (options.expiryMs ?? 0) > 0 }, sent),
    }
  })
}

function setResult(payload: Buffer, version: Hlc | null): SetResult {
  const applied = parseSetResponse(payload)
  // The version is the point of a SET response (and the fencing token of a lease): the service always sends it.
  if (!version) throw new ProtocolError('the SET response carries no __ts version')
  return { applied, version }
}

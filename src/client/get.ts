import { parseGetResponse, Request, type Bytes } from '../protocol'
import { requireValue } from './arguments'
import type { Invoker } from './requests'
import type { GetResult, RequestOptions } from './types'

/** GET: the value and its version, or nulls when the key does not exist. */
export async function get(invoke: Invoker, key: Bytes, options: RequestOptions = {}): Promise<GetResult> {
  const payload = Request.get(requireValue(key, 'key'))
  const reply = await invoke({ verb: 'GET', payload, timeoutMs: options.timeoutMs, signal: options.signal })
  const value = parseGetResponse(reply.payload)
  return { value, version: value === null ? null : reply.version }
}

import { parseKeyNotifyResponse, Request } from '../protocol'
import type { Invoker } from './pending-requests'
import type { RequestOptions } from './types'

/** KEYNOTIFY: register this client for the key's notifications. */
export async function keyNotify(invoke: Invoker, key: Buffer, options: RequestOptions = {}): Promise<void> {
  // `:0` (said to mean "already registered") is as good as `+OK` for us.
  await invoke({
    verb: 'KEYNOTIFY',
    payload: Request.keyNotify(key),
    timeoutMs: options.timeoutMs,
    signal: options.signal,
    parse: parseKeyNotifyResponse,
  })
}

/** KEYNOTIFY STOP: false when the service had no registration (`:0`). */
export async function keyNotifyStop(invoke: Invoker, key: Buffer, options: RequestOptions = {}): Promise<boolean> {
  return invoke({
    verb: 'KEYNOTIFY STOP',
    payload: Request.keyNotifyStop(key),
    timeoutMs: options.timeoutMs,
    signal: options.signal,
    parse: parseKeyNotifyResponse,
  })
}

import { encodeCommand } from '../resp'
import { ArgumentError } from '../diagnostics/errors'

/** Keys and values are bytes; strings are UTF-8. */
export type Bytes = Buffer | string

export type SetCondition = 'always' | 'NX' | 'NEX'

export interface SetRequestOptions {
  /** `NX`: only if the key does not exist. `NEX`: only if it does not exist or already holds this value. */
  condition?: SetCondition
  /** Expiry in whole milliseconds; undefined or 0 for none. */
  expiryMs?: number
}

export function toBytes(value: Bytes): Buffer {
  return typeof value === 'string' ? Buffer.from(value, 'utf8') : value
}

/** Refuses what the service would refuse anyway, before anything is sent. */
export function requireKey(key: Bytes): Buffer {
  return toBytes(keyArgument(key))
}

/**
 * requireKey for a request's payload: a string stays a string, because encodeCommand writes it
 * into the payload as UTF-8 at once, where converting it first would make a Buffer per request.
 */
function keyArgument(key: Bytes): Bytes {
  if (key.length === 0) throw new ArgumentError('the key must not be empty')
  return key
}

export function requireExpiry(expiryMs: number | undefined): number | undefined {
  if (expiryMs === undefined || expiryMs === 0) return undefined
  if (!Number.isSafeInteger(expiryMs) || expiryMs < 0) {
    throw new ArgumentError(`the expiry must be a whole, positive number of milliseconds, got ${expiryMs}`)
  }
  return expiryMs
}

/** Payload builders for every request the service understands. */
export const Request = {
  get: (key: Bytes): Buffer => encodeCommand(['GET', keyArgument(key)]),

  set(key: Bytes, value: Bytes, options: SetRequestOptions = {}): Buffer {
    const args: Array<Buffer | string> = ['SET', keyArgument(key), value]
    const condition = options.condition ?? 'always'
    if (condition !== 'always') {
      if (condition !== 'NX' && condition !== 'NEX')
        throw new ArgumentError(`unknown SET condition ${JSON.stringify(condition)}`)
      args.push(condition)
    }
    const expiry = requireExpiry(options.expiryMs)
    if (expiry !== undefined) args.push('PX', String(expiry))
    return encodeCommand(args)
  },

  del: (key: Bytes): Buffer => encodeCommand(['DEL', keyArgument(key)]),
  vdel: (key: Bytes, value: Bytes): Buffer => encodeCommand(['VDEL', keyArgument(key), value]),
  keyNotify: (key: Bytes): Buffer => encodeCommand(['KEYNOTIFY', keyArgument(key)]),
  keyNotifyStop: (key: Bytes): Buffer => encodeCommand(['KEYNOTIFY', keyArgument(key), 'STOP']),
  /**
   * SCAN (designed in the SDKs, ADR 34; not in a released broker): the pattern, and the token of the previous page
   * after the first.
   */
  scan(pattern: Bytes, token?: Buffer | null): Buffer {
    if (pattern.length === 0) throw new ArgumentError('the SCAN pattern must not be empty')
    return encodeCommand(token ? ['SCAN', pattern, token] : ['SCAN', pattern])
  },
} as const

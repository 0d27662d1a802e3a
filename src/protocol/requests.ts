import { encodeCommand } from '../resp'
import { ArgumentError } from '../errors'

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
  const bytes = toBytes(key)
  if (bytes.length === 0) throw new ArgumentError('the key must not be empty')
  return bytes
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
  get: (key: Bytes): Buffer => encodeCommand(['GET', requireKey(key)]),

  set(key: Bytes, value: Bytes, options: SetRequestOptions = {}): Buffer {
    const args: Array<Buffer | string> = ['SET', requireKey(key), toBytes(value)]
    const condition = options.condition ?? 'always'
    if (condition !== 'always') {
      if (condition !== 'NX' && condition !== 'NEX') throw new ArgumentError(`unknown SET condition ${JSON.stringify(condition)}`)
      args.push(condition)
    }
    const expiry = requireExpiry(options.expiryMs)
    if (expiry !== undefined) args.push('PX', String(expiry))
    return encodeCommand(args)
  },

  del: (key: Bytes): Buffer => encodeCommand(['DEL', requireKey(key)]),
  vdel: (key: Bytes, value: Bytes): Buffer => encodeCommand(['VDEL', requireKey(key), toBytes(value)]),
  keyNotify: (key: Bytes): Buffer => encodeCommand(['KEYNOTIFY', requireKey(key)]),
  keyNotifyStop: (key: Bytes): Buffer => encodeCommand(['KEYNOTIFY', requireKey(key), 'STOP']),
} as const

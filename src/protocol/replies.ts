import { encodeBulk, encodeCommand, encodeError, encodeInteger, encodeSimple, encodeValue } from '../resp'

/** The payloads a state store service answers with, for the emulator and for tests. */
export const Reply = {
  ok: encodeSimple('OK'),
  notApplied: encodeInteger(-1),
  nil: encodeBulk(null),
  integer: (n: number): Buffer => encodeInteger(n),
  value: (value: Buffer): Buffer => encodeBulk(value),
  error: (text: string): Buffer => encodeError(`ERR ${text}`),
  /** A SCAN page: `*1 [keys]` when it is the last, `*2 [keys] <token>` when another follows. */
  scanPage(keys: readonly Buffer[], token: Buffer | null): Buffer {
    const page = { kind: 'array', value: keys.map((k) => ({ kind: 'bulk', value: k }) as const) } as const
    return encodeValue({ kind: 'array', value: token ? [page, { kind: 'bulk', value: token }] : [page] })
  },
} as const

export const Notification = {
  set: (value: Buffer): Buffer => encodeCommand(['NOTIFY', 'SET', 'VALUE', value]),
  delete: encodeCommand(['NOTIFY', 'DELETE']),
} as const

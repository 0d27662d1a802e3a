import { encodeBulk, encodeCommand, encodeError, encodeInteger, encodeSimple } from '../resp'

/** The payloads a state store service answers with, for the emulator and for tests. */
export const Reply = {
  ok: encodeSimple('OK'),
  notApplied: encodeInteger(-1),
  nil: encodeBulk(null),
  integer: (n: number): Buffer => encodeInteger(n),
  value: (value: Buffer): Buffer => encodeBulk(value),
  error: (text: string): Buffer => encodeError(`ERR ${text}`),
} as const

export const Notification = {
  set: (value: Buffer): Buffer => encodeCommand(['NOTIFY', 'SET', 'VALUE', value]),
  delete: encodeCommand(['NOTIFY', 'DELETE']),
} as const

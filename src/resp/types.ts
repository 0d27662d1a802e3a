/**
 * A decoded RESP3 value. Text that the protocol defines as text (simple strings and errors,
 * numbers) is a string or number; everything binary-safe (bulk strings, blob errors, verbatim
 * strings) stays a Buffer.
 */
export type RespValue = (
  | { kind: 'simple'; value: string }
  | { kind: 'error'; value: string }
  | { kind: 'blob-error'; value: Buffer }
  | { kind: 'integer'; value: number | bigint }
  | { kind: 'bulk'; value: Buffer }
  | { kind: 'verbatim'; format: string; value: Buffer }
  | { kind: 'null'; from: '_' | '$' | '*' }
  | { kind: 'double'; value: number }
  | { kind: 'boolean'; value: boolean }
  | { kind: 'big-number'; value: bigint }
  | { kind: 'array' | 'set' | 'push'; value: RespValue[] }
  | { kind: 'map'; value: Array<[RespValue, RespValue]> }
) & { attributes?: Array<[RespValue, RespValue]> }

export type RespKind = RespValue['kind']

export interface Decoded {
  value: RespValue
  /** Bytes read from the start offset to the end of the value. */
  bytesConsumed: number
  /** Bytes after the value that were not read. */
  bytesLeftOver: number
}

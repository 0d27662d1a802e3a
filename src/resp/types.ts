/**
 * A decoded RESP3 value. Text that the protocol defines as text (simple strings and errors,
 * numbers) is a string or number; everything binary-safe (bulk strings, blob errors, verbatim
 * strings) stays a Buffer.
 *
 * Decoded values are read-only: the decoder returns one shared, frozen object for each fixed reply
 * (`+OK`, the nulls, small integers), so a consumer that changed one would change every later
 * decode of it. Copy (`{ ...value }`) to build another value.
 */
export type RespValue = (
  | { readonly kind: 'simple'; readonly value: string }
  | { readonly kind: 'error'; readonly value: string }
  | { readonly kind: 'blob-error'; readonly value: Buffer }
  | { readonly kind: 'integer'; readonly value: number | bigint }
  | { readonly kind: 'bulk'; readonly value: Buffer }
  | { readonly kind: 'verbatim'; readonly format: string; readonly value: Buffer }
  | { readonly kind: 'null'; readonly from: '_' | '$' | '*' }
  | { readonly kind: 'double'; readonly value: number }
  | { readonly kind: 'boolean'; readonly value: boolean }
  | { readonly kind: 'big-number'; readonly value: bigint }
  | { readonly kind: 'array' | 'set' | 'push'; readonly value: RespValue[] }
  | { readonly kind: 'map'; readonly value: Array<[RespValue, RespValue]> }
) & { readonly attributes?: Array<[RespValue, RespValue]> }

export type RespKind = RespValue['kind']

export interface Decoded {
  value: RespValue
  /** Bytes read from the start offset to the end of the value. */
  bytesConsumed: number
  /** Bytes after the value that were not read. */
  bytesLeftOver: number
}

/**
 * A decoded RESP3 value of the kinds the state store protocol uses: simple strings, errors,
 * integers, bulk strings, arrays and the two nulls (`$-1`, `*-1`). The other RESP3 kinds (doubles,
 * booleans, big numbers, blob errors, verbatim strings, maps, sets, pushes, attributes, `_`) are
 * malformed here. Text (simple strings, errors) is a string; bulk strings stay a Buffer.
 *
 * Decoded values are read-only: the decoder returns one shared, frozen object for each fixed reply
 * (`+OK`, the nulls, small integers), so a consumer that changed one would change every later
 * decode of it. Copy (`{ ...value }`) to build another value.
 */
export type RespValue =
  | { readonly kind: 'simple'; readonly value: string }
  | { readonly kind: 'error'; readonly value: string }
  | { readonly kind: 'integer'; readonly value: number | bigint }
  | { readonly kind: 'bulk'; readonly value: Buffer }
  | { readonly kind: 'null'; readonly from: '$' | '*' }
  | { readonly kind: 'array'; readonly value: RespValue[] }

export type RespKind = RespValue['kind']

export interface Decoded {
  value: RespValue
  /** Bytes read from the start offset to the end of the value. */
  bytesConsumed: number
  /** Bytes after the value that were not read. */
  bytesLeftOver: number
}

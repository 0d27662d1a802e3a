import * as decoder from './decode'
import * as encoder from './encode'
import * as errors from './errors'

// Plain data properties, not the getters `export { … } from` compiles to in CommonJS: a getter on
// the exports object turns it into a dictionary (V8 normalizes an object when a data property
// becomes an accessor), and a call through a dictionary is neither constant-folded nor inlined. It
// cost more than the whole decode of `:1` or `$-1` (in-process: 30M/s through the getter, 70M/s
// with plain properties beside one getter, 150M/s with none). Every payload of the client and the
// emulator is decoded and encoded through this module. A destructuring export compiles to one
// assignment per name.
export const { decode, decodeExact, DEFAULT_MAX_DEPTH } = decoder
export const { encodeBulk, encodeCommand, encodeError, encodeInteger, encodeSimple, encodeValue } = encoder
export type { DecodeOptions } from './decode'
export const { RespProtocolError } = errors
export type RespProtocolError = errors.RespProtocolError
export type { RespErrorReason } from './errors'
export type { Decoded, RespKind, RespValue } from './types'

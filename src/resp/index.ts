import { decode as decodeValue, decodeExact as decodeExactValue, DEFAULT_MAX_DEPTH as MAX_DEPTH } from './decode'
import * as encoder from './encode'
import { RespProtocolError as ProtocolErrorClass } from './errors'

// Plain data properties, not the getters `export { … } from` compiles to in CommonJS: a getter on
// the exports object turns it into a dictionary (V8 normalizes an object when a data property
// becomes an accessor), and a call through a dictionary is neither constant-folded nor inlined. It
// cost more than the whole decode of `:1` or `$-1` (in-process: 30M/s through the getter, 70M/s
// with plain properties beside one getter, 150M/s with none). Every payload of the client and the
// emulator is decoded and encoded through this module.
export const decode = decodeValue
export const decodeExact = decodeExactValue
export const DEFAULT_MAX_DEPTH = MAX_DEPTH
export const encodeBulk = encoder.encodeBulk
export const encodeCommand = encoder.encodeCommand
export const encodeError = encoder.encodeError
export const encodeInteger = encoder.encodeInteger
export const encodeSimple = encoder.encodeSimple
export const encodeValue = encoder.encodeValue
export type { DecodeOptions } from './decode'
export const RespProtocolError = ProtocolErrorClass
export type RespProtocolError = ProtocolErrorClass
export type { RespErrorReason } from './errors'
export type { Decoded, RespKind, RespValue } from './types'

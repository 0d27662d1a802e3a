export { decode, decodeExact, DEFAULT_MAX_DEPTH, type DecodeOptions } from './decode'
export { encodeBulk, encodeCommand, encodeError, encodeInteger, encodeSimple, encodeValue } from './encode'
export { RespProtocolError, type RespErrorReason } from './errors'
export type { Decoded, RespKind, RespValue } from './types'

import { RespProtocolError } from './errors'
import { integerValue, NULL_ARRAY, NULL_BULK, OK } from './fixed'
import type { Decoded, RespValue } from './types'

const CR = 13
const LF = 10
export const DEFAULT_MAX_DEPTH = 32
/** Lines up to this many bytes are turned into strings without Buffer#toString. */
const SHORT_LINE = 8

export interface DecodeOptions {
  /** Where the value starts in the buffer. */
  offset?: number
  /** Deepest nesting of aggregates accepted (the top level is depth 1). */
  maxDepth?: number
}

/**
 * Decodes one RESP3 value. Throws only `RespProtocolError`. Never reads past the buffer and
 * never allocates from a declared length before the bytes it declares are there.
 */
export function decode(buf: Buffer, options: DecodeOptions = {}): Decoded {
  const start = options.offset ?? 0
  if (start < 0 || start > buf.length) throw new RespProtocolError('malformed', start, 'offset outside the buffer')
  const reader = new Reader(buf, start, options.maxDepth ?? DEFAULT_MAX_DEPTH)
  const value = reader.value(1)
  return { value, bytesConsumed: reader.at - start, bytesLeftOver: buf.length - reader.at }
}

/** Decodes a payload that must hold exactly one value and nothing after it. */
export function decodeExact(buf: Buffer, maxDepth?: number): RespValue {
  // No options or result objects here: this runs for every payload.
  const reader = new Reader(buf, 0, maxDepth ?? DEFAULT_MAX_DEPTH)
  const value = reader.value(1)
  if (reader.at !== buf.length) {
    throw new RespProtocolError('trailingBytes', reader.at, `${buf.length - reader.at} byte(s) after the value`)
  }
  return value
}

class Reader {
  at: number
  constructor(
    private readonly buf: Buffer,
    start: number,
    private readonly maxDepth: number,
  ) {
    this.at = start
  }

  value(depth: number): RespValue {
    if (depth > this.maxDepth) throw new RespProtocolError('tooDeep', this.at, `nesting deeper than ${this.maxDepth}`)
    const typeAt = this.at
    if (typeAt >= this.buf.length) throw new RespProtocolError('incomplete', typeAt, 'expected a type byte')
    const type = this.buf[typeAt]!
    this.at++
    switch (type) {
      case 0x2b /* + */: {
        const text = this.line()
        return text === 'OK' ? OK : { kind: 'simple', value: text }
      }
      case 0x2d /* - */:
        return { kind: 'error', value: this.line() }
      case 0x3a /* : */: {
        const small = this.smallInteger()
        if (small !== undefined) return integerValue(small)
        const n = integer(this.line(), typeAt + 1)
        return typeof n === 'number' ? integerValue(n) : { kind: 'integer', value: n }
      }
      case 0x24 /* $ */: {
        const n = this.length(true)
        return n < 0 ? NULL_BULK : { kind: 'bulk', value: this.blob(n) }
      }
      case 0x2a /* * */: {
        const n = this.length(true)
        return n < 0 ? NULL_ARRAY : { kind: 'array', value: this.items(n, depth) }
      }
      default:
        throw new RespProtocolError(
          'malformed',
          typeAt,
          `type byte 0x${type.toString(16).padStart(2, '0')} is not one the state store protocol uses`,
        )
    }
  }

  /** Text up to CRLF; CR or LF alone inside a line is malformed. */
  private line(): string {
    const { buf } = this
    const start = this.at
    let i = start
    let ascii = true
    while (i < buf.length) {
      const b = buf[i]!
      if (b === CR) {
        if (i + 1 >= buf.length) throw new RespProtocolError('incomplete', i + 1, 'expected LF after CR')
        if (buf[i + 1] !== LF) throw new RespProtocolError('malformed', i + 1, 'expected LF after CR')
        this.at = i + 2
        // Short ASCII lines (`OK`, the common reply) are built in JavaScript: a call into
        // Buffer#toString costs more than the whole rest of the decode (measured by bench/codec.mjs).
        if (ascii && i - start <= SHORT_LINE) {
          let text = ''
          for (let k = start; k < i; k++) text += String.fromCharCode(buf[k]!)
          return text
        }
        return buf.toString('utf8', start, i)
      }
      if (b === LF) throw new RespProtocolError('malformed', i, 'LF without CR')
      if (b >= 0x80) ascii = false
      i++
    }
    throw new RespProtocolError('incomplete', buf.length, 'line without CRLF')
  }

  /**
   * An integer of at most 15 digits (always a safe integer) and its CRLF, read from the bytes; for
   * anything else undefined, with nothing consumed: the line is then read and checked as text.
   */
  private smallInteger(): number | undefined {
    const { buf } = this
    let i = this.at
    const sign = buf[i]
    if (sign === 0x2d /* - */ || sign === 0x2b /* + */) i++
    const digitsAt = i
    let n = 0
    while (i < buf.length && i - digitsAt < 15) {
      const b = buf[i]!
      if (b < 0x30 || b > 0x39) break
      n = n * 10 + (b - 0x30)
      i++
    }
    if (i === digitsAt || buf[i] !== CR || buf[i + 1] !== LF) return undefined
    this.at = i + 2
    return sign === 0x2d ? -n : n
  }

  /** A declared length: decimal digits, or -1 where a null is allowed. */
  private length(nullable: boolean): number {
    const { buf } = this
    const start = this.at
    let i = start
    let negative = false
    if (buf[i] === 0x2d) {
      negative = true
      i++
    }
    let n = 0
    const digitsAt = i
    while (i < buf.length && buf[i]! >= 0x30 && buf[i]! <= 0x39) {
      n = n * 10 + (buf[i]! - 0x30)
      if (n > Number.MAX_SAFE_INTEGER) throw new RespProtocolError('malformed', start, 'length too large')
      i++
    }
    if (i >= buf.length) throw new RespProtocolError('incomplete', i, 'length without CRLF')
    if (i === digitsAt) throw new RespProtocolError('malformed', i, 'length is not a number')
    this.at = i
    this.crlf()
    if (negative) {
      if (nullable && n === 1) return -1
      throw new RespProtocolError('malformed', start, `negative length -${n}`)
    }
    return n
  }

  private crlf(): void {
    const { buf, at } = this
    if (at + 2 > buf.length) {
      if (at < buf.length && buf[at] !== CR) throw new RespProtocolError('malformed', at, 'expected CRLF')
      throw new RespProtocolError('incomplete', buf.length, 'expected CRLF')
    }
    if (buf[at] !== CR || buf[at + 1] !== LF) throw new RespProtocolError('malformed', at, 'expected CRLF')
    this.at = at + 2
  }

  private blob(n: number): Buffer {
    const start = this.at
    if (start + n > this.buf.length) {
      throw new RespProtocolError(
        'incomplete',
        this.buf.length,
        `declared ${n} bytes, ${this.buf.length - start} present`,
      )
    }
    this.at = start + n
    this.crlf()
    return this.buf.subarray(start, start + n)
  }

  private items(n: number, depth: number): RespValue[] {
    this.requireRoom(n, 3)
    const items: RespValue[] = []
    for (let i = 0; i < n; i++) items.push(this.value(depth + 1))
    return items
  }

  /** Every element takes at least `minBytes`; a count that cannot fit is refused up front. */
  private requireRoom(count: number, minBytes: number): void {
    const room = this.buf.length - this.at
    if (count * minBytes > room) {
      throw new RespProtocolError('incomplete', this.buf.length, `declared ${count} elements, only ${room} bytes left`)
    }
  }
}

function integer(text: string, offset: number): number | bigint {
  // RESP3 allows an explicit sign on integers: `:[+|-]<digits>`.
  if (!/^[+-]?[0-9]+$/.test(text))
    throw new RespProtocolError('malformed', offset, `integer expected, got ${JSON.stringify(text)}`)
  const n = Number(text)
  return Number.isSafeInteger(n) ? n : BigInt(text)
}

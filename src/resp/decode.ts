import { RespProtocolError } from './errors'
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

/**
 * The values of the fixed replies, one frozen object each, shared by every decode that gives them
 * (decoded values are read-only, see `RespValue`): the references return a bare `null` or number
 * for these, and an object per decode cost up to a third of such a decode (bench/codec.mjs).
 */
const fixed = <T extends RespValue>(value: T): T => Object.freeze(value)
const OK = fixed({ kind: 'simple', value: 'OK' })
const NULL_BULK = fixed({ kind: 'null', from: '$' })
const NULL_ARRAY = fixed({ kind: 'null', from: '*' })
const MINUS_ONE = fixed({ kind: 'integer', value: -1 })
/** 0 to 255: counts and flags (DEL, VDEL, KEYNOTIFY) are all among them. */
const SMALL_INTEGERS = Array.from({ length: 256 }, (_, n) => fixed({ kind: 'integer', value: n }))
/**
 * The verbs and words of this protocol's requests and notifications (`NOTIFY SET VALUE …`,
 * `NOTIFY DELETE`, `GET`, `SET`, `DEL`) as bulk strings: one shared value each, whose bytes, like
 * every decoded value, are not to be changed. A notification is otherwise four wrappers and four
 * Buffer views, three of them for these words (bench/codec.mjs, `NOTIFY SET VALUE`).
 */
interface ProtocolWord {
  bytes: Buffer
  value: RespValue
}
const word = (text: string): ProtocolWord => ({ bytes: Buffer.from(text, 'latin1'), value: fixed({ kind: 'bulk', value: Buffer.from(text, 'latin1') }) })
const WORD_SET = word('SET')
const WORD_GET = word('GET')
const WORD_DEL = word('DEL')
const WORD_VALUE = word('VALUE')
const WORD_NOTIFY = word('NOTIFY')
const WORD_DELETE = word('DELETE')
const integerValue = (n: number): RespValue =>
  n >= 0 && n < SMALL_INTEGERS.length && !Object.is(n, -0) ? SMALL_INTEGERS[n]! : n === -1 ? MINUS_ONE : { kind: 'integer', value: n }

/** Decodes a payload that must hold exactly one value and nothing after it. */
export function decodeExact(buf: Buffer, maxDepth?: number): RespValue {
  // Below depth 1 every value is too deep, and below 2 an array's items are: the reader says so.
  if (maxDepth === undefined || maxDepth >= 1) {
    const common = (buf.length <= 5 ? fixedReply(buf) : undefined) ?? commonShape(buf, maxDepth === undefined || maxDepth >= 2)
    if (common !== undefined) return common
  }
  // No options or result objects here: this runs for every payload.
  const reader = new Reader(buf, 0, maxDepth ?? DEFAULT_MAX_DEPTH)
  const value = reader.value(1)
  if (reader.at !== buf.length) {
    throw new RespProtocolError('trailing-bytes', reader.at, `${buf.length - reader.at} byte(s) after the value`)
  }
  return value
}

/**
 * `+OK`, `$-1`, `*-1`, `:-1` and one-digit integers: their shared value, or undefined. Small
 * enough for V8 to inline into decodeExact, which commonShape is not.
 */
function fixedReply(buf: Buffer): RespValue | undefined {
  const end = buf.length
  if (buf[end - 2] !== CR || buf[end - 1] !== LF) return undefined
  switch (end) {
    case 4: {
      const digit = buf[1]! - 0x30
      return buf[0] === 0x3a /* : */ && digit >= 0 && digit <= 9 ? SMALL_INTEGERS[digit] : undefined
    }
    case 5:
      if (buf[1] === 0x2d && buf[2] === 0x31) {
        switch (buf[0]) {
          case 0x24 /* $ */:
            return NULL_BULK
          case 0x2a /* * */:
            return NULL_ARRAY
          case 0x3a /* : */:
            return MINUS_ONE
        }
        return undefined
      }
      return buf[0] === 0x2b /* + */ && buf[1] === 0x4f && buf[2] === 0x4b ? OK : undefined
  }
  return undefined
}

/**
 * Nearly every payload of this protocol is `+OK` (SET), a bulk string or null (GET replies), a small
 * integer (DEL, VDEL, `:-1`), or an array of bulk strings (every request, every notification). A
 * whole, well-formed payload of one of those shapes is read here in one pass, without the general
 * reader, and gives exactly the value the reader would. Anything else, including every malformed
 * payload, gives undefined and takes the general path, which reports the error. bench/codec.mjs
 * measures why.
 */
function commonShape(buf: Buffer, arrays: boolean): RespValue | undefined {
  const end = buf.length
  switch (buf[0]) {
    case 0x24 /* $ */: {
      const lineEnd = digitsLineEnd(buf, 1)
      return lineEnd > 0 && bulkStop(buf, 0, lineEnd) === end - 2 ? { kind: 'bulk', value: buf.subarray(lineEnd, end - 2) } : undefined
    }
    case 0x3a /* : */: {
      const negative = buf[1] === 0x2d
      const digits = negative ? 2 : 1
      if (digitsLineEnd(buf, digits) !== end) return undefined
      const n = digitsValue(buf, digits, end - 2)
      // `:-0` is -0, as the reader's Number('-0') is.
      if (negative) return n === 1 ? MINUS_ONE : { kind: 'integer', value: -n }
      return n < SMALL_INTEGERS.length ? SMALL_INTEGERS[n] : { kind: 'integer', value: n }
    }
    case 0x2a /* * */: {
      if (!arrays) return undefined
      const lineEnd = digitsLineEnd(buf, 1)
      if (lineEnd < 0) return undefined
      const count = digitsValue(buf, 1, lineEnd - 2)
      // Every item takes at least 6 bytes (`$0\r\n\r\n`): a count the payload cannot hold is the reader's to refuse.
      if (count > (end - lineEnd) / 6) return undefined
      const items: RespValue[] = new Array<RespValue>(count)
      let at = lineEnd
      for (let i = 0; i < count; i++) {
        if (buf[at] !== 0x24) return undefined
        const word = knownWord(buf, at)
        if (word !== undefined) {
          items[i] = word.value
          at += 6 + word.bytes.length
          continue
        }
        const dataAt = digitsLineEnd(buf, at + 1)
        const stop = dataAt > 0 ? bulkStop(buf, at, dataAt) : -1
        if (stop < 0) return undefined
        items[i] = { kind: 'bulk', value: buf.subarray(dataAt, stop) }
        at = stop + 2
      }
      return at === end ? { kind: 'array', value: items } : undefined
    }
    default:
      return undefined
  }
}

/** Where `<up to 15 digits>CRLF` at `at` ends (just after the CRLF), or -1 if there is no such line. */
function digitsLineEnd(buf: Buffer, at: number): number {
  const limit = Math.min(buf.length, at + 15)
  let i = at
  while (i < limit) {
    const b = buf[i]!
    if (b < 0x30 || b > 0x39) break
    i++
  }
  if (i === at || buf[i] !== CR || buf[i + 1] !== LF) return -1
  return i + 2
}

/** The number the digits from `at` up to `stop` spell (a line digitsLineEnd accepted). */
function digitsValue(buf: Buffer, at: number, stop: number): number {
  let n = 0
  for (let i = at; i < stop; i++) n = n * 10 + (buf[i]! - 0x30)
  return n
}

/** The shared protocol word (NOTIFY, SET, ...) whose `$` is at `at`, or undefined; it spans 6 + its length bytes. */
function knownWord(buf: Buffer, at: number): ProtocolWord | undefined {
  if (buf[at + 2] !== CR) return undefined
  let w: ProtocolWord
  switch (buf[at + 1]) {
    case 0x33 /* 3 */:
      w = buf[at + 4] === 0x53 /* S */ ? WORD_SET : buf[at + 4] === 0x47 /* G */ ? WORD_GET : WORD_DEL
      break
    case 0x35 /* 5 */:
      w = WORD_VALUE
      break
    case 0x36 /* 6 */:
      w = buf[at + 4] === 0x4e /* N */ ? WORD_NOTIFY : WORD_DELETE
      break
    default:
      return undefined
  }
  const bytes = w.bytes
  const n = bytes.length
  const start = at + 4
  if (buf[at + 3] !== LF || buf[start + n] !== CR || buf[start + n + 1] !== LF) return undefined
  for (let i = 0; i < n; i++) if (buf[start + i] !== bytes[i]) return undefined
  return w
}

/**
 * Where the data of the bulk string whose `$` is at `at` stops (its closing CRLF), given where its
 * length line ends; -1 if the data and CRLF are not all there.
 */
function bulkStop(buf: Buffer, at: number, lineEnd: number): number {
  const stop = lineEnd + digitsValue(buf, at + 1, lineEnd - 2)
  return stop + 2 <= buf.length && buf[stop] === CR && buf[stop + 1] === LF ? stop : -1
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
    if (depth > this.maxDepth) throw new RespProtocolError('too-deep', this.at, `nesting deeper than ${this.maxDepth}`)
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
        throw new RespProtocolError('malformed', typeAt, `type byte 0x${type.toString(16).padStart(2, '0')} is not one the state store protocol uses`)
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
      throw new RespProtocolError('incomplete', this.buf.length, `declared ${n} bytes, ${this.buf.length - start} present`)
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
  if (!/^[+-]?[0-9]+$/.test(text)) throw new RespProtocolError('malformed', offset, `integer expected, got ${JSON.stringify(text)}`)
  const n = Number(text)
  return Number.isSafeInteger(n) ? n : BigInt(text)
}

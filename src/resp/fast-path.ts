import type { RespValue } from './types'

// The common payloads read in one pass, and the shared values of the fixed replies: what every
// request, answer and notification of the protocol looks like. decode.ts tries these first and
// reads anything else, and reports every malformed payload, with its general reader.

const CR = 13
const LF = 10

/**
 * The values of the fixed replies, one frozen object each, shared by every decode that gives them
 * (decoded values are read-only, see `RespValue`): the references return a bare `null` or number
 * for these, and an object per decode cost up to a third of such a decode (bench/codec.mjs).
 */
const fixed = <T extends RespValue>(value: T): T => Object.freeze(value)
export const OK = fixed({ kind: 'simple', value: 'OK' })
export const NULL_BULK = fixed({ kind: 'null', from: '$' })
export const NULL_ARRAY = fixed({ kind: 'null', from: '*' })
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
export const integerValue = (n: number): RespValue =>
  n >= 0 && n < SMALL_INTEGERS.length && !Object.is(n, -0) ? SMALL_INTEGERS[n]! : n === -1 ? MINUS_ONE : { kind: 'integer', value: n }

/**
 * `+OK`, `$-1`, `*-1`, `:-1` and one-digit integers: their shared value, or undefined. Small
 * enough for V8 to inline into decodeExact, which commonShape is not.
 */
export function fixedReply(buf: Buffer): RespValue | undefined {
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
export function commonShape(buf: Buffer, arrays: boolean): RespValue | undefined {
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

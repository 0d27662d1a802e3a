import type { RespValue } from './types'

const CRLF = '\r\n'

/**
 * A request: an array of bulk strings, binary-safe, lengths in bytes, written into one Buffer.
 */
export function encodeCommand(args: ReadonlyArray<string | Buffer>): Buffer {
  // Every request goes through here. Headers and short ASCII words are written byte by byte and
  // small buffers copied in a loop: each Buffer#write or #copy is a call into C++ that costs more
  // than writing a few bytes from JavaScript (bench/codec.mjs measures it).
  const count = args.length
  let size = 3 + digitCount(count)
  let lengths: number[] | undefined
  for (let i = 0; i < count; i++) {
    const arg = args[i]!
    let n: number
    if (typeof arg === 'string') {
      n = isShortAscii(arg) ? arg.length : Buffer.byteLength(arg, 'utf8')
      ;(lengths ??= new Array<number>(count))[i] = n
    } else {
      n = arg.length
    }
    size += 5 + digitCount(n) + n
  }
  const out = Buffer.allocUnsafe(size)
  out[0] = 0x2a /* * */
  let at = writeDigits(out, 1, count)
  out[at++] = 13
  out[at++] = 10
  for (let i = 0; i < count; i++) {
    const arg = args[i]!
    const n = typeof arg === 'string' ? lengths![i]! : arg.length
    out[at++] = 0x24 /* $ */
    at = writeDigits(out, at, n)
    out[at++] = 13
    out[at++] = 10
    if (typeof arg === 'string') {
      if (n === arg.length && n <= SHORT) {
        for (let k = 0; k < n; k++) out[at++] = arg.charCodeAt(k)
      } else {
        at += out.write(arg, at, 'utf8')
      }
    } else if (n <= SHORT) {
      for (let k = 0; k < n; k++) out[at++] = arg[k]!
    } else {
      out.set(arg, at)
      at += n
    }
    out[at++] = 13
    out[at++] = 10
  }
  return out
}

/** Strings and buffers up to this many bytes are copied from JavaScript. */
const SHORT = 64

function isShortAscii(text: string): boolean {
  if (text.length > SHORT) return false
  for (let k = 0; k < text.length; k++) if (text.charCodeAt(k) >= 0x80) return false
  return true
}

function digitCount(n: number): number {
  let d = 1
  while (n >= 10) {
    n = Math.floor(n / 10)
    d++
  }
  return d
}

/** Writes a non-negative integer in decimal; returns the offset after it. */
function writeDigits(out: Buffer, at: number, n: number): number {
  const end = at + digitCount(n)
  let i = end
  do {
    out[--i] = 0x30 + (n % 10)
    n = Math.floor(n / 10)
  } while (n > 0)
  return end
}

export function encodeSimple(text: string): Buffer {
  return Buffer.from(`+${text}${CRLF}`, 'utf8')
}

export function encodeError(text: string): Buffer {
  return Buffer.from(`-${text}${CRLF}`, 'utf8')
}

export function encodeInteger(n: number | bigint): Buffer {
  return Buffer.from(`:${n}${CRLF}`, 'latin1')
}

/** A bulk string, or the null bulk string `$-1` for null. */
export function encodeBulk(value: Buffer | null): Buffer {
  if (value === null) return Buffer.from(`$-1${CRLF}`, 'latin1')
  const header = `$${value.length}${CRLF}`
  const out = Buffer.allocUnsafe(header.length + value.length + 2)
  let at = out.write(header, 0, 'latin1')
  at += value.copy(out, at)
  out[at++] = 13
  out[at] = 10
  return out
}

/** Any value of the protocol's RESP3 kinds, for services, tests and tools; the inverse of `decode`. */
export function encodeValue(value: RespValue): Buffer {
  const parts: Buffer[] = []
  write(value, parts)
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts)
}

function write(v: RespValue, parts: Buffer[]): void {
  switch (v.kind) {
    case 'simple':
      parts.push(encodeSimple(v.value))
      return
    case 'error':
      parts.push(encodeError(v.value))
      return
    case 'integer':
      parts.push(encodeInteger(v.value))
      return
    case 'bulk':
      parts.push(encodeBulk(v.value))
      return
    case 'null':
      parts.push(Buffer.from(`${v.from}-1${CRLF}`, 'latin1'))
      return
    case 'array':
      parts.push(Buffer.from(`*${v.value.length}${CRLF}`, 'latin1'))
      for (const item of v.value) write(item, parts)
      return
  }
}

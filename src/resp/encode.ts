import type { RespValue } from './types'

const CRLF = '\r\n'

/**
 * A request: an array of bulk strings, binary-safe, lengths in bytes, written into one Buffer.
 */
export function encodeCommand(args: ReadonlyArray<string | Buffer>): Buffer {
  const lengths = new Array<number>(args.length)
  let size = headerLength('*', args.length)
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    const n = typeof arg === 'string' ? Buffer.byteLength(arg, 'utf8') : arg.length
    lengths[i] = n
    size += headerLength('$', n) + n + 2
  }
  const out = Buffer.allocUnsafe(size)
  let at = out.write(`*${args.length}${CRLF}`, 0, 'latin1')
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    at += out.write(`$${lengths[i]}${CRLF}`, at, 'latin1')
    at += typeof arg === 'string' ? out.write(arg, at, 'utf8') : arg.copy(out, at)
    out[at++] = 13
    out[at++] = 10
  }
  return out
}

function headerLength(prefix: string, n: number): number {
  return prefix.length + String(n).length + 2
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

/** Any RESP3 value, for services, tests and tools; the inverse of `decode`. */
export function encodeValue(value: RespValue): Buffer {
  const parts: Buffer[] = []
  write(value, parts)
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts)
}

function write(v: RespValue, parts: Buffer[]): void {
  if (v.attributes) {
    parts.push(Buffer.from(`|${v.attributes.length}${CRLF}`, 'latin1'))
    for (const [k, val] of v.attributes) {
      write(k, parts)
      write(val, parts)
    }
  }
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
    case 'blob-error':
      parts.push(Buffer.from(`!${v.value.length}${CRLF}`, 'latin1'), v.value, Buffer.from(CRLF))
      return
    case 'verbatim': {
      const format = Buffer.from(`${v.format}:`, 'latin1')
      parts.push(Buffer.from(`=${format.length + v.value.length}${CRLF}`, 'latin1'), format, v.value, Buffer.from(CRLF))
      return
    }
    case 'null':
      parts.push(Buffer.from(v.from === '_' ? `_${CRLF}` : `${v.from}-1${CRLF}`, 'latin1'))
      return
    case 'double':
      parts.push(Buffer.from(`,${formatDouble(v.value)}${CRLF}`, 'latin1'))
      return
    case 'boolean':
      parts.push(Buffer.from(v.value ? `#t${CRLF}` : `#f${CRLF}`, 'latin1'))
      return
    case 'big-number':
      parts.push(Buffer.from(`(${v.value}${CRLF}`, 'latin1'))
      return
    case 'array':
    case 'set':
    case 'push': {
      const prefix = v.kind === 'array' ? '*' : v.kind === 'set' ? '~' : '>'
      parts.push(Buffer.from(`${prefix}${v.value.length}${CRLF}`, 'latin1'))
      for (const item of v.value) write(item, parts)
      return
    }
    case 'map':
      parts.push(Buffer.from(`%${v.value.length}${CRLF}`, 'latin1'))
      for (const [k, val] of v.value) {
        write(k, parts)
        write(val, parts)
      }
      return
  }
}

function formatDouble(n: number): string {
  if (Number.isNaN(n)) return 'nan'
  if (n === Infinity) return 'inf'
  if (n === -Infinity) return '-inf'
  // String(-0) is "0"; the sign is part of the value.
  if (Object.is(n, -0)) return '-0'
  return String(n)
}

import { isUtf8 } from 'node:buffer'

/**
 * How values that are not bytes cross into the store, shared by the nodes (nodes/msg/codec.ts) and
 * the context store (src/context): JSON, read back with the same detection everywhere.
 */

/** JSON if the bytes parse as JSON, else a string if they are valid UTF-8, else the Buffer itself. */
export function decodeAuto(bytes: Buffer): unknown {
  if (!isUtf8(bytes)) return bytes
  const text = bytes.toString('utf8')
  // Text that is no JSON is told by its first character after JSON's blank space, without a throw
  // of JSON.parse per value (each get and watch msg of text paid one).
  if (!mayBeJson(bytes)) return text
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/** Whether the bytes' first character after JSON's blank space can start a JSON text: `{ [ " - 0-9 t f n`. */
function mayBeJson(bytes: Buffer): boolean {
  let i = 0
  while (i < bytes.length && (bytes[i] === 0x20 || bytes[i] === 0x09 || bytes[i] === 0x0a || bytes[i] === 0x0d)) i++
  const c = bytes[i]
  if (c === undefined) return false
  return (
    c === 0x7b /* { */ ||
    c === 0x5b /* [ */ ||
    c === 0x22 /* " */ ||
    c === 0x2d /* - */ ||
    (c >= 0x30 && c <= 0x39) ||
    c === 0x74 /* t */ ||
    c === 0x66 /* f */ ||
    c === 0x6e /* n */
  )
}

/**
 * JSON the way Node-RED's file context store writes it (json-stringify-safe with a decycler that
 * returns nothing): a property that refers back to an object being written is left out (an array
 * element becomes null), reported through `onCircular`; functions and undefined
 * properties are left out as JSON.stringify does. Throws what JSON.stringify throws (a BigInt).
 * `undefined` on its own has no JSON: that is the caller's to handle (it means "delete").
 */
export function encodeJson(value: unknown, onCircular?: () => void): Buffer {
  const json = JSON.stringify(value, circularReplacer(onCircular))
  return Buffer.from(json ?? 'null', 'utf8')
}

function circularReplacer(onCircular?: () => void): (this: unknown, key: string, value: unknown) => unknown {
  // The objects on the path from the root to the value being written: only those make a cycle
  // (the same object twice side by side is fine and written twice, as JSON.stringify does).
  const path: object[] = []
  return function (this: unknown, _key: string, value: unknown) {
    if (typeof value !== 'object' || value === null) return value
    while (path.length > 0 && path[path.length - 1] !== this) path.pop()
    if (path.includes(value)) {
      onCircular?.()
      return undefined
    }
    path.push(value)
    return value
  }
}

/**
 * Context keys are property expressions, as in Node-RED: `a`, `a.b`, `a.b[0]`, `a["x y"].c`. The
 * first segment names a stored key; the rest reaches inside its value. The grammar and the errors
 * (code `INVALID_EXPR`) are those of Node-RED's own stores, so a key one store refuses every store
 * refuses. Cross-references (`a[msg.b]`) only mean something for msg properties; a context key
 * with one is refused.
 */
export type Segment = string | number

export class PathError extends Error {
  readonly code = 'INVALID_EXPR'
  constructor(message: string) {
    super(`Invalid property expression: ${message}`)
    this.name = 'Error'
  }
}

const IDENTIFIER_START = /[a-z0-9$_]/i
const DIGITS = /^\d+$/

function segment(text: string): Segment {
  return DIGITS.test(text) ? Number.parseInt(text, 10) : text
}

const parsed = new Map<string, readonly Segment[]>()
const PARSED_MAX = 10_000

/** The segments of `expr`; throws PathError for what Node-RED refuses. Remembers recent answers (keys repeat). */
export function parsePath(expr: string): readonly Segment[] {
  let parts = parsed.get(expr)
  if (parts) return parts
  parts = parse(expr)
  if (parsed.size >= PARSED_MAX) parsed.clear()
  parsed.set(expr, parts)
  return parts
}

function parse(expr: string): Segment[] {
  if (expr.length === 0) throw new PathError('zero-length')
  const parts: Segment[] = []
  let i = 0
  let start = 0
  const unexpected = (at: number) => new PathError(`unexpected ${expr[at] ?? 'end'} at position ${at}`)
  while (i < expr.length) {
    const c = expr[i]
    if (c === '.') {
      if (i === 0) throw unexpected(0)
      if (start !== i) parts.push(segment(expr.slice(start, i)))
      if (i === expr.length - 1) throw new PathError('unterminated expression')
      if (!IDENTIFIER_START.test(expr[i + 1]!)) throw unexpected(i + 1)
      start = ++i
    } else if (c === '[') {
      if (i === 0) throw unexpected(0)
      if (start !== i) parts.push(expr.slice(start, i))
      if (i === expr.length - 1) throw new PathError('unterminated expression')
      if (expr.startsWith('msg.', i + 1) || expr.startsWith('msg[', i + 1))
        throw new PathError(`msg reference at position ${i + 1} in a context key`)
      const close = boxed(expr, i + 1, parts)
      // Node-RED lets a name follow a ']' directly (`a[0]b` is a, 0, b)
      i = start = close + 1
    } else if ((c === '"' || c === "'") && i === start) {
      // a quoted segment: `"a b".c`
      const end = expr.indexOf(c, i + 1)
      if (end < 0) throw new PathError('unterminated expression')
      if (end === i + 1) throw new PathError(`zero-length string at position ${i + 1}`)
      parts.push(expr.slice(i + 1, end))
      i = start = end + 1
      if (i < expr.length && expr[i] !== '.' && expr[i] !== '[')
        throw new PathError(`unexpected ${expr[i]} expression at position ${i}`)
    } else if (c === ']' || c === '"' || c === "'") {
      throw unexpected(i)
    } else if (c === ' ') {
      throw new PathError(`unexpected ' ' at position ${i}`)
    } else {
      i++
    }
  }
  // Node-RED turns digits into a number only before a dot; a last segment stays a string
  if (start < expr.length) parts.push(expr.slice(start))
  return parts
}

/** Reads `[0]` or `["x"]` starting after the '['; pushes the segment and returns the index of the ']'. */
function boxed(expr: string, from: number, parts: Segment[]): number {
  const first = expr[from]!
  if (first === '"' || first === "'") {
    const end = expr.indexOf(first, from + 1)
    if (end < 0) throw new PathError('unterminated expression')
    if (end === from + 1) throw new PathError(`zero-length string at position ${from + 1}`)
    if (expr[end + 1] !== ']') throw new PathError(`unexpected array expression at position ${from + 1}`)
    parts.push(expr.slice(from + 1, end))
    return end + 1
  }
  if (!/\d/.test(first)) throw new PathError(`unexpected ${first} at position ${from}`)
  const end = expr.indexOf(']', from)
  if (end < 0) throw new PathError('unterminated expression')
  const text = expr.slice(from, end)
  if (!DIGITS.test(text)) throw new PathError(`unexpected array expression at position ${from}`)
  parts.push(Number.parseInt(text, 10))
  return end
}

/** The value at `parts` below `root`; undefined when any step is missing (never throws). */
export function getPath(root: unknown, parts: readonly Segment[], from = 0): unknown {
  let value = root
  for (let i = from; i < parts.length; i++) {
    if (value === undefined || value === null) return undefined
    value = (value as Record<Segment, unknown>)[parts[i]!]
  }
  return value
}

/**
 * Node-RED's setObjectProperty: missing parents are created (an array when the next segment is a
 * number) unless the value is undefined, which deletes (splices an array element); a step through
 * a value that cannot hold properties quietly does nothing. Returns whether anything was set.
 */
export function setPath(root: Record<Segment, unknown>, parts: readonly Segment[], value: unknown): boolean {
  const createMissing = value !== undefined
  let obj: Record<Segment, unknown> = root
  for (let i = 0; i < parts.length - 1; i++) {
    const key = parts[i]!
    const next = obj[key]
    if (Object.hasOwn(obj, key) && next !== undefined) {
      if (next === null || (typeof next !== 'object' && typeof next !== 'function')) return false
      obj = next as Record<Segment, unknown>
    } else if (createMissing) {
      const created = typeof parts[i + 1] === 'string' ? {} : []
      obj[key] = created
      obj = created
    } else {
      return false
    }
  }
  const last = parts[parts.length - 1]!
  if (value === undefined) {
    if (typeof last === 'number' && Array.isArray(obj)) obj.splice(last, 1)
    else delete obj[last]
  } else {
    obj[last] = value
  }
  return true
}

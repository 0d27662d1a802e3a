/**
 * Keys with their values as text, one key a record: what `aio-statestore export` writes, `import`
 * and the emulator's `--seed` read. Two formats:
 *
 * - NDJSON export records, one JSON object a line: `key` (UTF-8 text) or `keyBase64`, `value`
 *   (UTF-8 text) or `valueBase64` (any bytes), and what the store told of the key: `expiresAt`
 *   (wall-clock ms), `persist` (true), `version` (informational; a store mints its own). An export
 *   that stopped at a limit ends in one line `{"exportCut": {"written", "total", "reason"}}` instead
 *   of a record; a complete export has no such line.
 * - The `statestore.json` of the Azure IoT Operations WASM graph development environment: a JSON
 *   array of objects whose properties are keys, `[{"factoryId": "factoryA"}, ...]`; a string value
 *   is stored as its text, any other value as its JSON.
 */

export interface KeyRecord {
  key: Buffer
  value: Buffer
  /** Wall-clock ms after which the key no longer exists; absent for never. */
  expiresAt?: number
  persist?: boolean
  version?: string
}

/** A record that cannot be read; `line` is 1-based. */
export class KeyRecordError extends Error {
  override readonly name = 'KeyRecordError'
  constructor(
    readonly line: number,
    readonly reason: string,
  ) {
    super(`line ${line}: ${reason}`)
  }
}

/** What an export that stopped at a limit says of itself: keys written, keys matched, the limit (`keys` or `bytes`). */
export interface ExportCut {
  written: number
  total: number
  reason: string
}

/** An export file that says it was cut: it holds `cut.written` of the `cut.total` keys asked for. */
export class ExportCutError extends KeyRecordError {
  constructor(
    line: number,
    readonly cut: ExportCut,
  ) {
    super(line, `the export was cut at its ${cut.reason} limit: it holds ${cut.written} of ${cut.total} keys`)
  }
}

/**
 * How a reader treats an export's cut line: refused (an ExportCutError) unless `acceptCut` is given,
 * which is told the cut and its line, and the file's records are read as they are.
 */
export interface KeyRecordOptions {
  acceptCut?: (cut: ExportCut, line: number) => void
}

/** The line an export that stopped at a limit ends with, ending in `\n`. */
export function encodeExportCut(cut: ExportCut): string {
  return `${JSON.stringify({ exportCut: { written: cut.written, total: cut.total, reason: cut.reason } })}\n`
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

function text(bytes: Buffer): string | null {
  try {
    return utf8.decode(bytes)
  } catch {
    return null
  }
}

/** One export line, ending in `\n`: text where the bytes are UTF-8, base64 where they are not. */
export function encodeKeyRecord(record: KeyRecord): string {
  const out: Record<string, unknown> = {}
  const key = text(record.key)
  if (key !== null) out.key = key
  else out.keyBase64 = record.key.toString('base64')
  const value = text(record.value)
  if (value !== null) out.value = value
  else out.valueBase64 = record.value.toString('base64')
  if (record.version !== undefined) out.version = record.version
  if (record.expiresAt !== undefined) out.expiresAt = record.expiresAt
  if (record.persist) out.persist = true
  return `${JSON.stringify(out)}\n`
}

/** JSON nested deeper than this is refused (a value is stored as its JSON, which is written recursively). */
export const MAX_RECORD_DEPTH = 1000

/**
 * The records of a file in either format (a JSON array is a statestore.json). Given as bytes, the
 * file must be UTF-8: a byte that is not is refused with its line, never read as U+FFFD.
 */
export function parseKeyRecords(content: string | Buffer, options: KeyRecordOptions = {}): KeyRecord[] {
  return [...keyRecords(content, options)]
}

/**
 * The records one at a time, as parseKeyRecords reads them: a pass keeps none of them (checking a
 * file of two million keys first held two million pairs of Buffers at once).
 */
export function* keyRecords(content: string | Buffer, options: KeyRecordOptions = {}): Generator<KeyRecord> {
  const body = (typeof content === 'string' ? content : utf8Text(content)).replace(/^\uFEFF/, '')
  checkDepth(body)
  yield* body.trimStart().startsWith('[') ? statestoreJsonRecords(body) : exportRecords(body, options)
}

/**
 * A file's bytes as text; a line that is not UTF-8 is a KeyRecordError (a newline byte is never inside a UTF-8
 * character).
 */
function utf8Text(bytes: Buffer): string {
  try {
    return utf8.decode(bytes)
  } catch {
    let start = 0
    for (let line = 1; ; line++) {
      const end = bytes.indexOf(0x0a, start)
      const slice = bytes.subarray(start, end === -1 ? bytes.length : end)
      if (text(slice) === null)
        throw new KeyRecordError(line, 'the line is not UTF-8 (bytes that are not text go in keyBase64 or valueBase64)')
      if (end === -1) throw new KeyRecordError(line, 'the file is not UTF-8')
      start = end + 1
    }
  }
}

/** Refuses nesting deeper than MAX_RECORD_DEPTH, naming the line where it goes deeper (brackets outside strings). */
export function checkDepth(content: string, firstLine = 1): void {
  let depth = 0
  let line = firstLine
  let inString = false
  for (let i = 0; i < content.length; i++) {
    const c = content.charCodeAt(i)
    if (c === 0x0a) line++
    if (inString) {
      if (c === 0x5c /* backslash */) i++
      else if (c === 0x22 /* " */) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > MAX_RECORD_DEPTH)
        throw new KeyRecordError(line, `JSON nested deeper than ${MAX_RECORD_DEPTH} levels`)
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) depth--
  }
}

/** Text that UTF-8 can carry: no lone surrogate (a JSON `\ud800` escape makes one). */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

function utf8Of(textValue: string, line: number, what: string): Buffer {
  if (LONE_SURROGATE.test(textValue))
    throw new KeyRecordError(
      line,
      `${what} holds a lone UTF-16 surrogate, which is not text (bytes go in keyBase64 or valueBase64)`,
    )
  return Buffer.from(textValue, 'utf8')
}

/** Base64 exactly as it encodes bytes: padded or not, and no bits past the last byte. */
function strictBase64(encoded: string): Buffer | null {
  const bare = encoded.replace(/={1,2}$/, '')
  if (!/^[A-Za-z0-9+/]*$/.test(bare) || bare.length % 4 === 1) return null
  if (bare.length !== encoded.length && encoded.length % 4 !== 0) return null
  const bytes = Buffer.from(bare, 'base64')
  return bytes.toString('base64').replace(/=+$/, '') === bare ? bytes : null
}

function* exportRecords(content: string, options: KeyRecordOptions): Generator<KeyRecord> {
  let start = 0
  for (let line = 1; start <= content.length; line++) {
    const newline = content.indexOf('\n', start)
    const end = newline === -1 ? content.length : newline
    const record = exportLine(content.slice(start, end), line, options)
    start = end + 1
    if (record) yield record
  }
}

/** One line of an export file as its record; null for a blank line and for an accepted cut line. */
export function exportLine(lineText: string, line: number, options: KeyRecordOptions = {}): KeyRecord | null {
  const text = lineText.trim()
  if (text === '') return null
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (err) {
    throw new KeyRecordError(line, `not JSON (${(err as Error).message})`)
  }
  const cut = exportCut(parsed, line)
  if (!cut) return exportRecord(parsed, line)
  if (!options.acceptCut) throw new ExportCutError(line, cut)
  options.acceptCut(cut, line)
  return null
}

/** The cut an `{"exportCut": ...}` line tells; null for any other line. */
function exportCut(parsed: unknown, line: number): ExportCut | null {
  if (parsed === null || typeof parsed !== 'object' || !('exportCut' in parsed)) return null
  const c = parsed.exportCut as Record<string, unknown> | null
  const count = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0
  if (
    Object.keys(parsed).length !== 1 ||
    c === null ||
    typeof c !== 'object' ||
    !count(c.written) ||
    !count(c.total) ||
    typeof c.reason !== 'string'
  )
    throw new KeyRecordError(line, 'an exportCut line is {"exportCut": {"written": N, "total": M, "reason": "..."}}')
  return { written: c.written as number, total: c.total as number, reason: c.reason }
}

function exportRecord(parsed: unknown, line: number): KeyRecord {
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new KeyRecordError(line, 'a record is a JSON object with key and value')
  const r = parsed as Record<string, unknown>
  const key = bytes(r, 'key', line)
  if (key.length === 0) throw new KeyRecordError(line, 'the key is empty')
  const record: KeyRecord = { key, value: bytes(r, 'value', line) }
  if (r.expiresAt !== undefined && r.expiresAt !== null) {
    if (typeof r.expiresAt !== 'number' || !Number.isSafeInteger(r.expiresAt) || r.expiresAt <= 0)
      throw new KeyRecordError(line, 'expiresAt is wall-clock milliseconds, a whole number')
    record.expiresAt = r.expiresAt
  }
  if (r.persist !== undefined && typeof r.persist !== 'boolean')
    throw new KeyRecordError(line, 'persist is true or false')
  if (r.persist === true) record.persist = true
  if (typeof r.version === 'string') record.version = r.version
  return record
}

function bytes(r: Record<string, unknown>, name: 'key' | 'value', line: number): Buffer {
  const plain = r[name]
  const encoded = r[`${name}Base64`]
  if (plain !== undefined && encoded !== undefined)
    throw new KeyRecordError(line, `give ${name} or ${name}Base64, not both`)
  if (typeof plain === 'string') return utf8Of(plain, line, name)
  const decoded = typeof encoded === 'string' ? strictBase64(encoded) : null
  if (decoded) return decoded
  if (encoded !== undefined) throw new KeyRecordError(line, `${name}Base64 is not base64`)
  throw new KeyRecordError(
    line,
    plain === undefined ? `no ${name} (or ${name}Base64)` : `${name} is text; bytes go in ${name}Base64`,
  )
}

function* statestoreJsonRecords(content: string): Generator<KeyRecord> {
  let parsed: unknown
  try {
    parsed = JSON.parse(content)
  } catch (err) {
    const message = (err as Error).message
    const at = /position (\d+)/.exec(message)
    throw new KeyRecordError(
      at ? lineAt(content, Number(at[1])) : (firstUnparsable(content) ?? 1),
      `not JSON (${message})`,
    )
  }
  if (!Array.isArray(parsed)) throw new KeyRecordError(1, 'a statestore.json is an array of objects')
  const elements = topLevelElements(content)
  for (const [i, entry] of (parsed as unknown[]).entries()) {
    const line = elements[i]?.line ?? 1
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry))
      throw new KeyRecordError(line, `entry ${i + 1} is not an object of key → value`)
    for (const [key, value] of Object.entries(entry)) {
      if (key === '') throw new KeyRecordError(line, `entry ${i + 1} has an empty key`)
      yield {
        key: utf8Of(key, line, `entry ${i + 1}'s key`),
        value: utf8Of(typeof value === 'string' ? value : JSON.stringify(value), line, `entry ${i + 1}'s value`),
      }
    }
  }
}

function lineAt(content: string, offset: number): number {
  return content.slice(0, offset).split('\n').length
}

/** Where JSON.parse names no position: the line of the first top-level element that is not JSON on its own. */
function firstUnparsable(content: string): number | null {
  for (const e of topLevelElements(content)) {
    try {
      JSON.parse(content.slice(e.start, e.end))
    } catch {
      return e.line
    }
  }
  return null
}

/**
 * The spans of a JSON array's top-level elements with the line each starts on, found by brackets
 * and strings alone (so also in text that is not valid JSON), in one pass.
 */
function topLevelElements(content: string): Array<{ start: number; end: number; line: number }> {
  const spans: Array<{ start: number; end: number; line: number }> = []
  let depth = 0
  let inString = false
  let start = -1
  let line = 1
  let startLine = 1
  for (let i = 0; i < content.length; i++) {
    const c = content[i]
    if (c === '\n') line++
    if (inString) {
      if (c === '\\') i++
      else if (c === '"') inString = false
      continue
    }
    if (c === ' ' || c === '\t' || c === '\r' || c === '\n') continue
    if (depth === 1 && (c === ',' || c === ']')) {
      if (start !== -1) spans.push({ start, end: i, line: startLine })
      start = -1
    } else if (depth === 1 && start === -1) {
      start = i
      startLine = line
    }
    if (c === '"') inString = true
    else if (c === '[' || c === '{') depth++
    else if (c === ']' || c === '}') depth--
  }
  if (start !== -1) spans.push({ start, end: content.length, line: startLine })
  return spans
}

/**
 * Keys with their values as text, one key a record: what `aio-statestore export` writes, `import`
 * and the emulator's `--seed` read. Two formats:
 *
 * - NDJSON export records, one JSON object a line: `key` (UTF-8 text) or `keyBase64`, `value`
 *   (UTF-8 text) or `valueBase64` (any bytes), and what the store told of the key: `expiresAt`
 *   (wall-clock ms), `persist` (true), `version` (informational; a store mints its own).
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

/** The records of a file in either format (a JSON array is a statestore.json). */
export function parseKeyRecords(content: string): KeyRecord[] {
  const body = content.replace(/^\uFEFF/, '')
  return body.trimStart().startsWith('[') ? parseStatestoreJson(body) : parseExport(body)
}

function parseExport(content: string): KeyRecord[] {
  const records: KeyRecord[] = []
  content.split('\n').forEach((raw, i) => {
    const line = raw.trim()
    if (line === '') return
    let parsed: unknown
    try {
      parsed = JSON.parse(line)
    } catch (err) {
      throw new KeyRecordError(i + 1, `not JSON (${(err as Error).message})`)
    }
    records.push(exportRecord(parsed, i + 1))
  })
  return records
}

function exportRecord(parsed: unknown, line: number): KeyRecord {
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new KeyRecordError(line, 'a record is a JSON object with key and value')
  const r = parsed as Record<string, unknown>
  const key = bytes(r, 'key', line)
  if (key.length === 0) throw new KeyRecordError(line, 'the key is empty')
  const record: KeyRecord = { key, value: bytes(r, 'value', line) }
  if (r.expiresAt !== undefined && r.expiresAt !== null) {
    if (typeof r.expiresAt !== 'number' || !Number.isSafeInteger(r.expiresAt) || r.expiresAt <= 0)
      throw new KeyRecordError(line, 'expiresAt is wall-clock milliseconds, a whole number')
    record.expiresAt = r.expiresAt
  }
  if (r.persist !== undefined && typeof r.persist !== 'boolean') throw new KeyRecordError(line, 'persist is true or false')
  if (r.persist === true) record.persist = true
  if (typeof r.version === 'string') record.version = r.version
  return record
}

function bytes(r: Record<string, unknown>, name: 'key' | 'value', line: number): Buffer {
  const plain = r[name]
  const encoded = r[`${name}Base64`]
  if (plain !== undefined && encoded !== undefined) throw new KeyRecordError(line, `give ${name} or ${name}Base64, not both`)
  if (typeof plain === 'string') return Buffer.from(plain, 'utf8')
  if (typeof encoded === 'string' && /^[A-Za-z0-9+/]*={0,2}$/.test(encoded)) return Buffer.from(encoded, 'base64')
  if (encoded !== undefined) throw new KeyRecordError(line, `${name}Base64 is not base64`)
  throw new KeyRecordError(line, plain === undefined ? `no ${name} (or ${name}Base64)` : `${name} is text; bytes go in ${name}Base64`)
}

function parseStatestoreJson(content: string): KeyRecord[] {
  let parsed: unknown
  try {
    parsed = JSON.parse(content)
  } catch (err) {
    const message = (err as Error).message
    const at = /position (\d+)/.exec(message)
    throw new KeyRecordError(at ? lineAt(content, Number(at[1])) : (firstUnparsable(content) ?? 1), `not JSON (${message})`)
  }
  if (!Array.isArray(parsed)) throw new KeyRecordError(1, 'a statestore.json is an array of objects')
  const lines = topLevelElements(content).map((e) => lineAt(content, e.start))
  const records: KeyRecord[] = []
  parsed.forEach((entry: unknown, i) => {
    const line = lines[i] ?? 1
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) throw new KeyRecordError(line, `entry ${i + 1} is not an object of key → value`)
    for (const [key, value] of Object.entries(entry)) {
      if (key === '') throw new KeyRecordError(line, `entry ${i + 1} has an empty key`)
      records.push({ key: Buffer.from(key, 'utf8'), value: Buffer.from(typeof value === 'string' ? value : JSON.stringify(value), 'utf8') })
    }
  })
  return records
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
      return lineAt(content, e.start)
    }
  }
  return null
}

/** The spans of a JSON array's top-level elements, found by brackets and strings alone (so also in text that is not valid JSON). */
function topLevelElements(content: string): Array<{ start: number; end: number }> {
  const spans: Array<{ start: number; end: number }> = []
  let depth = 0
  let inString = false
  let start = -1
  for (let i = 0; i < content.length; i++) {
    const c = content[i]
    if (inString) {
      if (c === '\\') i++
      else if (c === '"') inString = false
      continue
    }
    if (c === ' ' || c === '\t' || c === '\r' || c === '\n') continue
    if (depth === 1 && (c === ',' || c === ']')) {
      if (start !== -1) spans.push({ start, end: i })
      start = -1
    } else if (depth === 1 && start === -1) start = i
    if (c === '"') inString = true
    else if (c === '[' || c === '{') depth++
    else if (c === ']' || c === '}') depth--
  }
  if (start !== -1) spans.push({ start, end: content.length })
  return spans
}

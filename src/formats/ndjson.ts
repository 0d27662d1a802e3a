/**
 * NDJSON, the format an Azure IoT Operations dataflow reads an enrichment dataset in: one JSON object
 * per line, UTF-8 (newline-delimited JSON, ndjson.org). A dataflow names the key; its runtime parses
 * the value line by line and uses the first record its condition matches. Written by hand: it is
 * JSON.stringify per line, and the NDJSON packages on npm are stream transforms for files.
 */

/** A value that is not a dataset, or bytes that are not NDJSON; `line` is 1-based where it applies. */
export class NdjsonError extends Error {
  override readonly name = 'NdjsonError'
  constructor(
    readonly reason: 'notAnArray' | 'notAnObject' | 'notJson',
    message: string,
    readonly line?: number,
  ) {
    super(message)
  }
}

/** An array of plain objects as NDJSON: one line each, every line ended by `\n`. */
export function encodeNdjson(records: unknown): Buffer {
  if (!Array.isArray(records))
    throw new NdjsonError('notAnArray', `a dataset is an array of objects, not ${describe(records)}`)
  let text = ''
  for (let i = 0; i < records.length; i++) {
    const record: unknown = records[i]
    if (!isRecord(record))
      throw new NdjsonError(
        'notAnObject',
        `record ${i + 1} of the dataset is ${describe(record)}, not an object`,
        i + 1,
      )
    // JSON.stringify escapes every newline inside strings, so a record is always one line.
    text += `${JSON.stringify(record)}\n`
  }
  return Buffer.from(text, 'utf8')
}

/** NDJSON bytes as an array of objects; blank lines (and a final newline) are skipped. */
export function decodeNdjson(bytes: Buffer): Array<Record<string, unknown>> {
  const records: Array<Record<string, unknown>> = []
  const lines = bytes.toString('utf8').split('\n')
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim()
    if (line === '') continue
    let record: unknown
    try {
      record = JSON.parse(line)
    } catch (err) {
      throw new NdjsonError('notJson', `line ${i + 1} is not JSON: ${(err as Error).message}`, i + 1)
    }
    if (!isRecord(record))
      throw new NdjsonError('notAnObject', `line ${i + 1} is ${describe(record)}, not a JSON object`, i + 1)
    records.push(record)
  }
  return records
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !Buffer.isBuffer(value)
}

function describe(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  if (Buffer.isBuffer(value)) return 'a Buffer'
  return `a ${typeof value}`
}

/**
 * The records of a key file read from a stream as it comes, so that memory holds a chunk and a line
 * whatever the file's size: an export file (NDJSON) a line at a time, with the same checks and the
 * same line numbers as `keyRecords`. A statestore.json is one JSON document (an array), read whole.
 */
import {
  checkDepth,
  exportLine,
  KeyRecordError,
  keyRecords,
  type KeyRecord,
  type KeyRecordOptions,
} from './key-records'

const utf8 = new TextDecoder('utf-8', { fatal: true })
const NEWLINE = 0x0a
const EMPTY = Buffer.alloc(0)

export async function* streamKeyRecords(
  source: AsyncIterable<Buffer | string>,
  options: KeyRecordOptions = {},
): AsyncGenerator<KeyRecord> {
  let format: 'export' | 'statestore.json' | undefined
  /** A statestore.json's bytes, kept until the end. */
  const whole: Buffer[] = []
  /** The bytes after the last newline seen: the start of the next line. */
  let rest: Buffer = EMPTY
  let line = 1
  for await (const piece of source) {
    let chunk = typeof piece === 'string' ? Buffer.from(piece, 'utf8') : piece
    if (format === undefined) {
      chunk = rest.length > 0 ? Buffer.concat([rest, chunk]) : chunk
      rest = EMPTY
      format = formatOf(chunk)
      if (format === undefined) {
        rest = chunk
        continue
      }
    }
    if (format === 'statestore.json') {
      whole.push(chunk)
      continue
    }
    let start = 0
    for (let newline = chunk.indexOf(NEWLINE); newline !== -1; newline = chunk.indexOf(NEWLINE, start)) {
      const bytes =
        rest.length > 0 ? Buffer.concat([rest, chunk.subarray(start, newline)]) : chunk.subarray(start, newline)
      rest = EMPTY
      const record = lineRecord(bytes, line++, options)
      if (record) yield record
      start = newline + 1
    }
    if (start < chunk.length)
      rest = rest.length > 0 ? Buffer.concat([rest, chunk.subarray(start)]) : Buffer.from(chunk.subarray(start))
  }
  if (format === 'statestore.json') {
    yield* keyRecords(Buffer.concat(whole))
    return
  }
  if (rest.length > 0) {
    const record = lineRecord(rest, line, options)
    if (record) yield record
  }
}

/**
 * Which format the file's first bytes make it (a JSON array is a statestore.json); undefined while there is only a BOM
 * and blank space.
 */
function formatOf(head: Buffer): 'export' | 'statestore.json' | undefined {
  let i = head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf ? 3 : 0
  while (i < head.length && (head[i] === 0x20 || head[i] === 0x09 || head[i] === 0x0d || head[i] === NEWLINE)) i++
  if (i === head.length) return undefined
  return head[i] === 0x5b /* [ */ ? 'statestore.json' : 'export'
}

function lineRecord(bytes: Buffer, line: number, options: KeyRecordOptions): KeyRecord | null {
  let text: string
  try {
    text = utf8.decode(bytes)
  } catch {
    throw new KeyRecordError(line, 'the line is not UTF-8 (bytes that are not text go in keyBase64 or valueBase64)')
  }
  if (line === 1) text = text.replace(/^\uFEFF/, '')
  checkDepth(text, line)
  return exportLine(text, line, options)
}

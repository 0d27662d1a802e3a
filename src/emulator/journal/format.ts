import * as zlib from 'node:zlib'
import { Hlc } from '../../hlc'
import type { StoredRecord } from '../core/keyspace'

/**
 * The on-disk record format of the persistence log (the durability engine is journal.ts).
 *
 * File: an 8-byte magic, then records `[u32 body length][u32 CRC-32 of body][body]`, little endian.
 * Body: `u8 type` then, for SET (1), `u32 key length, key, u32 value length, value, u16 version
 * length, version, u16 fencing-token length (0 = none), token, f64 expiry deadline (0 = none)`;
 * for DEL (2), `u32 key length, key`; for KEYNOTIFY (3) and KEYNOTIFY STOP (4), `u32 client id length,
 * client id (UTF-8), u32 key length, key`; for a client's disconnect (5), `u32 client id length,
 * client id`. Registrations are kept so that a restart behind an external broker does not silence
 * the watches of clients that stayed connected to it. A record cut short by a crash, or failing its
 * CRC, ends the log: it and anything after it are dropped on the next start.
 *
 * Version 1 files (SET and DEL only) are read as they are; opening one rewrites its magic to
 * version 2 first, so that the previous emulator refuses the file instead of taking the first
 * registration record for a torn tail and cutting off everything after it.
 */

export const MAGIC = Buffer.from('AIOSS\u0003\r\n', 'latin1')
/**
 * Older files, read as they are; opening one rewrites its magic first, so an older emulator refuses the file rather
 * than cut it at a record it does not know.
 */
export const OLDER_MAGICS = [Buffer.from('AIOSS\u0001\r\n', 'latin1'), Buffer.from('AIOSS\u0002\r\n', 'latin1')]
const HEADER = 8
const SET = 1
const DEL = 2
const KEYNOTIFY = 3
const KEYNOTIFY_STOP = 4
const DROP_CLIENT = 5
const ANSWER = 6

export interface ReplayedSet {
  type: 'set'
  key: Buffer
  record: StoredRecord
}
export interface ReplayedDelete {
  type: 'delete'
  key: Buffer
}
export interface ReplayedKeyNotify {
  type: 'keynotify' | 'keynotifyStop'
  clientId: string
  key: Buffer
}
export interface ReplayedDropClient {
  type: 'dropClient'
  clientId: string
}
/**
 * The answer to a request that changed something persistent, so a re-send after a restart is answered from it, not
 * executed again.
 */
export interface ReplayedAnswer {
  type: 'answer'
  id: string
  /** RequestPrint.serialize() */
  request: string
  expiresAt: number
  payload: Buffer
  timestamp: string | undefined
}
export type Replayed = ReplayedSet | ReplayedDelete | ReplayedKeyNotify | ReplayedDropClient | ReplayedAnswer

export interface ReplayResult {
  records: Replayed[]
  /** Bytes dropped at the end: a torn or corrupt record and whatever followed it. */
  discardedBytes: number
  /** Where the discarded bytes began, if any were. */
  discardedAt: number
}

const crc32: (data: Buffer) => number = (zlib as { crc32?: (data: Buffer) => number }).crc32 ?? crc32Fallback

export function encodeSet(key: Buffer, record: StoredRecord): Buffer {
  const version = Buffer.from(record.version.toString(), 'utf8')
  const token = record.fencingToken ? Buffer.from(record.fencingToken.toString(), 'utf8') : Buffer.alloc(0)
  const bodyLength = 1 + 4 + key.length + 4 + record.value.length + 2 + version.length + 2 + token.length + 8
  const out = Buffer.allocUnsafe(HEADER + bodyLength)
  let at = HEADER
  at = out.writeUInt8(SET, at)
  at = out.writeUInt32LE(key.length, at)
  at += key.copy(out, at)
  at = out.writeUInt32LE(record.value.length, at)
  at += record.value.copy(out, at)
  at = out.writeUInt16LE(version.length, at)
  at += version.copy(out, at)
  at = out.writeUInt16LE(token.length, at)
  at += token.copy(out, at)
  out.writeDoubleLE(record.expiresAt, at)
  return seal(out)
}

export function encodeDelete(key: Buffer): Buffer {
  const out = Buffer.allocUnsafe(HEADER + 1 + 4 + key.length)
  let at = out.writeUInt8(DEL, HEADER)
  at = out.writeUInt32LE(key.length, at)
  key.copy(out, at)
  return seal(out)
}

export function encodeKeyNotify(clientId: string, key: Buffer, stop: boolean): Buffer {
  const id = Buffer.from(clientId, 'utf8')
  const out = Buffer.allocUnsafe(HEADER + 1 + 4 + id.length + 4 + key.length)
  let at = out.writeUInt8(stop ? KEYNOTIFY_STOP : KEYNOTIFY, HEADER)
  at = out.writeUInt32LE(id.length, at)
  at += id.copy(out, at)
  at = out.writeUInt32LE(key.length, at)
  key.copy(out, at)
  return seal(out)
}

export function encodeDropClient(clientId: string): Buffer {
  const id = Buffer.from(clientId, 'utf8')
  const out = Buffer.allocUnsafe(HEADER + 1 + 4 + id.length)
  let at = out.writeUInt8(DROP_CLIENT, HEADER)
  at = out.writeUInt32LE(id.length, at)
  id.copy(out, at)
  return seal(out)
}

/**
 * `u32 id length, id (latin1), u32 request length, request (utf8), f64 expiry, u32 payload length, payload, u16 __ts
 * length (0 = none), __ts`.
 */
export function encodeAnswer(a: Omit<ReplayedAnswer, 'type'>): Buffer {
  const id = Buffer.from(a.id, 'latin1')
  const request = Buffer.from(a.request, 'utf8')
  const ts = Buffer.from(a.timestamp ?? '', 'utf8')
  const out = Buffer.allocUnsafe(
    HEADER + 1 + 4 + id.length + 4 + request.length + 8 + 4 + a.payload.length + 2 + ts.length,
  )
  let at = out.writeUInt8(ANSWER, HEADER)
  at = out.writeUInt32LE(id.length, at)
  at += id.copy(out, at)
  at = out.writeUInt32LE(request.length, at)
  at += request.copy(out, at)
  at = out.writeDoubleLE(a.expiresAt, at)
  at = out.writeUInt32LE(a.payload.length, at)
  at += a.payload.copy(out, at)
  at = out.writeUInt16LE(ts.length, at)
  ts.copy(out, at)
  return seal(out)
}

function seal(out: Buffer): Buffer {
  const body = out.subarray(HEADER)
  out.writeUInt32LE(body.length, 0)
  out.writeUInt32LE(crc32(body), 4)
  return out
}

/** Decodes every intact record after the magic; stops at the first torn or corrupt one. */
export function decodeLog(data: Buffer): ReplayResult {
  const records: Replayed[] = []
  let at = MAGIC.length
  while (at < data.length) {
    const record = at + HEADER <= data.length ? decodeRecord(data, at) : null
    if (!record) return { records, discardedBytes: data.length - at, discardedAt: at }
    records.push(record.value)
    at = record.next
  }
  return { records, discardedBytes: 0, discardedAt: 0 }
}

function decodeRecord(data: Buffer, at: number): { value: Replayed; next: number } | null {
  const length = data.readUInt32LE(at)
  const end = at + HEADER + length
  if (length === 0 || end > data.length) return null
  const body = data.subarray(at + HEADER, end)
  if (crc32(body) !== data.readUInt32LE(at + 4)) return null
  try {
    const r = new BodyReader(body)
    const type = r.u8()
    if (type === ANSWER) {
      const id = r.bytes(r.u32()).toString('latin1')
      const request = r.bytes(r.u32()).toString('utf8')
      const expiresAt = r.f64()
      const payload = Buffer.from(r.bytes(r.u32()))
      const ts = r.bytes(r.u16()).toString('utf8')
      return r.done()
        ? {
            value: { type: 'answer', id, request, expiresAt, payload, timestamp: ts === '' ? undefined : ts },
            next: end,
          }
        : null
    }
    if (type === KEYNOTIFY || type === KEYNOTIFY_STOP || type === DROP_CLIENT) {
      const clientId = r.bytes(r.u32()).toString('utf8')
      if (type === DROP_CLIENT) return r.done() ? { value: { type: 'dropClient', clientId }, next: end } : null
      const key = Buffer.from(r.bytes(r.u32()))
      return r.done()
        ? { value: { type: type === KEYNOTIFY ? 'keynotify' : 'keynotifyStop', clientId, key }, next: end }
        : null
    }
    const key = Buffer.from(r.bytes(r.u32()))
    if (type === DEL) return r.done() ? { value: { type: 'delete', key }, next: end } : null
    if (type !== SET) return null
    const value = Buffer.from(r.bytes(r.u32()))
    const version = Hlc.parse(r.bytes(r.u16()).toString('utf8'))
    const tokenBytes = r.bytes(r.u16())
    const fencingToken = tokenBytes.length > 0 ? Hlc.parse(tokenBytes.toString('utf8')) : null
    const expiresAt = r.f64()
    if (!r.done()) return null
    return {
      value: { type: 'set', key, record: { value, version, fencingToken, expiresAt, persisted: true } },
      next: end,
    }
  } catch {
    return null
  }
}

class BodyReader {
  private at = 0
  constructor(private readonly body: Buffer) {}
  u8(): number {
    return this.body.readUInt8(this.take(1))
  }
  u16(): number {
    return this.body.readUInt16LE(this.take(2))
  }
  u32(): number {
    return this.body.readUInt32LE(this.take(4))
  }
  f64(): number {
    return this.body.readDoubleLE(this.take(8))
  }
  bytes(n: number): Buffer {
    const start = this.take(n)
    return this.body.subarray(start, start + n)
  }
  done(): boolean {
    return this.at === this.body.length
  }
  private take(n: number): number {
    if (this.at + n > this.body.length) throw new RangeError('record body too short')
    const start = this.at
    this.at += n
    return start
  }
}

let table: Int32Array | null = null
function crc32Fallback(data: Buffer): number {
  if (!table) {
    table = new Int32Array(256)
    for (let n = 0; n < 256; n++) {
      let c = n
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
      table[n] = c
    }
  }
  let crc = -1
  for (let i = 0; i < data.length; i++) crc = table[(crc ^ data[i]!) & 0xff]! ^ (crc >>> 8)
  return (crc ^ -1) >>> 0
}

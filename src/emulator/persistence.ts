import { closeSync, existsSync, openSync, fsyncSync, readFileSync, writeSync, ftruncateSync } from 'node:fs'
import { open, rename, type FileHandle } from 'node:fs/promises'
import { dirname } from 'node:path'
import * as zlib from 'node:zlib'
import { Hlc } from '../hlc'
import type { StoreChange, StoredRecord } from './store'

/**
 * The append-only log of persistent keys (SETs that carried `aio-persistence=true`).
 *
 * File: an 8-byte magic, then records `[u32 body length][u32 CRC-32 of body][body]`, little endian.
 * Body: `u8 type` then, for SET (1), `u32 key length, key, u32 value length, value, u16 version
 * length, version, u16 fencing-token length (0 = none), token, f64 expiry deadline (0 = none)`;
 * for DEL (2), `u32 key length, key`; for KEYNOTIFY (3) and KEYNOTIFY STOP (4), `u32 client id length,
 * client id (UTF-8), u32 key length, key`; for a client's disconnect (5), `u32 client id length,
 * client id`. Registrations are kept so that a restart behind an external broker does not silence
 * the watches of clients that stayed connected to it. A record is durable (written and fdatasync'd) before the
 * request it belongs to is answered; the records of concurrent requests share one sync. A record
 * cut short by a crash, or failing its CRC, ends the log: it and anything after it are dropped on
 * the next start. The log is rewritten as a snapshot of the live persistent keys when it has
 * doubled since the last rewrite, as Redis rewrites its AOF.
 *
 * Version 1 files (SET and DEL only) are read as they are; opening one rewrites its magic to
 * version 2 first, so that the previous emulator refuses the file instead of taking the first
 * registration record for a torn tail and cutting off everything after it.
 */

const MAGIC = Buffer.from('AIOSS\u0002\r\n', 'latin1')
const MAGIC_V1 = Buffer.from('AIOSS\u0001\r\n', 'latin1')
const HEADER = 8
const SET = 1
const DEL = 2
const KEYNOTIFY = 3
const KEYNOTIFY_STOP = 4
const DROP_CLIENT = 5
const DEFAULT_COMPACT_MIN_BYTES = 8 * 1024 * 1024

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
  type: 'keynotify' | 'keynotify-stop'
  clientId: string
  key: Buffer
}
export interface ReplayedDropClient {
  type: 'drop-client'
  clientId: string
}
export type Replayed = ReplayedSet | ReplayedDelete | ReplayedKeyNotify | ReplayedDropClient

export interface ReplayResult {
  records: Replayed[]
  /** Bytes dropped at the end: a torn or corrupt record and whatever followed it. */
  discardedBytes: number
  /** Where the discarded bytes began, if any were. */
  discardedAt: number
}

export interface PersistenceOptions {
  /** Rewrite only when the log has reached this size (and doubled since the last rewrite). */
  compactMinBytes?: number
  /** The live persistent records, for a rewrite; taken synchronously. */
  snapshot: () => Iterable<[Buffer, StoredRecord]>
  /** The live KEYNOTIFY registrations (client id, key), for a rewrite; taken synchronously. */
  registrations?: () => Iterable<[string, Buffer]>
  log?: (level: 'error' | 'warn' | 'info' | 'debug', message: string) => void
}

interface Waiter {
  seq: number
  resolve: () => void
  reject: (err: Error) => void
}

const crc32: (data: Buffer) => number = (zlib as { crc32?: (data: Buffer) => number }).crc32 ?? crc32Fallback

export class PersistenceLog {
  private fh: FileHandle | null = null
  private pending: Buffer[] = []
  private appended = 0
  private durable = 0
  private waiters: Waiter[] = []
  private flushing: Promise<void> | null = null
  private size = 0
  private baseSize = 0
  private failed: Error | null = null
  private readonly compactMinBytes: number

  private constructor(
    readonly path: string,
    private readonly options: PersistenceOptions,
  ) {
    this.compactMinBytes = options.compactMinBytes ?? DEFAULT_COMPACT_MIN_BYTES
  }

  /**
   * Reads the log (creating it if absent), drops a torn tail, and opens it for appending.
   * Throws if the file exists but is not a log of ours.
   */
  static async open(path: string, options: PersistenceOptions): Promise<{ log: PersistenceLog; replay: ReplayResult }> {
    const log = new PersistenceLog(path, options)
    let replay: ReplayResult = { records: [], discardedBytes: 0, discardedAt: 0 }
    if (!existsSync(path) || readFileSync(path).length === 0) {
      const fd = openSync(path, 'w')
      try {
        writeSync(fd, MAGIC)
        fsyncSync(fd)
      } finally {
        closeSync(fd)
      }
      fsyncDir(path)
      log.size = MAGIC.length
    } else {
      const data = readFileSync(path)
      const magic = data.subarray(0, MAGIC.length)
      if (data.length < MAGIC.length || !(magic.equals(MAGIC) || magic.equals(MAGIC_V1))) {
        throw new Error(`${path} is not a state store emulator persistence file; refusing to overwrite it`)
      }
      replay = decodeLog(data)
      if (replay.discardedBytes > 0 || !magic.equals(MAGIC)) {
        const fd = openSync(path, 'r+')
        try {
          if (replay.discardedBytes > 0) ftruncateSync(fd, replay.discardedAt)
          writeSync(fd, MAGIC, 0, MAGIC.length, 0)
          fsyncSync(fd)
        } finally {
          closeSync(fd)
        }
      }
      log.size = data.length - replay.discardedBytes
    }
    log.baseSize = log.size
    log.fh = await open(path, 'a')
    return { log, replay }
  }

  /** How many records have been appended so far; a request waits for `whenDurable` of this number. */
  get appendedSeq(): number {
    return this.appended
  }

  /** Records what a store change means for the log; no-op for changes to keys that are not persistent. */
  record(change: StoreChange): void {
    if (change.kind === 'set') {
      if (change.record.persisted) this.append(encodeSet(change.key, change.record))
      else if (change.wasPersisted) this.append(encodeDelete(change.key))
    } else if (change.wasPersisted) {
      this.append(encodeDelete(change.key))
    }
  }

  /** Records a KEYNOTIFY registration, or its end by KEYNOTIFY STOP. */
  recordKeyNotify(clientId: string, key: Buffer, stop: boolean): void {
    this.append(encodeKeyNotify(clientId, key, stop))
  }

  /** Records that a client disconnected, which ends all its registrations. */
  recordDropClient(clientId: string): void {
    this.append(encodeDropClient(clientId))
  }

  /** Resolves once every record up to `seq` is on disk. */
  whenDurable(seq: number): Promise<void> {
    if (this.failed) return Promise.reject(this.failed)
    if (seq <= this.durable) return Promise.resolve()
    return new Promise((resolve, reject) => this.waiters.push({ seq, resolve, reject }))
  }

  /** Writes and syncs what is pending, then closes the file. */
  async close(): Promise<void> {
    while (this.flushing) await this.flushing
    const fh = this.fh
    this.fh = null
    await fh?.close()
    this.failWaiters(new Error('the persistence log is closed'))
  }

  private append(record: Buffer): void {
    this.appended++
    // After a write failure nothing is queued: whoever waits for this record is refused at once.
    if (this.failed) return
    this.pending.push(record)
    // Deferred by one turn so that the records of requests arriving together share one write and one sync.
    if (!this.flushing) this.flushing = new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.flushLoop())
  }

  private async flushLoop(): Promise<void> {
    try {
      while (this.pending.length > 0 && this.fh && !this.failed) {
        if (this.size >= Math.max(this.compactMinBytes, 2 * this.baseSize)) await this.compact()
        const batch = this.pending
        const seq = this.appended
        this.pending = []
        await writeAll(this.fh, batch)
        await this.fh.datasync()
        for (const b of batch) this.size += b.length
        this.markDurable(seq)
      }
    } catch (err) {
      this.failed = err instanceof Error ? err : new Error(String(err))
      this.options.log?.('error', `persistence: writing ${this.path} failed, persistent requests are no longer answered: ${this.failed.message}`)
      this.failWaiters(this.failed)
    } finally {
      this.flushing = null
    }
  }

  private markDurable(seq: number): void {
    this.durable = seq
    const still: Waiter[] = []
    for (const w of this.waiters) {
      if (w.seq <= seq) w.resolve()
      else still.push(w)
    }
    this.waiters = still
  }

  private failWaiters(err: Error): void {
    const waiters = this.waiters
    this.waiters = []
    for (const w of waiters) w.reject(err)
  }

  /**
   * Replaces the log with a snapshot of the live persistent keys and registrations. Records still
   * pending were already applied in memory, so the snapshot includes them; writing them after it
   * again is harmless because every record sets what it concerns (a key, a registration, all of a
   * client's registrations) to one state, whatever it was before.
   */
  private async compact(): Promise<void> {
    const before = this.size
    const chunks: Buffer[] = [MAGIC]
    let size = MAGIC.length
    for (const [key, record] of this.options.snapshot()) {
      if (!record.persisted) continue
      const b = encodeSet(key, record)
      chunks.push(b)
      size += b.length
    }
    for (const [clientId, key] of this.options.registrations?.() ?? []) {
      const b = encodeKeyNotify(clientId, key, false)
      chunks.push(b)
      size += b.length
    }
    const tmp = `${this.path}.compact`
    const out = await open(tmp, 'w')
    try {
      await writeAll(out, chunks)
      await out.datasync()
    } finally {
      await out.close()
    }
    await rename(tmp, this.path)
    fsyncDir(this.path)
    await this.fh?.close()
    this.fh = await open(this.path, 'a')
    this.size = size
    this.baseSize = size
    this.options.log?.('info', `persistence: compacted ${this.path} from ${before} to ${size} bytes`)
  }
}

async function writeAll(fh: FileHandle, buffers: Buffer[]): Promise<void> {
  let rest = buffers
  let total = rest.reduce((n, b) => n + b.length, 0)
  while (total > 0) {
    // writev takes at most IOV_MAX buffers; big batches go in slices.
    const slice = rest.length > 512 ? rest.slice(0, 512) : rest
    const sliceBytes = slice === rest ? total : slice.reduce((n, b) => n + b.length, 0)
    const { bytesWritten } = await fh.writev(slice)
    if (bytesWritten < sliceBytes) {
      const remaining = Buffer.concat(slice).subarray(bytesWritten)
      rest = [remaining, ...rest.slice(slice.length)]
    } else {
      rest = rest.slice(slice.length)
    }
    total -= bytesWritten
  }
}

function fsyncDir(path: string): void {
  try {
    const fd = openSync(dirname(path), 'r')
    try {
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
  } catch {
    // Some platforms cannot sync a directory; the file itself is synced either way.
  }
}

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
    if (type === KEYNOTIFY || type === KEYNOTIFY_STOP || type === DROP_CLIENT) {
      const clientId = r.bytes(r.u32()).toString('utf8')
      if (type === DROP_CLIENT) return r.done() ? { value: { type: 'drop-client', clientId }, next: end } : null
      const key = Buffer.from(r.bytes(r.u32()))
      return r.done() ? { value: { type: type === KEYNOTIFY ? 'keynotify' : 'keynotify-stop', clientId, key }, next: end } : null
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
    return { value: { type: 'set', key, record: { value, version, fencingToken, expiresAt, persisted: true } }, next: end }
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

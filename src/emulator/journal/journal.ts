import { closeSync, existsSync, openSync, fsyncSync, readFileSync, writeSync, ftruncateSync } from 'node:fs'
import { open, rename, type FileHandle } from 'node:fs/promises'
import { dirname } from 'node:path'
import type { Logger } from '../../diagnostics/log'
import {
  decodeLog,
  encodeAnswer,
  encodeDelete,
  encodeDropClient,
  encodeKeyNotify,
  encodeSet,
  MAGIC,
  OLDER_MAGICS,
  type ReplayedAnswer,
  type ReplayResult,
} from './format'
import type { RegistrationChange } from '../core/registrations'
import type { KeyChange, StoredRecord } from '../core/keyspace'

/**
 * The durability engine of the append-only log of persistent keys (SETs that carried
 * `aio-persistence=true`) and KEYNOTIFY registrations; format.ts holds the record format. A
 * record is durable (written and fdatasync'd) before the request it belongs to is answered; the
 * records of concurrent requests share one sync. The log is rewritten as a snapshot of the live
 * persistent keys when it has doubled since the last rewrite, as Redis rewrites its AOF.
 */

const DEFAULT_COMPACT_MIN_BYTES = 8 * 1024 * 1024

export interface JournalOptions {
  /** Rewrite only when the log has reached this size (and doubled since the last rewrite). */
  compactMinBytes?: number
  /** The live persistent records, for a rewrite; taken synchronously. */
  snapshot: () => Iterable<[Buffer, StoredRecord]>
  /** The live KEYNOTIFY registrations (client id, key), for a rewrite; taken synchronously. */
  registrations?: () => Iterable<[string, Buffer]>
  log?: Logger
}

interface Waiter {
  seq: number
  resolve: () => void
  reject: (err: Error) => void
}

export class Journal {
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
    private readonly options: JournalOptions,
  ) {
    this.compactMinBytes = options.compactMinBytes ?? DEFAULT_COMPACT_MIN_BYTES
  }

  /**
   * Reads the log (creating it if absent), drops a torn tail, and opens it for appending.
   * Throws if the file exists but is not a log of ours.
   */
  static async open(path: string, options: JournalOptions): Promise<{ journal: Journal; replay: ReplayResult }> {
    const journal = new Journal(path, options)
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
      journal.size = MAGIC.length
    } else {
      const data = readFileSync(path)
      const magic = data.subarray(0, MAGIC.length)
      if (data.length < MAGIC.length || !(magic.equals(MAGIC) || OLDER_MAGICS.some((m) => magic.equals(m)))) {
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
      journal.size = data.length - replay.discardedBytes
    }
    journal.baseSize = journal.size
    journal.fh = await open(path, 'a')
    return { journal, replay }
  }

  /** How many records have been appended so far; a request waits for `whenDurable` of this number. */
  get appendedSeq(): number {
    return this.appended
  }

  /**
   * The answer to a request that changed something persistent, appended with its change: the duplicate window outlives
   * a restart.
   */
  recordAnswer(answer: Omit<ReplayedAnswer, 'type'>): void {
    this.append(encodeAnswer(answer))
  }

  /** How many records are written and synced. */
  get durableSeq(): number {
    return this.durable
  }

  /**
   * Records what a change of the service's state means for the log: the one place the log is
   * written from while serving. A change to a key that is not persistent writes nothing; a
   * KEYNOTIFY is recorded even when already registered, as the earlier record may not be on disk yet.
   */
  record(change: KeyChange | RegistrationChange): void {
    switch (change.kind) {
      case 'set':
        if (change.record.persisted) this.append(encodeSet(change.key, change.record))
        else if (change.wasPersisted) this.append(encodeDelete(change.key))
        break
      case 'delete':
        if (change.wasPersisted) this.append(encodeDelete(change.key))
        break
      case 'keynotify':
        this.append(encodeKeyNotify(change.clientId, change.key, change.stop))
        break
      case 'dropClient':
        this.append(encodeDropClient(change.clientId))
        break
    }
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
    if (!this.flushing)
      this.flushing = new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.flushLoop())
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
      this.options.log?.(
        'error',
        `persistence: writing ${this.path} failed, persistent requests are no longer answered: ${this.failed.message}`,
      )
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

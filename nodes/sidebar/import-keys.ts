import { once, setMaxListeners } from 'node:events'
import { createReadStream, createWriteStream } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { StateStoreClient } from '../../src/client'
import { streamKeyRecords } from '../../src/formats/key-record-stream'
import { ExportCutError, KeyRecordError, type KeyRecord } from '../../src/formats/key-records'
import { settleStream, type StreamBound } from '../../src/lang/bounded'

/** SETs in flight at once, and at most this many bytes of keys and values: memory does not grow with the file. */
const BOUND: StreamBound<KeyRecord> = {
  count: 64,
  maxWeight: 4 * 2 ** 20,
  weight: (r) => r.key.length + r.value.length,
}

export interface ImportLimits {
  maxKeys: number
  maxBytes: number
}

/** The file holds more keys, or more bytes, than one import from the sidebar takes: `limit` says which. */
export class ImportTooLarge extends Error {
  constructor(readonly limit: 'keys' | 'bytes') {
    super(`the import is over its ${limit} limit`)
  }
}

/** A line of the file is no key record: nothing was written. */
export class ImportBadLine extends Error {
  constructor(
    readonly line: number,
    readonly reason: string,
  ) {
    super(`line ${line}: ${reason}`)
  }
}

/** The file is an export cut at a limit: it holds `written` of the `total` keys asked for; nothing was written. */
export class ImportCut extends Error {
  constructor(
    readonly line: number,
    readonly written: number,
    readonly total: number,
  ) {
    super(`line ${line}: a cut export, ${written} of ${total} keys`)
  }
}

/** A file read and checked whole, kept on disk for the writing pass. */
export interface CheckedImport {
  records: number
  write(client: StateStoreClient, signal: AbortSignal): Promise<ImportOutcome>
  cleanup(): Promise<void>
}

export interface ImportOutcome {
  imported: number
  expired: number
  failed: number
  /** The first failed key and the store's or client's message. */
  firstFailure: { key: string; detail: string } | null
}

/**
 * The first pass of an import from the sidebar: reads the uploaded file (an `aio-statestore export`
 * or a statestore.json) as it comes, copying it to a temporary file and checking every record, within
 * the limits; a bad line fails ImportBadLine before anything is written, a cut export's cut line ImportCut.
 */
export async function checkImport(
  source: AsyncIterable<Buffer | string>,
  limits: ImportLimits,
  signal: AbortSignal,
): Promise<CheckedImport> {
  const dir = await mkdtemp(join(tmpdir(), 'aio-statestore-sidebar-import-'))
  const path = join(dir, 'upload')
  const cleanup = () => rm(dir, { recursive: true, force: true })
  const spool = createWriteStream(path)
  let records = 0
  let bytes = 0
  async function* copied(): AsyncGenerator<Buffer> {
    for await (const piece of source) {
      signal.throwIfAborted()
      const chunk = typeof piece === 'string' ? Buffer.from(piece, 'utf8') : piece
      bytes += chunk.length
      if (bytes > limits.maxBytes) throw new ImportTooLarge('bytes')
      if (!spool.write(chunk)) await once(spool, 'drain', { signal })
      yield chunk
    }
  }
  try {
    try {
      for await (const _record of streamKeyRecords(copied()))
        if (++records > limits.maxKeys) throw new ImportTooLarge('keys')
    } finally {
      await new Promise((resolve) => spool.end(resolve))
    }
  } catch (err) {
    await cleanup()
    if (err instanceof ExportCutError) throw new ImportCut(err.line, err.cut.written, err.cut.total)
    if (err instanceof KeyRecordError) throw new ImportBadLine(err.line, err.reason)
    throw err
  }
  return { records, write: (client, s) => writeChecked(client, path, s), cleanup }
}

/** A file checked whole, then written (each key its own SET); its temporary copy removed either way. */
export async function importFile(
  source: AsyncIterable<Buffer | string>,
  client: StateStoreClient,
  limits: ImportLimits,
  signal: AbortSignal,
): Promise<ImportOutcome> {
  const checked = await checkImport(source, limits, signal)
  try {
    return await checked.write(client, signal)
  } finally {
    await checked.cleanup()
  }
}

/** The second pass: each record not yet expired is its own SET, with the time it has left and its persist flag. */
async function writeChecked(client: StateStoreClient, path: string, signal: AbortSignal): Promise<ImportOutcome> {
  setMaxListeners(BOUND.count + 1, signal)
  const now = Date.now()
  const outcome: ImportOutcome = { imported: 0, expired: 0, failed: 0, firstFailure: null }
  async function* live(): AsyncGenerator<KeyRecord> {
    for await (const r of streamKeyRecords(createReadStream(path))) {
      if (r.expiresAt !== undefined && r.expiresAt <= now) outcome.expired++
      else yield r
    }
  }
  await settleStream(
    live(),
    BOUND,
    async (r) => {
      const expiryMs = r.expiresAt === undefined ? undefined : Math.max(1, r.expiresAt - Date.now())
      await client.set(r.key, r.value, {
        persist: r.persist === true,
        signal,
        ...(expiryMs !== undefined ? { expiryMs } : {}),
      })
    },
    (r, o) => {
      if (o.ok) return void outcome.imported++
      outcome.failed++
      outcome.firstFailure ??= {
        key: r.key.toString('utf8'),
        detail: o.error instanceof Error ? o.error.message : String(o.error),
      }
    },
  )
  return outcome
}

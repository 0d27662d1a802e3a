import { once, setMaxListeners } from 'node:events'
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { settleEach, settleStream, type StreamBound } from '../../lang/bounded'
import { ConnectionError, StateStoreError } from '../../diagnostics/errors'
import { streamKeyRecords } from '../../formats/key-record-stream'
import {
  ExportCutError,
  KeyRecordError,
  type ExportCut,
  type KeyRecord,
  type KeyRecordOptions,
} from '../../formats/key-records'
import type { Command, CommandContext } from '../command'
import { Exit, UsageError } from '../exit'
import { Progress } from './progress'

/** Read-backs kept in flight at once. */
const IN_FLIGHT = 16

/**
 * The SETs kept in flight at once: enough to keep the broker and the store busy (a window of 256 is
 * where the throughput benchmark levels off), and at most 8 MiB of keys and values, so memory does
 * not grow with the file or its values.
 */
const BOUND: StreamBound<KeyRecord> = {
  count: 256,
  maxWeight: 8 * 2 ** 20,
  weight: (r) => r.key.length + r.value.length,
}

export const importKeys: Command = {
  name: 'import',
  summary: 'write the keys of an export file or a statestore.json into the store',
  usage: [
    'aio-statestore import FILE',
    '',
    'Writes every key of FILE (- for stdin): an aio-statestore export (NDJSON) or the statestore.json of the',
    'WASM graph development environment ([{"key": value}, ...]). Keys that exist are overwritten unless --nx',
    'is given. A record with expiresAt gets the time it has left (one already past is skipped); persist',
    'asks the broker to keep the key (aio-persistence). Each key is its own SET: nothing is atomic across',
    'keys. The whole file is read and checked first, as a stream (stdin is kept in a temporary file): a',
    'bad line stops the import before anything is written, naming the file and the line. The keys are',
    'then written as the file is read again, at most 256 SETs (8 MiB) at once, so memory does not grow',
    'with an export file (a statestore.json, one JSON document, is read whole). A key whose write has no',
    'known outcome (its answer was lost with the connection) is read back once the others are written,',
    'and counted as written or not by what the store holds. Progress on a terminal, a summary line on',
    'stderr; exit 3 if a write failed or its outcome could not be read back. An export that stopped at a',
    "limit (the sidebar's) ends in an exportCut line: such a file is refused (exit 2, naming the file and the",
    'line, the keys it holds and the keys asked for) unless --accept-cut is given.',
  ].join('\n'),
  flagsHelp: [
    '  --nx                    Only keys that do not exist (SET NX); the others are kept as they are.',
    '  --dry-run               Read and check the file, say what would be written, write nothing.',
    '  --accept-cut            Import an export cut at a limit (its keys only), saying how many of how many.',
  ].join('\n'),
  flags: { nx: { type: 'boolean' }, 'dry-run': { type: 'boolean' }, 'accept-cut': { type: 'boolean' } },
  positionals: [1, 1],
  async run(ctx) {
    const file = ctx.args[0]!
    const nx = ctx.values.nx === true
    const now = Date.now()
    const isLive = (r: KeyRecord) => r.expiresAt === undefined || r.expiresAt > now
    // The first pass reads and checks every line, keeping none; stdin is kept in a file for the second.
    const source = await checkedSource(ctx, file, isLive, ctx.values['accept-cut'] === true)
    // Every request in flight listens for the command's cancel (Ctrl-C) on the one signal.
    setMaxListeners(BOUND.count + IN_FLIGHT, ctx.signal)
    try {
      const progress = new Progress(ctx.io.stderr, ctx.values['dry-run'] ? 'would import' : 'imported')
      const expired = source.records - source.live
      let kept = 0
      let failed = 0
      let firstFailure = ''
      let settled = 0
      /** Writes whose answer was lost: read back at the end. */
      const unsure: Array<{ record: KeyRecord; error: unknown }> = []
      const fail = (r: KeyRecord, error: unknown, note = '') => {
        failed++
        firstFailure ||= `${JSON.stringify(r.key.toString('utf8'))}: ${(error as Error).message}${note}`
      }
      const live = liveRecords(source.path, isLive, source.options)
      if (ctx.values['dry-run']) {
        // With --nx, which keys exist decides what would be written.
        if (nx)
          await settleStream(
            live,
            BOUND,
            async (r) => (await ctx.client.get(r.key, { signal: ctx.signal })).value !== null,
            (_r, o) => {
              if (o.ok && o.value) kept++
            },
          )
        progress.count = source.live - kept
      } else {
        await settleStream(
          live,
          BOUND,
          (r) => writeRecord(ctx, r, nx),
          (r, o) => {
            if (!o.ok) {
              if (outcomeUnknown(o.error)) unsure.push({ record: r, error: o.error })
              else fail(r, o.error)
            } else if (o.value) progress.count++
            else kept++
            if (++settled % 500 === 0) void progress.show()
          },
        )
      }
      let confirmed = 0
      let undetermined = 0
      const readBack = await settleEach(unsure, IN_FLIGHT, ({ record }) =>
        ctx.client.get(record.key, { signal: ctx.signal }),
      )
      readBack.forEach((o, i) => {
        const { record, error } = unsure[i]!
        if (!o.ok) {
          undetermined++
          return fail(
            record,
            error,
            `; read back: ${(o.error as Error).message}, so whether it was written is not known`,
          )
        }
        const held = o.value.value
        if (held !== null && held.equals(record.value)) {
          confirmed++
          progress.count++
        } else if (nx && held !== null) kept++
        else fail(record, error, '; read back: not written')
      })
      const notes = [
        source.cut ? `cut export: ${source.cut.written} of ${source.cut.total} keys (${source.cut.reason} limit)` : '',
        kept ? `${kept} kept (they exist, --nx)` : '',
        expired ? `${expired} skipped (expired)` : '',
        confirmed ? `${confirmed} of them found written when read back after a lost answer` : '',
        failed ? `${failed} failed` : '',
        undetermined ? `${undetermined} of them not known (the read-back failed)` : '',
      ].filter(Boolean)
      await progress.done(`${progress.count} key(s) from ${file}${notes.length ? `; ${notes.join(', ')}` : ''}`)
      return failed
        ? { code: Exit.failed, message: `${failed} key(s) could not be written, first ${firstFailure}` }
        : { code: Exit.done }
    } finally {
      await source.cleanup()
    }
  },
}

/**
 * A SET that failed without an answer from the store (timed out, connection lost, an answer that
 * could not be read): it may have been applied. A refusal by the store, by the broker or by this
 * client (a bad argument, too many requests) was not.
 */
function outcomeUnknown(err: unknown): boolean {
  if (!(err instanceof StateStoreError)) return false
  if (err instanceof ConnectionError) return err.code === 'ConnectionLost' || err.code === 'NotConnected'
  return err.kind === 'timeout' || err.kind === 'protocol'
}

async function writeRecord(ctx: CommandContext, r: KeyRecord, nx: boolean): Promise<boolean> {
  const expiryMs = r.expiresAt === undefined ? undefined : Math.max(1, r.expiresAt - Date.now())
  const result = await ctx.client.set(r.key, r.value, {
    condition: nx ? 'NX' : 'always',
    persist: r.persist === true,
    signal: ctx.signal,
    ...(expiryMs !== undefined ? { expiryMs } : {}),
  })
  return result.applied
}

/** A file that was read and checked whole: where to read it again, its records and those not expired. */
interface CheckedSource {
  path: string
  records: number
  live: number
  /** What the file's cut line told, when --accept-cut let it be read. */
  cut: ExportCut | null
  options: KeyRecordOptions
  cleanup: () => Promise<void>
}

/**
 * Reads FILE (- for stdin) once, checking every record and keeping none of them: a bad line stops
 * the import here, before anything is written, naming the file and the line, and so does a cut line
 * unless `acceptCut`. Stdin is copied to a file of its own as it is read, for the second pass.
 */
async function checkedSource(
  ctx: CommandContext,
  file: string,
  isLive: (r: KeyRecord) => boolean,
  acceptCut: boolean,
): Promise<CheckedSource> {
  let cut: ExportCut | null = null
  const options: KeyRecordOptions = acceptCut ? { acceptCut: (c) => (cut = c) } : {}
  let path = file
  let spool: WriteStream | undefined
  let dir = ''
  const cleanup = async () => {
    if (dir) await rm(dir, { recursive: true, force: true })
  }
  if (file === '-') {
    dir = await mkdtemp(join(tmpdir(), 'aio-statestore-import-'))
    path = join(dir, 'stdin')
    spool = createWriteStream(path)
  }
  let records = 0
  let live = 0
  try {
    try {
      const bytes = spool ? copied(ctx.io.stdin, spool) : createReadStream(file)
      for await (const r of streamKeyRecords(bytes, options)) {
        records++
        if (isLive(r)) live++
      }
    } catch (err) {
      if (err instanceof ExportCutError)
        throw new UsageError(
          `${file}:${err.line}: ${err.reason} asked for; nothing was imported (--accept-cut imports it)`,
        )
      if (err instanceof KeyRecordError) throw new UsageError(`${file}:${err.line}: ${err.reason}`)
      if (err instanceof UsageError) throw err
      throw new UsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
    } finally {
      if (spool) await new Promise((resolve) => spool.end(resolve))
    }
  } catch (err) {
    await cleanup()
    throw err
  }
  return { path, records, live, cut, options, cleanup }
}

/** The stream's chunks, each written to `spool` (waiting for it to drain) before it is passed on. */
async function* copied(stream: Readable, spool: WriteStream): AsyncGenerator<Buffer> {
  for await (const piece of stream) {
    const chunk = Buffer.isBuffer(piece) ? piece : Buffer.from(piece as string)
    if (!spool.write(chunk)) await once(spool, 'drain')
    yield chunk
  }
}

/** The second pass: the checked file's records that are not expired, read as they are written. */
async function* liveRecords(
  path: string,
  isLive: (r: KeyRecord) => boolean,
  options: KeyRecordOptions,
): AsyncGenerator<KeyRecord> {
  for await (const r of streamKeyRecords(createReadStream(path), options)) if (isLive(r)) yield r
}

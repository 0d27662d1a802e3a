import { readFileSync } from 'node:fs'
import type { Readable } from 'node:stream'
import { settleEach } from '../../lang/bounded'
import { ConnectionError, StateStoreError } from '../../diagnostics/errors'
import { KeyRecordError, parseKeyRecords, type KeyRecord } from '../../formats/key-records'
import type { Command, CommandContext } from '../command'
import { Exit, UsageError } from '../exit'
import { Progress } from './progress'

/** SETs kept in flight at once. */
const IN_FLIGHT = 16

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
    'keys. The whole file is read and checked first: a bad line stops the import before anything is',
    'written, naming the file and the line. A key whose write has no known outcome (its answer was lost with',
    'the connection) is read back once the others are written, and counted as written or not by what the',
    'store holds. Progress on a terminal, a summary line on stderr; exit 3 if a write failed or its',
    'outcome could not be read back.',
  ].join('\n'),
  flagsHelp: [
    '  --nx                    Only keys that do not exist (SET NX); the others are kept as they are.',
    '  --dry-run               Read and check the file, say what would be written, write nothing.',
  ].join('\n'),
  flags: { nx: { type: 'boolean' }, 'dry-run': { type: 'boolean' } },
  positionals: [1, 1],
  async run(ctx) {
    const file = ctx.args[0]!
    const records = await readRecords(ctx, file)
    const nx = ctx.values.nx === true
    const now = Date.now()
    const live = records.filter((r) => r.expiresAt === undefined || r.expiresAt > now)
    const expired = records.length - live.length
    const progress = new Progress(ctx.io.stderr, ctx.values['dry-run'] ? 'would import' : 'imported')
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
    if (ctx.values['dry-run']) {
      // With --nx, which keys exist decides what would be written.
      const exists = nx ? await settleEach(live, IN_FLIGHT, async (r) => (await ctx.client.get(r.key, { signal: ctx.signal })).value !== null) : []
      for (const e of exists) if (e.ok && e.value) kept++
      progress.count = live.length - kept
    } else {
      await settleEach(
        live,
        IN_FLIGHT,
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
    const readBack = await settleEach(unsure, IN_FLIGHT, ({ record }) => ctx.client.get(record.key, { signal: ctx.signal }))
    readBack.forEach((o, i) => {
      const { record, error } = unsure[i]!
      if (!o.ok) {
        undetermined++
        return fail(record, error, `; read back: ${(o.error as Error).message}, so whether it was written is not known`)
      }
      const held = o.value.value
      if (held !== null && held.equals(record.value)) {
        confirmed++
        progress.count++
      } else if (nx && held !== null) kept++
      else fail(record, error, '; read back: not written')
    })
    const notes = [
      kept ? `${kept} kept (they exist, --nx)` : '',
      expired ? `${expired} skipped (expired)` : '',
      confirmed ? `${confirmed} of them found written when read back after a lost answer` : '',
      failed ? `${failed} failed` : '',
      undetermined ? `${undetermined} of them not known (the read-back failed)` : '',
    ].filter(Boolean)
    await progress.done(`${progress.count} key(s) from ${file}${notes.length ? `; ${notes.join(', ')}` : ''}`)
    return failed ? { code: Exit.failed, message: `${failed} key(s) could not be written, first ${firstFailure}` } : { code: Exit.done }
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

async function readRecords(ctx: CommandContext, file: string): Promise<KeyRecord[]> {
  let content: Buffer
  try {
    content = file === '-' ? await readAll(ctx.io.stdin) : readFileSync(file)
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
  }
  try {
    return parseKeyRecords(content)
  } catch (err) {
    if (err instanceof KeyRecordError) throw new UsageError(`${file}:${err.line}: ${err.reason}`)
    throw err
  }
}

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string))
  return Buffer.concat(chunks)
}

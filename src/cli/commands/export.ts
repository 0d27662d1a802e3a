import { createWriteStream } from 'node:fs'
import type { Writable } from 'node:stream'
import { RemoteEmulatorAdmin, type AdminChannel } from '../../emulator/admin'
import { exportPages } from '../../export/key-export'
import { encodeKeyRecord } from '../../formats/key-records'
import { write, type Command, type CommandContext } from '../command'
import { Exit, UsageError } from '../exit'
import { Progress } from './progress'

export const exportKeys: Command = {
  name: 'export',
  summary: 'write the keys matching a pattern (all by default) with their values, as NDJSON',
  usage: [
    'aio-statestore export [PATTERN]',
    '',
    'Writes every key matching PATTERN (a glob as for keys; * when absent) with its value and version,',
    'one JSON object a line: {"key": ..., "value": ..., "version": ...}. A key or value that is not UTF-8',
    'goes in keyBase64 / valueBase64, so any bytes round-trip. The state store protocol tells no expiry or',
    'persistence; with --admin an emulator started with --admin tells both (expiresAt, persist).',
    'Pages are read one at a time (SCAN, or the admin channel), their keys with 16 GETs in flight. A key',
    'deleted while the export runs is left out. Progress on a terminal, a summary line on stderr; exit 3',
    'if a read failed. The file serves `aio-statestore import` and `aio-statestore-emulator --seed`.',
  ].join('\n'),
  flagsHelp: [
    '  -o, --output <file>     Write to this file instead of stdout.',
    "  --admin                 List the keys through the emulator's admin channel (aio-statestore-emulator",
    "                          --admin), which tells each key's expiry and persistence.",
  ].join('\n'),
  flags: { output: { type: 'string', short: 'o' }, admin: { type: 'boolean' } },
  positionals: [0, 1],
  async run(ctx) {
    const pattern = ctx.args[0] ?? '*'
    const file = ctx.values.output as string | undefined
    const admin = ctx.values.admin ? await adminChannel(ctx) : null
    const out: Writable = file ? createWriteStream(file) : ctx.io.stdout
    const progress = new Progress(ctx.io.stderr, 'exported')
    let failed = 0
    let firstFailure = ''
    try {
      if (file) await opened(out, file)
      for await (const { records, unread } of exportPages(ctx.client, admin, pattern, ctx.signal)) {
        for (const u of unread) {
          failed++
          firstFailure ||= `${JSON.stringify(u.key.toString('utf8'))}: ${(u.error as Error).message}`
        }
        if (records.length > 0) await write(out, records.map(encodeKeyRecord).join(''))
        progress.count += records.length
        await progress.show()
      }
    } finally {
      if (file) await new Promise<void>((resolve) => out.end(resolve))
      await (admin as RemoteEmulatorAdmin | null)?.close()
    }
    await progress.done(
      `${progress.count} key(s)${file ? ` to ${file}` : ''}${failed ? `; ${failed} could not be read` : ''}`,
    )
    return failed
      ? { code: Exit.failed, message: `${failed} key(s) could not be read, first ${firstFailure}` }
      : { code: Exit.done }
  },
}

async function adminChannel(ctx: CommandContext): Promise<AdminChannel> {
  const found = ctx.clientOptions ? await RemoteEmulatorAdmin.discover(ctx.clientOptions) : null
  if (!found)
    throw new UsageError(
      '--admin: no emulator serves its admin channel on this broker (start it with aio-statestore-emulator --admin)',
    )
  return found.admin
}

function opened(stream: Writable, file: string): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.once('open', () => resolve())
    stream.once('error', (err: NodeJS.ErrnoException) =>
      reject(new UsageError(`cannot write ${file}: ${err.code ?? err.message}`)),
    )
  })
}

import { createWriteStream } from 'node:fs'
import type { Writable } from 'node:stream'
import { settleEach } from '../../bounded'
import { encodeKeyRecord } from '../../key-records'
import { write, type Command } from '../command'
import { Exit, UsageError } from '../exit'
import { Progress } from './progress'

/** GETs one page's keys keep in flight at once. */
const IN_FLIGHT = 16

export const exportKeys: Command = {
  name: 'export',
  summary: 'write the keys matching a pattern (all by default) with their values, as NDJSON',
  usage: [
    'aio-statestore export [PATTERN]',
    '',
    'Writes every key matching PATTERN (a glob as for keys; * when absent) with its value and version,',
    'one JSON object a line: {"key": ..., "value": ..., "version": ...}. A key or value that is not UTF-8',
    'goes in keyBase64 / valueBase64, so any bytes round-trip. The state store protocol tells no expiry or',
    'persistence, so records have none (import and --seed take expiresAt and persist where a file has them).',
    'Pages are read one at a time (SCAN), their keys with 16 GETs in flight. A key deleted while the export',
    'runs is left out. Progress on a terminal, a summary line on stderr; exit 3 if a read failed.',
    'The file serves `aio-statestore import` and `aio-statestore-emulator --seed`.',
  ].join('\n'),
  flagsHelp: '  -o, --output <file>     Write to this file instead of stdout.',
  flags: { output: { type: 'string', short: 'o' } },
  positionals: [0, 1],
  async run(ctx) {
    const pattern = ctx.args[0] ?? '*'
    const file = ctx.values.output as string | undefined
    const out: Writable = file ? createWriteStream(file) : ctx.io.stdout
    if (file) await opened(out, file)
    const progress = new Progress(ctx.io.stderr, 'exported')
    let failed = 0
    let firstFailure = ''
    try {
      for await (const page of ctx.client.scan(pattern, { signal: ctx.signal })) {
        const outcomes = await settleEach(page, IN_FLIGHT, (key) => ctx.client.get(key, { signal: ctx.signal }))
        let lines = ''
        outcomes.forEach((o, i) => {
          if (!o.ok) {
            failed++
            firstFailure ||= `${JSON.stringify(page[i])}: ${(o.error as Error).message}`
            return
          }
          if (o.value.value === null) return
          lines += encodeKeyRecord({ key: Buffer.from(page[i]!, 'utf8'), value: o.value.value, ...(o.value.version ? { version: o.value.version.toString() } : {}) })
          progress.count++
        })
        if (lines) await write(out, lines)
        await progress.show()
      }
    } finally {
      if (file) await new Promise<void>((resolve) => out.end(resolve))
    }
    await progress.done(`${progress.count} key(s)${file ? ` to ${file}` : ''}${failed ? `; ${failed} could not be read` : ''}`)
    return failed ? { code: Exit.failed, message: `${failed} key(s) could not be read, first ${firstFailure}` } : { code: Exit.done }
  },
}

function opened(stream: Writable, file: string): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.once('open', () => resolve())
    stream.once('error', (err: NodeJS.ErrnoException) => reject(new UsageError(`cannot write ${file}: ${err.code ?? err.message}`)))
  })
}

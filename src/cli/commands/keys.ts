import { write, type Command } from '../command'
import { Exit } from '../exit'

export const keys: Command = {
  name: 'keys',
  summary: 'list the keys matching a glob pattern (SCAN), one per line',
  usage: [
    'aio-statestore keys PATTERN',
    '',
    'Prints every key matching PATTERN, a glob over the whole key: * any text, ? one byte, [abc], [a-z],',
    "[!a-z], \\* a literal *. Quote it from the shell: aio-statestore keys 'sensors/*'. Keys that are not",
    'UTF-8, and keys this client may not read, are not listed. SCAN is ahead of the released AIO broker',
    '(the emulator has it); a broker without it exits 3.',
  ].join('\n'),
  flagsHelp: '  --null                  End each key with a NUL byte instead of a newline (for xargs -0).',
  flags: { null: { type: 'boolean' } },
  positionals: [1, 1],
  async run(ctx) {
    for await (const page of ctx.client.scan(ctx.args[0]!, { signal: ctx.signal })) {
      const end = ctx.values.null ? '\0' : '\n'
      if (page.length > 0) await write(ctx.io.stdout, page.map((k) => k + end).join(''))
    }
    return { code: Exit.done }
  },
}

import type { Command } from '../command'
import { write } from '../command'
import { Exit } from '../exit'

export const get: Command = {
  name: 'get',
  summary: 'print a value (raw bytes) to stdout; exit 1 when the key does not exist',
  usage:
    'aio-statestore get KEY\n\nWrites the value of KEY to stdout exactly as stored, with nothing added. A missing ' +
    'key exits 1.',
  flagsHelp: "  --version-to-stderr     Also print the key's version (an HLC) on stderr.",
  flags: { 'version-to-stderr': { type: 'boolean' } },
  positionals: [1, 1],
  async run(ctx) {
    const key = ctx.args[0]!
    const { value, version } = await ctx.client.get(key)
    if (value === null) return { code: Exit.notApplied, message: `${JSON.stringify(key)} does not exist` }
    await write(ctx.io.stdout, value)
    if (ctx.values['version-to-stderr']) await write(ctx.io.stderr, `${version}\n`)
    return { code: Exit.done }
  },
}

import type { SetOptions } from '../../client'
import { FENCING_FLAG, FENCING_HELP, readValue, write, type Command } from '../command'
import { wholeNumber } from '../connection'
import { Exit, UsageError } from '../exit'

export const set: Command = {
  name: 'set',
  summary: 'write a value from an argument, --file or stdin; exit 1 when NX/NEX did not apply it',
  usage:
    'aio-statestore set KEY [VALUE]\n\nWrites VALUE (as UTF-8), or the bytes of --file, or stdin when neither is ' +
    'given. Prints the new version.',
  flagsHelp: [
    '  --file <path>           Take the value from this file (- for stdin).',
    '  --nx                    Only if the key does not exist.',
    '  --nex                   Only if the key does not exist or already holds this value.',
    '  --expiry <ms>           Delete the key after this many milliseconds.',
    '  --persist               Ask the broker to keep the key on disk (aio-persistence).',
    FENCING_HELP,
  ].join('\n'),
  flags: {
    file: { type: 'string' },
    nx: { type: 'boolean' },
    nex: { type: 'boolean' },
    expiry: { type: 'string' },
    persist: { type: 'boolean' },
    ...FENCING_FLAG,
  },
  positionals: [1, 2],
  async run(ctx) {
    const { values } = ctx
    if (values.nx && values.nex) throw new UsageError('give --nx or --nex, not both')
    const options: SetOptions = {}
    if (values.nx) options.condition = 'NX'
    if (values.nex) options.condition = 'NEX'
    if (values.expiry !== undefined) options.expiryMs = wholeNumber('--expiry', values.expiry as string, 1)
    if (values.persist) options.persist = true
    if (values['fencing-token'] !== undefined) options.fencingToken = values['fencing-token'] as string
    const key = ctx.args[0]!
    const result = await ctx.client.set(key, await readValue(ctx, ctx.args[1]), options)
    if (!result.applied)
      return {
        code: Exit.notApplied,
        message:
          `not applied: ${JSON.stringify(key)} ` + `exists${options.condition === 'NEX' ? ' with another value' : ''}`,
      }
    await write(ctx.io.stdout, `${result.version}\n`)
    return { code: Exit.done }
  },
}

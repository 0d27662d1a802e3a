import { FENCING_FLAG, FENCING_HELP, readValue, type Command } from '../command'
import { Exit } from '../exit'

export const vdel: Command = {
  name: 'vdel',
  summary: 'delete a key only if it holds a value; exit 1 when it does not',
  usage:
    'aio-statestore vdel KEY [VALUE]\n\nDeletes KEY only if it holds VALUE (or the bytes of --file, or stdin). ' +
    'Exits 1 when the key does not exist or holds another value.',
  flagsHelp: ['  --file <path>           Take the value from this file (- for stdin).', FENCING_HELP].join('\n'),
  flags: { file: { type: 'string' }, ...FENCING_FLAG },
  positionals: [1, 2],
  async run(ctx) {
    const key = ctx.args[0]!
    const token = ctx.values['fencing-token'] as string | undefined
    const result = await ctx.client.vdel(
      key,
      await readValue(ctx, ctx.args[1]),
      token !== undefined ? { fencingToken: token } : {},
    )
    if (result.deleted === 1) return { code: Exit.done }
    return {
      code: Exit.notApplied,
      message:
        result.deleted === 0 ? `${JSON.stringify(key)} does not exist` : `${JSON.stringify(key)} holds another value`,
    }
  },
}

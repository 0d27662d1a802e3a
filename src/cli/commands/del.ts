import { FENCING_FLAG, FENCING_HELP, type Command } from '../command'
import { Exit } from '../exit'

export const del: Command = {
  name: 'del',
  summary: 'delete a key; exit 1 when it does not exist',
  usage: 'aio-statestore del KEY\n\nDeletes KEY. A key that does not exist exits 1.',
  flagsHelp: FENCING_HELP,
  flags: { ...FENCING_FLAG },
  positionals: [1, 1],
  async run(ctx) {
    const key = ctx.args[0]!
    const token = ctx.values['fencing-token'] as string | undefined
    const result = await ctx.client.del(key, token !== undefined ? { fencingToken: token } : {})
    return result.deleted === 1
      ? { code: Exit.done }
      : { code: Exit.notApplied, message: `${JSON.stringify(key)} does not exist` }
  },
}

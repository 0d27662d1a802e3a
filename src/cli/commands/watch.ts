import { isUtf8 } from 'node:buffer'
import type { KeyNotification, Observation } from '../../client'
import { write, type Command } from '../command'
import { wholeNumber } from '../connection'
import { Exit } from '../exit'

export const watch: Command = {
  name: 'watch',
  summary: 'print a JSON line per change of one or more keys until interrupted',
  usage: [
    'aio-statestore watch KEY [KEY...]',
    '',
    'Prints one JSON object per line for every change of the keys (KEYNOTIFY), until Ctrl-C:',
    '  {"key":"k","operation":"SET","value":"text","version":"…"}',
    '  {"key":"k","operation":"DELETE","version":"…"}',
    'A value that is not UTF-8 comes as "valueBase64" instead of "value". "reconciled": true marks a',
    'change that happened while the connection was down (read back after reconnecting).',
  ].join('\n'),
  flagsHelp: '  --count <n>             Exit 0 after n changes.',
  flags: { count: { type: 'string' } },
  positionals: [1, Infinity],
  async run(ctx) {
    const limit = ctx.values.count === undefined ? Infinity : wholeNumber('--count', ctx.values.count as string, 1)
    let seen = 0
    let writing = Promise.resolve()
    let finish!: () => void
    const finished = new Promise<void>((resolve) => (finish = resolve))
    ctx.signal.addEventListener('abort', () => finish(), { once: true })
    const onChange = (n: KeyNotification) => {
      if (seen >= limit) return
      seen++
      writing = writing.then(() => write(ctx.io.stdout, `${JSON.stringify(line(n))}\n`))
      if (seen >= limit) void writing.then(finish)
    }
    const observations: Observation[] = []
    try {
      for (const key of ctx.args) observations.push(await ctx.client.observe(key, onChange))
      // Registered: a script that waits for this line knows that changes from now on are printed.
      await write(ctx.io.stderr, `watching ${ctx.args.length} key(s)\n`)
      await finished
    } finally {
      await Promise.all(observations.map((o) => o.close()))
    }
    await writing
    return { code: Exit.done }
  },
}

function line(n: KeyNotification): Record<string, unknown> {
  const out: Record<string, unknown> = { key: n.key.toString('utf8'), operation: n.operation }
  if (n.value !== null) {
    if (isUtf8(n.value)) out.value = n.value.toString('utf8')
    else out.valueBase64 = n.value.toString('base64')
  }
  out.version = n.version?.toString() ?? null
  if (n.reconciled) out.reconciled = true
  return out
}

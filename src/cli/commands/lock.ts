import { spawn } from 'node:child_process'
import { constants } from 'node:os'
import { Lock } from '../../locks'
import type { Command } from '../command'
import { wholeNumber } from '../connection'
import { Exit, UsageError } from '../exit'

export const lock: Command = {
  name: 'lock',
  summary: 'run a command while holding a lock, with its fencing token in the environment',
  usage: [
    'aio-statestore lock NAME [flags] -- COMMAND [ARGS...]',
    '',
    'Waits until the lock NAME is free, takes it, and runs COMMAND while renewing the lock. COMMAND finds',
    'the lock in AIO_STATESTORE_LOCK and its fencing token in AIO_STATESTORE_FENCING_TOKEN (pass it to',
    '`aio-statestore set --fencing-token`). The lock is released when COMMAND exits or on Ctrl-C / SIGTERM',
    "(forwarded to COMMAND), and the exit code is COMMAND's. If the lock is lost (renewal failed), COMMAND",
    'gets SIGTERM and the exit code is 3.',
  ].join('\n'),
  flagsHelp: [
    '  --lease-ms <ms>         How long the lock lasts unrenewed, should this process die (default 10000).',
    '  --wait <ms>             Give up (exit 3) if the lock is not ours within this time; default: wait.',
  ].join('\n'),
  flags: { 'lease-ms': { type: 'string' }, wait: { type: 'string' } },
  positionals: [1, 1],
  async run(ctx) {
    const [program, ...programArgs] = ctx.rest
    if (program === undefined)
      throw new UsageError('no command to run: give it after --, e.g. aio-statestore lock NAME -- ./job.sh')
    const name = ctx.args[0]!
    const leaseMs =
      ctx.values['lease-ms'] === undefined ? 10_000 : wholeNumber('--lease-ms', ctx.values['lease-ms'] as string, 30)
    const waitMs = ctx.values.wait === undefined ? undefined : wholeNumber('--wait', ctx.values.wait as string, 1)
    // Renewed three times per lease: two renewals may fail (a short network loss) before it lapses.
    const held = new Lock(ctx.client, name, { leaseMs, renewPeriodMs: Math.floor(leaseMs / 3) })
    const fencingToken = await held.acquire({
      ...(waitMs !== undefined ? { timeoutMs: waitMs } : {}),
      signal: ctx.signal,
    })
    let lost: string | null = null
    try {
      const child = spawn(program, programArgs, {
        stdio: 'inherit',
        env: { ...process.env, AIO_STATESTORE_LOCK: name, AIO_STATESTORE_FENCING_TOKEN: fencingToken.toString() },
      })
      held.lease.on('lost', ({ reason }) => {
        lost = reason
        child.kill('SIGTERM')
      })
      const forward = () => child.kill((ctx.signal.reason as NodeJS.Signals | undefined) ?? 'SIGTERM')
      ctx.signal.addEventListener('abort', forward, { once: true })
      const ended = await new Promise<{ code: number | null; signal: NodeJS.Signals | null } | { error: Error }>(
        (resolve) => {
          child.once('error', (error) => resolve({ error }))
          child.once('exit', (code, signal) => resolve({ code, signal }))
        },
      )
      ctx.signal.removeEventListener('abort', forward)
      if ('error' in ended)
        return {
          code: Exit.failed,
          message: `cannot run ${program}: ${(ended.error as NodeJS.ErrnoException).code ?? ended.error.message}`,
        }
      if (lost !== null)
        return {
          code: Exit.failed,
          message: `the lock ${JSON.stringify(name)} was lost while ${program} ran (${lost}); it was sent SIGTERM`,
        }
      // As a shell reports it: 128 + the signal's number.
      return { code: ended.code ?? 128 + (constants.signals[ended.signal!] ?? 0) }
    } finally {
      await held.release({ timeoutMs: ctx.timeoutMs }).catch(() => {})
    }
  },
}

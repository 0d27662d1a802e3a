import { ServiceError, StateStoreError } from '../diagnostics/errors'
import { keyLockName } from '../locks'

/** The exit codes a script can act on. */
export const Exit = {
  done: 0,
  /** The key does not exist, or the write was not applied (NX/NEX, VDEL value differs). */
  notApplied: 1,
  /** The command line is wrong. */
  usage: 2,
  /** No connection, a timeout, or an error the state store answered. */
  failed: 3,
} as const

export type ExitCode = (typeof Exit)[keyof typeof Exit]

/** The command line cannot be acted on: exit 2 with this line. */
export class UsageError extends Error {
  override readonly name = 'UsageError'
}

/** What a command ends with: the code, and the line for stderr when there is one. */
export interface Outcome {
  code: number
  message?: string
}

/** The command that failed, to say what to do instead. */
export interface Invocation {
  command: string
  args: readonly string[]
}

/** Commands whose first argument is one key. */
const KEY_COMMANDS = new Set(['get', 'set', 'del', 'vdel', 'watch'])

/** An error as the CLI reports it: a wrong argument is usage, anything the store or the network did is a failure. */
export function outcomeOf(err: unknown, invocation?: Invocation): Outcome {
  if (err instanceof UsageError) return { code: Exit.usage, message: err.message }
  if (err instanceof ServiceError && invocation)
    return { code: Exit.failed, message: `${err.message}${serviceHint(err, invocation)}` }
  if (err instanceof StateStoreError)
    return { code: err.kind === 'argument' ? Exit.usage : Exit.failed, message: err.message }
  return { code: Exit.failed, message: err instanceof Error ? err.message : String(err) }
}

/** What a refusal of the store means for this command line: the key it refused, and the command that works. */
function serviceHint(err: ServiceError, { command, args }: Invocation): string {
  const key = KEY_COMMANDS.has(command) ? args[0] : undefined
  if (err.code === 'NotAuthorized')
    return key === undefined
      ? " (the broker's policy for this client refuses it)"
      : ` for the key ${JSON.stringify(key)} (the broker's policy for this client refuses it)`
  if (err.code === 'MissingFencingToken' && key !== undefined) {
    // The token is the lock's child's: `sh -c '…'` expands it there, not in the shell that starts the lock.
    const inner = [
      ...['aio-statestore', command, ...args].map(shellWord),
      '--fencing-token',
      '"$AIO_STATESTORE_FENCING_TOKEN"',
    ].join(' ')
    return (
      `\n${JSON.stringify(key)} is protected by a lock's fencing token: write it while holding a lock (the key's ` +
      `own, as the` +
      ` update key node and Lock.edit take it, or the one your flow uses), e.g.` +
      `\n  aio-statestore lock ${shellWord(String(keyLockName(key)))} -- sh -c ${singleQuoted(inner)}`
    )
  }
  return ''
}

/** A word as a POSIX shell reads it back: bare when safe, else in double quotes. */
function shellWord(word: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(word) ? word : `"${word.replace(/["$`\\]/g, '\\$&')}"`
}

function singleQuoted(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`
}

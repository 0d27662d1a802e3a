import { StateStoreError } from '../errors'

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

/** An error as the CLI reports it: a wrong argument is usage, anything the store or the network did is a failure. */
export function outcomeOf(err: unknown): Outcome {
  if (err instanceof UsageError) return { code: Exit.usage, message: err.message }
  if (err instanceof StateStoreError) return { code: err.kind === 'argument' ? Exit.usage : Exit.failed, message: err.message }
  return { code: Exit.failed, message: err instanceof Error ? err.message : String(err) }
}

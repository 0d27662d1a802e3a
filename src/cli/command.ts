import { readFileSync } from 'node:fs'
import type { Readable, Writable } from 'node:stream'
import type { ParseArgsConfig } from 'node:util'
import type { ClientOptions, StateStoreClient } from '../client'
import { UsageError, type Outcome } from './exit'

/** One verb of the CLI: its help, its flags, and what it does with a connected client. */
export interface Command {
  name: string
  /** One line for the overview. */
  summary: string
  /** `aio-statestore <name> …` and what it does, for `<name> --help`. */
  usage: string
  /** Its own flags, described; the connection flags are added to every command. */
  flagsHelp: string
  flags: NonNullable<ParseArgsConfig['options']>
  /** Positional arguments: [min, max]. */
  positionals: [number, number]
  run(ctx: CommandContext): Promise<Outcome>
}

export interface Io {
  stdin: Readable & { isTTY?: boolean }
  stdout: Writable
  stderr: Writable
}

export interface CommandContext {
  client: StateStoreClient
  /** The options the client connected with, for another connection to the same broker (export --admin). */
  clientOptions?: ClientOptions
  args: string[]
  values: Record<string, string | boolean | string[] | boolean[] | undefined>
  /** For `lock`: the command line after `--`. */
  rest: string[]
  timeoutMs: number
  io: Io
  /** Aborted on SIGINT / SIGTERM. */
  signal: AbortSignal
}

/** Writes and waits until the bytes are handed to the OS: a process that exits next loses nothing. */
export function write(out: Writable, data: Buffer | string): Promise<void> {
  return new Promise((resolve, reject) => out.write(data, (err) => (err ? reject(err) : resolve())))
}

/** A value from the argument, `--file`, or stdin, in that order; bytes as they are. */
export async function readValue(ctx: CommandContext, positional: string | undefined): Promise<Buffer> {
  const file = ctx.values.file as string | undefined
  if (positional !== undefined && file !== undefined)
    throw new UsageError('give the value as an argument or with --file, not both')
  if (positional !== undefined) return Buffer.from(positional, 'utf8')
  if (file !== undefined) {
    try {
      return file === '-' ? await readAll(ctx.io.stdin) : readFileSync(file)
    } catch (err) {
      throw new UsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
    }
  }
  if (ctx.io.stdin.isTTY) throw new UsageError('no value: give it as an argument, with --file, or on stdin')
  return readAll(ctx.io.stdin)
}

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string))
  return Buffer.concat(chunks)
}

export const FENCING_FLAG = { 'fencing-token': { type: 'string' } } as const
export const FENCING_HELP =
  '  --fencing-token <hlc>   Send this fencing token (__ft): the write fails if the key is protected by a newer one.'

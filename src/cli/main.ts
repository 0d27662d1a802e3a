#!/usr/bin/env node
import { getMaxListeners, setMaxListeners } from 'node:events'
import { parseArgs } from 'node:util'
import { shownUrl } from '../diagnostics/log'
import { StateStoreClient } from '../client'
import { type Command, type Io, write } from './command'
import { del } from './commands/del'
import { exportKeys } from './commands/export'
import { get } from './commands/get'
import { importKeys } from './commands/import'
import { keys } from './commands/keys'
import { lock } from './commands/lock'
import { set } from './commands/set'
import { vdel } from './commands/vdel'
import { watch } from './commands/watch'
import { CONNECTION_FLAGS, CONNECTION_HELP, connectionFrom } from './connection'
import { Exit, outcomeOf, type Outcome } from './exit'
import { firstConnect } from './first-connect'

/**
 * `aio-statestore`: the state store from a shell, with every verb (the official statestore-cli has
 * get, set and delete). Exit codes: 0 done, 1 not found / not applied, 2 usage, 3 connection or
 * service error, with one line on stderr saying which.
 */

/** How many listeners the Ctrl-C signal may have before Node.js warns of a leak. */
const SIGNAL_LISTENERS = 64

const COMMANDS: Command[] = [get, set, del, vdel, watch, keys, lock, exportKeys, importKeys]
const NAME = 'aio-statestore'

function overview(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length))
  return [
    `${NAME}: the Azure IoT Operations state store from the command line`,
    '',
    `Usage: ${NAME} [connection flags] <command> [flags] [arguments]      ${NAME} <command> --help for its flags`,
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Exit codes: 0 done, 1 not found or not applied, 2 usage, 3 connection or service error.',
    '',
    CONNECTION_HELP,
    '',
  ].join('\n')
}

function commandHelp(command: Command): string {
  return [
    `Usage: ${command.usage}`,
    '',
    ...(command.flagsHelp ? ['Flags:', command.flagsHelp, ''] : []),
    CONNECTION_HELP,
    '  -h, --help                  This text.',
    '',
  ].join('\n')
}

/** Runs one command line; resolves with the exit code, having written what it has to say. */
export async function main(argv: string[], io: Io, signal: AbortSignal): Promise<number> {
  const { leading, name, rest: afterName } = splitLeadingFlags(argv)
  const rest = [...leading, ...afterName]
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    await write(name === undefined ? io.stderr : io.stdout, overview())
    return name === undefined ? Exit.usage : Exit.done
  }
  if (name.startsWith('-'))
    return report(io, {
      code: Exit.usage,
      message: `unknown flag ${JSON.stringify(name)}; the flags before a command are ${Object.keys(CONNECTION_FLAGS)
        .map((f) => `--${f}`)
        .join(', ')} (${NAME} --help)`,
    })
  const command = COMMANDS.find((c) => c.name === name)
  if (!command)
    return report(io, {
      code: Exit.usage,
      message: `unknown command ${JSON.stringify(name)}; one of ${COMMANDS.map((c) => c.name).join(', ')}`,
    })
  // Everything after `--` belongs to the command `lock` runs, flags included.
  const dashes = command === lock ? rest.indexOf('--') : -1
  const own = dashes === -1 ? rest : rest.slice(0, dashes)
  const after = dashes === -1 ? [] : rest.slice(dashes + 1)
  let parsed
  try {
    parsed = parseArgs({
      args: own,
      options: { ...CONNECTION_FLAGS, ...command.flags, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    })
  } catch (err) {
    return report(io, { code: Exit.usage, message: `${(err as Error).message} (${NAME} ${name} --help)` })
  }
  if (parsed.values.help) {
    await write(io.stdout, commandHelp(command))
    return Exit.done
  }
  const [min, max] = command.positionals
  const n = parsed.positionals.length
  if (n < min || n > max) return report(io, { code: Exit.usage, message: `usage: ${command.usage.split('\n')[0]}` })

  // Every request in flight listens to the one Ctrl-C signal (import and export keep 16 in flight):
  // Node.js 20 warns from 11 on. The bound stays low enough that a listener left behind still shows.
  setMaxListeners(Math.max(getMaxListeners(signal), SIGNAL_LISTENERS), signal)
  let client: StateStoreClient | null = null
  try {
    const connection = connectionFrom(parsed.values)
    client = new StateStoreClient(connection.options)
    try {
      await firstConnect(client, connection.timeoutMs, signal)
    } catch (err) {
      throw new ConnectFailed(`cannot connect to ${shownUrl(connection.options.brokerUrl)}: ${(err as Error).message}`)
    }
    const outcome = await command.run({
      client,
      clientOptions: connection.options,
      args: parsed.positionals,
      values: parsed.values,
      rest: after,
      timeoutMs: connection.timeoutMs,
      io,
      signal,
    })
    return report(io, outcome)
  } catch (err) {
    return report(
      io,
      err instanceof ConnectFailed
        ? { code: Exit.failed, message: err.message }
        : outcomeOf(err, { command: name, args: parsed.positionals }),
    )
  } finally {
    await client?.close()
  }
}

class ConnectFailed extends Error {}

/**
 * Connection flags may come before the command, where redis-cli, kubectl and mosquitto_* users put
 * them: `--broker URL keys` is `keys --broker URL`. `--flag=value` and `--flag value` both count.
 */
function splitLeadingFlags(argv: string[]): { leading: string[]; name: string | undefined; rest: string[] } {
  const leading: string[] = []
  let i = 0
  while (i < argv.length) {
    const match = /^--([a-z-]+)(=.*)?$/.exec(argv[i]!)
    if (!match || !Object.hasOwn(CONNECTION_FLAGS, match[1]!)) break
    leading.push(argv[i]!)
    if (match[2] === undefined && i + 1 < argv.length) leading.push(argv[++i]!)
    i++
  }
  return { leading, name: argv[i], rest: argv.slice(i + 1) }
}

async function report(io: Io, outcome: Outcome): Promise<number> {
  if (outcome.message) await write(io.stderr, `${NAME}: ${outcome.message}\n`)
  return outcome.code
}

if (require.main === module) {
  const controller = new AbortController()
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => controller.abort(sig))
  main(
    process.argv.slice(2),
    { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr },
    controller.signal,
  ).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`${NAME}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
      process.exit(Exit.failed)
    },
  )
}

import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { scaled } from '../../support/deadline'

const ROOT = join(__dirname, '..', '..', '..')

/** How to start `aio-statestore`: from its TypeScript source (no build needed), or an installed bin. */
export type CliCommand = { file: string; args: string[]; cwd?: string }

export const FROM_SOURCE: CliCommand = {
  file: process.execPath,
  args: ['--import', 'tsx', join(ROOT, 'src', 'cli', 'main.ts')],
}

export interface Ran {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: Buffer
  stderr: string
}

/** A running `aio-statestore`, its output collected. */
export class CliProcess {
  private readonly out: Buffer[] = []
  stderr = ''
  readonly ended: Promise<Ran>

  constructor(
    readonly child: ChildProcess,
    input?: Buffer | string,
  ) {
    child.stdout!.on('data', (d: Buffer) => this.out.push(d))
    child.stderr!.on('data', (d: Buffer) => (this.stderr += d.toString()))
    this.ended = new Promise((resolve) =>
      child.once('close', (code, signal) => resolve({ code, signal, stdout: this.stdout, stderr: this.stderr })),
    )
    if (input !== undefined) child.stdin!.end(input)
    else child.stdin?.end()
  }

  get stdout(): Buffer {
    return Buffer.concat(this.out)
  }

  /** Resolves once stderr contains `text` (a command saying it is ready); fails if the process ends first. */
  async waitForStderr(text: string, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + scaled(timeoutMs)
    while (!this.stderr.includes(text)) {
      if (this.child.exitCode !== null)
        throw new Error(`exited (${this.child.exitCode}) before printing ${JSON.stringify(text)}: ${this.stderr}`)
      if (Date.now() > deadline)
        throw new Error(`no ${JSON.stringify(text)} on stderr within ${timeoutMs} ms (scaled): ${this.stderr}`)
      await new Promise((r) => setTimeout(r, 20))
    }
  }
}

export function startCli(
  cli: CliCommand,
  args: string[],
  options: { input?: Buffer | string; env?: NodeJS.ProcessEnv; cwd?: string } = {},
): CliProcess {
  const child = spawn(cli.file, [...cli.args, ...args], {
    cwd: options.cwd ?? cli.cwd ?? ROOT,
    env: options.env ?? withoutAioEnv(),
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  return new CliProcess(child, options.input)
}

export function runCli(
  cli: CliCommand,
  args: string[],
  options: { input?: Buffer | string; env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Promise<Ran> {
  return startCli(cli, args, options).ended
}

/** This process's environment without the AIO connection variables, so a developer's shell cannot change a test. */
export function withoutAioEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('AIO_')) env[k] = v
  return { ...env, ...extra }
}

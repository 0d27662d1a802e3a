import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { scaled } from '../../support/deadline'

const ROOT = join(__dirname, '..', '..', '..')
const CLI = join(ROOT, 'src', 'emulator', 'cli', 'main.ts')

/** `aio-statestore-emulator` run as a child process from its TypeScript source (no build needed). */
export class EmulatorProcess {
  stdout = ''
  stderr = ''
  url = ''
  private exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>

  private constructor(readonly child: ChildProcess) {
    child.stdout!.on('data', (d: Buffer) => (this.stdout += d.toString()))
    child.stderr!.on('data', (d: Buffer) => (this.stderr += d.toString()))
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
  }

  /** Starts the CLI with these arguments and waits for its "ready" line. */
  static async start(args: string[], timeoutMs = 15_000): Promise<EmulatorProcess> {
    const p = EmulatorProcess.spawn(args)
    await p.ready(timeoutMs)
    return p
  }

  static spawn(args: string[]): EmulatorProcess {
    return new EmulatorProcess(
      spawn(process.execPath, ['--import', 'tsx', CLI, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] }),
    )
  }

  async ready(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + scaled(timeoutMs)
    for (;;) {
      const m = /ready on (mqtt:\/\/\S+)/.exec(this.stdout)
      if (m) {
        this.url = m[1]!
        return
      }
      if (this.child.exitCode !== null)
        throw new Error(`the emulator exited (${this.child.exitCode}) before it was ready:\n${this.stderr}`)
      if (Date.now() > deadline)
        throw new Error(`the emulator was not ready within ${timeoutMs} ms (scaled):\n${this.stdout}\n${this.stderr}`)
      await new Promise((r) => setTimeout(r, 25))
    }
  }

  /** Sends a signal and waits for the process to end. */
  async kill(signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal)
    return this.exited
  }

  /** Waits for the process to end by itself. */
  exit(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    return this.exited
  }
}

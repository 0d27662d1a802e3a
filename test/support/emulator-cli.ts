/** The built emulator CLI as a child process, as the reliability, fault and security suites start it. */
import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { sleep } from './wait'
import { scaled } from './deadline'

export const ROOT = join(__dirname, '..', '..')

/** `dist/src/emulator/cli/main.js`, as users run it (npm test builds first). */
export class EmulatorCli {
  stdout = ''
  stderr = ''
  private readonly exited: Promise<void>

  private constructor(readonly child: ChildProcess) {
    child.stdout!.on('data', (d: Buffer) => (this.stdout += d.toString()))
    child.stderr!.on('data', (d: Buffer) => (this.stderr += d.toString()))
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()))
  }

  static async start(args: string[], timeoutMs = 10_000, env: Record<string, string> = {}): Promise<EmulatorCli> {
    const cli = new EmulatorCli(
      spawn(process.execPath, [join(ROOT, 'dist', 'src', 'emulator', 'cli', 'main.js'), ...args], {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, ...env },
      }),
    )
    const deadline = Date.now() + scaled(timeoutMs)
    while (!/ready on /.test(cli.stdout)) {
      if (cli.child.exitCode !== null)
        throw new Error(`the emulator exited (${cli.child.exitCode}) before it was ready:\n${cli.stderr}`)
      if (Date.now() > deadline)
        throw new Error(`the emulator was not ready within ${timeoutMs} ms (scaled):\n${cli.stdout}\n${cli.stderr}`)
      await sleep(20)
    }
    return cli
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null
  }

  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (this.running) this.child.kill(signal)
    await this.exited
  }
}

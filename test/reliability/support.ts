/**
 * Shared by the reliability, fault and security suites: a mosquitto requirement that skips on a
 * laptop and fails in CI, a heap reading after a full GC, waiting and retrying, the built emulator
 * CLI as a child process, and outcome counting. (The TCP relay that can freeze a connection is
 * test/support/relay.ts.)
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { mosquittoPath } from '../support/mosquitto'
import { sleep } from '../support/wait'
import { scaled } from '../support/deadline'

export const ROOT = join(__dirname, '..', '..')

/** Suites that start their own mosquitto: skipped with a message without it, a failure in CI. */
export function requireMosquitto(ctx: Mocha.Context): void {
  if (mosquittoPath()) return
  if (process.env.CI) throw new Error('CI must provide mosquitto (apt-get install mosquitto)')
  console.warn('      (skipped: mosquitto is not installed; apt-get install mosquitto to run these tests)')
  ctx.skip()
}

let gcFn: (() => void) | null = null

/**
 * Heap in use after a full collection. `--expose-gc` is set at run time (mocha's own options stay
 * as they are): V8 then hands a `gc` function to every new context.
 */
export function heapAfterGc(): number {
  if (!gcFn) {
    setFlagsFromString('--expose-gc')
    gcFn = runInNewContext('gc') as () => void
  }
  gcFn()
  gcFn()
  return process.memoryUsage().heapUsed
}

export { retry, sleep, until } from '../support/wait'

/** How a batch of requests ended: results, and failures counted by error name. */
export class Outcomes<T> {
  readonly ok: T[] = []
  readonly failed = new Map<string, number>()
  /** Failures that are not typed errors of this package (a bug). */
  readonly untyped: unknown[] = []
  issued = 0

  track(promise: Promise<T>, onOk?: (value: T) => void): Promise<void> {
    this.issued += 1
    return promise.then(
      (value) => {
        this.ok.push(value)
        onOk?.(value)
      },
      (err: unknown) => {
        const name = err instanceof Error ? err.name : typeof err
        this.failed.set(name, (this.failed.get(name) ?? 0) + 1)
        if (!(err instanceof Error) || !('kind' in err)) this.untyped.push(err)
      },
    )
  }

  get failedCount(): number {
    let n = 0
    for (const c of this.failed.values()) n += c
    return n
  }

  summary(): string {
    return `${this.issued} issued, ${this.ok.length} completed, ${this.failedCount} failed ${JSON.stringify(Object.fromEntries(this.failed))}`
  }
}

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
      if (cli.child.exitCode !== null) throw new Error(`the emulator exited (${cli.child.exitCode}) before it was ready:\n${cli.stderr}`)
      if (Date.now() > deadline) throw new Error(`the emulator was not ready within ${timeoutMs} ms (scaled):\n${cli.stdout}\n${cli.stderr}`)
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

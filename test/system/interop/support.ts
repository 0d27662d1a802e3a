/**
 * The interop lane's parts: building our Go and Rust programs (test/interop/go, test/interop/rust)
 * against the pinned official SDKs, the two places they run against (the embedded emulator, and the
 * emulator behind mosquitto, each with a relay in front to cut), and running one case of a program.
 */
import { spawn, spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { BUILD_CACHE } from '../../support/go-build'
import { Mosquitto, requireMosquitto } from '../../support/mosquitto'
import { TcpRelay } from '../../support/relay'

/** Where the builds go: outside the clone, so that a second run on the same machine is warm. */
const CACHE = BUILD_CACHE

export interface Program {
  sdk: 'Go' | 'Rust'
  binary: string
  /** Its flags for the case, the URL under test, the second client's URL and a key prefix. */
  args(name: string, url: string, direct: string, prefix: string, extra?: Record<string, string | number>): string[]
}

/** The toolchain's version line, or null when it is not on the PATH. */
function toolchain(command: string, args: string[]): string | null {
  const run = spawnSync(command, args, { encoding: 'utf8' })
  return run.error || run.status !== 0 ? null : run.stdout.trim()
}

/**
 * Outside CI a missing toolchain is named and the suite skipped; in CI it is a failure.
 */
export function requireToolchain(ctx: Mocha.Context, name: string, command: string, args: string[]): void {
  if (toolchain(command, args)) return
  if (process.env.CI) throw new Error(`CI must provide ${name} (${command} is not on the PATH)`)
  console.warn(`      (skipped: ${name} is not installed: ${command} is not on the PATH)`)
  ctx.skip()
}

function build(command: string, args: string[], cwd: string, env: Record<string, string>): void {
  const run = spawnSync(command, args, {
    cwd,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  })
  if (run.status !== 0) throw new Error(`${command} ${args.join(' ')} failed in ${cwd}:\n${run.stdout}\n${run.stderr}`)
}

/** Builds the Go program with the module versions go.sum pins (nothing is resolved afresh). */
export function buildGo(): Program {
  const binary = join(CACHE, 'go', 'interop')
  build('go', ['build', '-mod=readonly', '-trimpath', '-o', binary, '.'], join(__dirname, 'go'), {
    GOFLAGS: '-mod=readonly',
    GOCACHE: process.env.GOCACHE ?? join(CACHE, 'go-build'),
  })
  return {
    sdk: 'Go',
    binary,
    args: (name, url, direct, prefix, extra = {}) => [
      '-case',
      name,
      '-url',
      url,
      '-direct',
      direct,
      '-prefix',
      prefix,
      ...Object.entries(extra).flatMap(([k, v]) => [`-${k}`, String(v)]),
    ],
  }
}

/** Builds the Rust program with the crate versions Cargo.lock pins (--locked). */
export function buildRust(): Program {
  const target = process.env.CARGO_TARGET_DIR ?? join(CACHE, 'cargo')
  build('cargo', ['build', '--locked', '--quiet'], join(__dirname, 'rust'), { CARGO_TARGET_DIR: target })
  return {
    sdk: 'Rust',
    binary: join(target, 'debug', 'interop'),
    args: (name, url, direct, prefix, extra = {}) => [
      '--case',
      name,
      '--url',
      url,
      '--direct',
      direct,
      '--prefix',
      prefix,
      ...Object.entries(extra).flatMap(([k, v]) => [`--${k}`, String(v)]),
    ],
  }
}

export interface CaseRun {
  code: number | null
  output: string
}

/**
 * Runs one case to its end. Each "STEP …" line it prints is handed to `onStep`; once that settles,
 * the program gets its go-ahead. A case that does not end by itself is ended by its own -timeout
 * (the Go program) or mocha's.
 */
export async function runCase(
  program: Program,
  args: string[],
  onStep: (step: string, output: string) => Promise<void> = async () => {},
): Promise<CaseRun> {
  const child = spawn(program.binary, args, { stdio: ['pipe', 'pipe', 'pipe'] })
  let output = ''
  child.stderr.on('data', (d: Buffer) => (output += d.toString()))
  const lines = createInterface({ input: child.stdout })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  let stepping = Promise.resolve()
  lines.on('line', (line) => {
    output += `${line}\n`
    if (line.startsWith('STEP ')) {
      stepping = stepping
        .then(() => onStep(line.slice(5), output))
        .then(
          () => void child.stdin.write('\n'),
          (err: unknown) => {
            output += `(the test's step failed: ${String(err)})\n`
            child.kill('SIGKILL')
          },
        )
    }
  })
  const code = await exited
  await stepping
  return { code, output }
}

export interface Place {
  label: 'embedded broker' | 'behind mosquitto'
  emulator: Emulator
  /** A relay in front of the broker: the URL under test, cut by `relay.dropAll()`. */
  relay: TcpRelay
  /** The broker itself, for the second client. */
  direct: string
  stop(): Promise<void>
}

export async function startPlace(label: Place['label'], ctx: Mocha.Context): Promise<Place> {
  let mosquitto: Mosquitto | null = null
  if (label === 'behind mosquitto') {
    requireMosquitto(ctx)
    mosquitto = await Mosquitto.start()
  }
  const emulator = await startEmulator({
    logLevel: 'error',
    ...(mosquitto ? { brokerUrl: mosquitto.url } : { listen: { host: '127.0.0.1', port: 0 } }),
  })
  const direct = mosquitto ? mosquitto.url : emulator.brokerUrl
  const relay = await TcpRelay.start(direct)
  return {
    label,
    emulator,
    relay,
    direct,
    async stop() {
      await relay.stop()
      await emulator.stop()
      await mosquitto?.stop()
    },
  }
}

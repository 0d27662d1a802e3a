/**
 * `aio-statestore-emulator` as a process among others, as a user starts it: `--dev` beside another
 * broker on its port, `--dev` on a folder others may write, and an emulator whose starter (npx, npm,
 * a shell) is stopped.
 */
import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer, connect, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { EmulatorProcess } from '../emulator/cli-process'
import { until, eventually } from '../../support/wait'

const ROOT = join(__dirname, '..', '..', '..')
const CLI = join(ROOT, 'src', 'emulator', 'cli', 'main.ts')

/** A port held by a listener of this test, as another broker holds 1883. */
async function takenPort(): Promise<{ port: number; server: Server }> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { port: (server.address() as { port: number }).port, server }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

function refuses(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve(false)
    })
    socket.once('error', () => resolve(true))
  })
}

describe('aio-statestore-emulator: a good citizen among other processes', function () {
  this.timeout(120_000)
  let dir: string
  /** Emulators a failing test may leave running: ended after each test. */
  const started: number[] = []
  const spawnEmulator = (args: string[]) => {
    const p = EmulatorProcess.spawn(args)
    started.push(p.child.pid!)
    return p
  }
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'emulator-citizen-'))
  })
  afterEach(() => {
    for (const pid of started.splice(0)) if (alive(pid)) process.kill(pid, 'SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  })

  for (const [flag, other] of [
    ['--listen', ['--x509-listen', '0', '--sat-listen', '0']],
    ['--sat-listen', ['--listen', '0', '--x509-listen', '0']],
  ] as const) {
    it(`--dev with ${flag}'s port taken suggests ${flag} and leaves no half-made folder`, async () => {
      const { port, server } = await takenPort()
      try {
        const layout = join(dir, 'layout')
        const p = spawnEmulator(['--dev', layout, flag, String(port), ...other])
        const ended = await p.exit()
        assert.equal(ended.code, 1, p.stderr)
        assert.match(p.stderr, /EADDRINUSE/)
        assert.ok(p.stderr.includes(`choose another with ${flag} PORT`), p.stderr)
        assert.equal(existsSync(layout), false, 'nothing of the layout is left')
      } finally {
        server.close()
      }
    })
  }

  it('--dev refuses a .session folder and a token file that others may write, naming them', async () => {
    const layout = join(dir, 'layout')
    // openssl makes the layout first: on a busy machine that alone takes seconds.
    const made = await EmulatorProcess.start(
      ['--dev', layout, '--listen', '0', '--x509-listen', '0', '--sat-listen', '0', '--log-level', 'warn'],
      45_000,
    )
    await made.kill('SIGTERM')
    const session = join(layout, '.session')
    chmodSync(join(session, 'token.txt'), 0o666)
    const token = spawnEmulator(['--dev', layout, '--listen', '0', '--x509-listen', '0', '--sat-listen', '0'])
    assert.notEqual((await token.exit()).code, 0)
    assert.ok(token.stderr.includes(`${join(session, 'token.txt')} (mode 666)`), token.stderr)
    chmodSync(join(session, 'token.txt'), 0o600)
    chmodSync(session, 0o777)
    const folder = spawnEmulator(['--dev', layout, '--listen', '0', '--x509-listen', '0', '--sat-listen', '0'])
    assert.notEqual((await folder.exit()).code, 0)
    assert.ok(folder.stderr.includes(`${session} (mode 777)`), folder.stderr)
    assert.equal(folder.stdout.includes('ready'), false)
  })

  it('exits, freeing its port, when the process that started it is stopped', async () => {
    mkdirSync(dir, { recursive: true })
    // A starter that does not pass signals on, as npx and `npm run` under sh -c: the emulator is its child.
    const starter = spawn('sh', ['-c', `'${process.execPath}' --import tsx '${CLI}' --listen 0; echo done`], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    starter.stdout.on('data', (d: Buffer) => (out += d.toString()))
    const port = await eventually(
      () => {
        const m = /ready on mqtt:\/\/[^:]+:(\d+)/.exec(out)
        return m ? Number(m[1]) : undefined
      },
      'the ready line',
      45_000,
    )
    const child = Number(execFileSync('ps', ['-o', 'pid=', '--ppid', String(starter.pid)], { encoding: 'utf8' }).trim())
    started.push(child)
    assert.ok(child > 0, "the emulator runs as the starter's child")
    starter.kill('SIGKILL')
    await until(() => !alive(child), 'the emulator exits', 20_000)
    assert.equal(await refuses(port), true, 'no listener is left on its port')
  })
})

// The processes a benchmark runs: mosquitto, the emulator (its CLI), the echo responder, redis-server.
// Every one is killed when the benchmark exits, however it exits.
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BENCH_DIR, ROOT } from './harness.mjs'
import ports from '../../dev/ports.js'

export const { freePort, waitForPort } = ports

const children = new Set()
function killAll() {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
}
process.on('exit', killAll)
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    killAll()
    process.exit(130)
  })
}

/** A child process that is killed with the benchmark; `output` collects what it printed. */
export function launch(command, args, options = {}) {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options })
  children.add(child)
  child.output = ''
  child.stdout.on('data', (d) => (child.output += d))
  child.stderr.on('data', (d) => (child.output += d))
  child.once('exit', () => children.delete(child))
  child.stop = async (signal = 'SIGTERM', graceMs = 3000) => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill(signal)
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
    await exited
    clearTimeout(timer)
  }
  return child
}

/** Resolves with the first match of `pattern` in the child's output. */
export function waitForOutput(child, pattern, timeoutMs, what) {
  return new Promise((resolve, reject) => {
    const check = () => {
      const m = pattern.exec(child.output)
      if (m) {
        done()
        resolve(m)
      }
    }
    const onExit = () => {
      done()
      reject(new Error(`${what} exited before it was ready:\n${child.output}`))
    }
    const timer = setTimeout(() => {
      done()
      reject(new Error(`${what} not ready after ${timeoutMs} ms:\n${child.output}`))
    }, timeoutMs)
    const done = () => {
      clearTimeout(timer)
      child.stdout.off('data', check)
      child.stderr.off('data', check)
      child.off('exit', onExit)
    }
    child.stdout.on('data', check)
    child.stderr.on('data', check)
    child.once('exit', onExit)
    check()
  })
}

/**
 * mosquitto with TCP_NODELAY, configured as test/support/mosquitto.ts starts it. (Listeners with
 * mount points would let the emulator and the echo responder share one broker process, but
 * mosquitto 2.0.11 delivers topics with the mount point still on them, so each gets its own.)
 */
export async function startMosquitto({ listeners = [{}] } = {}) {
  const binary = ['/usr/sbin/mosquitto', '/usr/bin/mosquitto'].find((p) => spawnSync(p, ['-h']).error === undefined)
  if (!binary) throw new Error('mosquitto is not installed (apt-get install mosquitto)')
  const dir = mkdtempSync(join(tmpdir(), 'bench-mosq-'))
  const ports = []
  const lines = [
    'per_listener_settings false',
    'allow_anonymous true',
    'set_tcp_nodelay true',
    'max_inflight_messages 0',
    'max_queued_messages 100000',
    'persistence false',
  ]
  for (const l of listeners) {
    const port = await freePort()
    ports.push(port)
    lines.push(`listener ${port} 127.0.0.1`)
    if (l.mountPoint) lines.push(`mount_point ${l.mountPoint}`)
  }
  writeFileSync(join(dir, 'mosquitto.conf'), lines.join('\n') + '\n')
  const child = launch(binary, ['-c', join(dir, 'mosquitto.conf')])
  for (const port of ports) await waitForPort(port, 5000, 'mosquitto')
  return { child, urls: ports.map((p) => `mqtt://127.0.0.1:${p}`), stop: () => child.stop() }
}

/**
 * The emulator CLI in its own process: `{ brokerUrl }` serves through a broker, else its embedded one.
 * To look inside it during a benchmark: BENCH_EMULATOR_NODE_ARGS (e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`
 * or `--trace-gc`) is added to its node flags, and with BENCH_EMULATOR_OUTPUT=<file> what it printed is
 * written there when it stops.
 */
export async function startEmulatorProcess({
  brokerUrl,
  nodeArgs = [],
  persistFile,
  env,
  cli = join(ROOT, 'dist/src/emulator/cli/main.js'),
} = {}) {
  const args = brokerUrl ? ['--broker', brokerUrl] : ['--listen', '127.0.0.1:0']
  if (persistFile) args.push('--persist', persistFile)
  const extra = (process.env.BENCH_EMULATOR_NODE_ARGS ?? '').split(' ').filter(Boolean)
  const child = launch(
    process.execPath,
    [...extra, ...nodeArgs, cli, ...args, '--log-level', 'warn'],
    env ? { env } : {},
  )
  const m = await waitForOutput(child, /ready on (mqtt:\/\/\S+)/, 60000, 'emulator')
  const output = process.env.BENCH_EMULATOR_OUTPUT
  return {
    child,
    url: m[1],
    stop: async () => {
      await child.stop()
      if (output) writeFileSync(output, child.output)
    },
  }
}

/** The echo responder (bench/lib/echo-responder.mjs) in its own process. */
export async function startEchoProcess({ brokerUrl, nodeArgs = [] } = {}) {
  const args = brokerUrl ? ['--broker', brokerUrl] : ['--listen']
  const child = launch(process.execPath, [...nodeArgs, join(BENCH_DIR, 'lib/echo-responder.mjs'), ...args])
  const m = await waitForOutput(child, /echo ready on (mqtt:\/\/\S+)/, 15000, 'echo responder')
  return { child, url: m[1], stop: () => child.stop() }
}

/** redis-server on a free loopback port, nothing saved; null when it is not installed. */
export async function startRedis() {
  const binary = ['/usr/bin/redis-server', '/usr/local/bin/redis-server'].find(
    (p) => spawnSync(p, ['--version']).error === undefined,
  )
  if (!binary) return null
  const port = await freePort()
  const child = launch(binary, [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--protected-mode',
    'no',
  ])
  await waitForPort(port, 5000, 'redis-server')
  return { child, port, url: `redis://127.0.0.1:${port}`, stop: () => child.stop() }
}

/** CPU time (user + system) a process has used so far, in ms, from /proc (10 ms steps). */
export function cpuMsOf(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  // Fields after the command name, which is in parentheses and may hold spaces: utime and stime are the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
}

/** Resident set size of a process, in bytes, from /proc. */
export function rssOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const m = /VmRSS:\s+(\d+) kB/.exec(status)
  return m ? Number(m[1]) * 1024 : NaN
}

#!/usr/bin/env node
// CPU load of our own making, for running tests, the chaos harness and benchmarks on a busy
// machine: N child processes that each spin on the CPU until stopped. No system package needed.
//
//   node scripts/cpu-load.mjs 8 -- npm test     runs the command beside 8 busy processes, prints
//                                                 the load average it ran at, exits with its code
//
// From code: `const load = startCpuLoad(8); …; const seen = await load.stop()`.
import { spawn } from 'node:child_process'
import { loadavg } from 'node:os'
import { pathToFileURL } from 'node:url'

const SPIN = 'for(;;){for(let i=0;i<1e7;i++);}'

/**
 * Starts `n` busy processes (0 starts none). They stop with `stop()`, and when this process exits.
 * `stop()` resolves with the 1-minute load averages seen while they ran (first, highest, last).
 */
export function startCpuLoad(n) {
  const count = Math.max(0, Math.floor(Number(n) || 0))
  const children = []
  for (let i = 0; i < count; i++) {
    const child = spawn(process.execPath, ['-e', SPIN], { stdio: 'ignore' })
    child.unref()
    children.push(child)
  }
  const killAll = () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  }
  process.once('exit', killAll)
  const first = loadavg()[0]
  let highest = first
  const sampler = setInterval(() => {
    highest = Math.max(highest, loadavg()[0])
  }, 1000)
  sampler.unref()
  return {
    count,
    /** The 1-minute load average now. */
    loadAverage: () => loadavg()[0],
    async stop() {
      clearInterval(sampler)
      const last = loadavg()[0]
      highest = Math.max(highest, last)
      for (const child of children) child.ref()
      killAll()
      process.removeListener('exit', killAll)
      await Promise.all(
        children.map((child) =>
          child.exitCode !== null || child.signalCode !== null
            ? undefined
            : new Promise((resolve) => child.once('exit', resolve)),
        ),
      )
      return { first, highest, last }
    },
  }
}

/** `first–last (highest)` with two decimals, as every load figure is printed. */
export function formatLoad({ first, highest, last }) {
  return `load ${first.toFixed(2)}–${last.toFixed(2)} (highest ${highest.toFixed(2)})`
}

async function main(argv) {
  const sep = argv.indexOf('--')
  const n = argv[0]
  const command = sep >= 0 ? argv.slice(sep + 1) : []
  if (n === undefined || !/^\d+$/.test(n) || command.length === 0) {
    process.stderr.write('usage: node scripts/cpu-load.mjs N -- command [args…]\n')
    return 2
  }
  const load = startCpuLoad(Number(n))
  process.stderr.write(`cpu-load: ${load.count} busy processes beside: ${command.join(' ')}\n`)
  const code = await new Promise((resolve) => {
    const child = spawn(command[0], command.slice(1), { stdio: 'inherit', shell: process.platform === 'win32' })
    child.once('exit', (status, signal) => resolve(status ?? (signal ? 1 : 0)))
    child.once('error', () => resolve(127))
  })
  const seen = await load.stop()
  process.stderr.write(`cpu-load: ${load.count} busy processes, ${formatLoad(seen)}\n`)
  return code
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.exitCode = await main(process.argv.slice(2))
}

/**
 * One time scale for every limit in the suite: mocha's timeouts, the waits in wait.ts, the browser's
 * page timeouts and the fuzz test's budget are written for a quiet machine and stretched here by one
 * factor, so that load alone never overruns a limit and a limit still catches a hang.
 *
 *   factor = TEST_TIME_SCALE (default 1) × how much slower than a quiet reference machine this one
 *            runs: its CPU speed, times the share of a core it gets (measured at start with a short
 *            piece of work, CPU time against wall time), raised later whenever the load average per
 *            core says the machine got busier. It never falls during a run, and is at most 50.
 *
 * On a quiet machine like the reference the factor is 1 and every limit is what the test says.
 */
import { createHash } from 'node:crypto'
import { availableParallelism, loadavg } from 'node:os'

/** CPU milliseconds the work below takes on the reference machine (2 cores, quiet). */
const REFERENCE_CPU_MS = 20
const MAX_FACTOR = 50
const ROUNDS = 5

export interface TimeScale {
  /** The factor every limit is multiplied by now. */
  factor: number
  /** TEST_TIME_SCALE. */
  requested: number
  /** CPU time of the work against the reference's (≥ 1). */
  speed: number
  /** Wall time of the work against its CPU time, at start (≥ 1). */
  contention: number
  /** The highest 1-minute load average per core seen so far. */
  loadPerCore: number
}

let state: TimeScale | null = null

/** TEST_TIME_SCALE, read as a positive number (1 when unset). */
export function requestedScale(raw = process.env.TEST_TIME_SCALE): number {
  if (raw === undefined || raw === '') return 1
  const n = Number(raw)
  if (!Number.isFinite(n) || n <= 0)
    throw new Error(`TEST_TIME_SCALE must be a positive number, not ${JSON.stringify(raw)}`)
  return n
}

/** A fixed piece of CPU work (hashing and JSON, like the suite's own), timed in CPU and wall time. */
function measure(): { speed: number; contention: number } {
  const block = Buffer.alloc(4096, 7)
  const cpuMs: number[] = []
  let wallMs = 0
  let totalCpuMs = 0
  for (let round = 0; round < ROUNDS; round++) {
    const cpu0 = process.cpuUsage()
    const wall0 = process.hrtime.bigint()
    let x = 0
    for (let i = 0; i < 3000; i++) {
      x ^= createHash('sha256').update(block).digest()[0]!
      x ^= (JSON.parse(JSON.stringify({ i, s: `k${i}` })) as { i: number }).i
    }
    const cpu = process.cpuUsage(cpu0)
    const wall = Number(process.hrtime.bigint() - wall0) / 1e6
    const used = (cpu.user + cpu.system) / 1000 + (x === -1 ? 1 : 0)
    cpuMs.push(used)
    totalCpuMs += used
    wallMs += wall
  }
  cpuMs.sort((a, b) => a - b)
  return {
    speed: Math.max(1, cpuMs[Math.floor(ROUNDS / 2)]! / REFERENCE_CPU_MS),
    contention: Math.max(1, wallMs / Math.max(totalCpuMs, 1)),
  }
}

function loadPerCore(): number {
  return loadavg()[0]! / availableParallelism()
}

/** The factor from its parts: the request, times the speed, times the worse of contention and load (at least 1); at most 50. */
export function factorOf(s: Omit<TimeScale, 'factor'>): number {
  return Math.min(MAX_FACTOR, s.requested * s.speed * Math.max(s.contention, s.loadPerCore, 1))
}

/** The time scale now: measured on first use, raised (never lowered) as the load average rises. */
export function timeScale(): TimeScale {
  if (!state) {
    const { speed, contention } = measure()
    const partial = { requested: requestedScale(), speed, contention, loadPerCore: loadPerCore() }
    state = { ...partial, factor: factorOf(partial) }
  } else {
    const seen = loadPerCore()
    if (seen > state.loadPerCore) {
      state.loadPerCore = seen
      state.factor = Math.max(state.factor, factorOf(state))
    }
  }
  return state
}

/** The longest delay a timer takes (Node.js makes a longer one fire at once). */
const MAX_TIMER_MS = 2 ** 31 - 1

/** `ms` on a quiet reference machine, stretched to this machine's pace now. 0 (no limit) stays 0. */
export function scaled(ms: number): number {
  if (ms <= 0) return ms
  return Math.min(MAX_TIMER_MS, Math.round(ms * timeScale().factor))
}

/** For a message: `8000 ms`, or `19200 ms (8000 ms × 2.40)` when the limit was stretched. */
export function describeLimit(ms: number, limit: number): string {
  return limit === ms ? `${ms} ms` : `${limit} ms (${ms} ms × ${(limit / ms).toFixed(2)})`
}

/** One line for the run's log: the factor and what it came from. */
export function describeTimeScale(): string {
  const s = timeScale()
  const parts = [
    `×${s.factor.toFixed(2)}`,
    `CPU speed ${s.speed.toFixed(2)}`,
    `contention at start ${s.contention.toFixed(2)}`,
    `load per core ${s.loadPerCore.toFixed(2)}`,
  ]
  if (s.requested !== 1) parts.push(`TEST_TIME_SCALE ${s.requested}`)
  return `time scale ${parts.join(', ')}`
}

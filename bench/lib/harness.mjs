// Shared benchmark harness: interleaved rounds, paired ratios, tables, JSON results.
//
// The machines are shared and noisy, so no absolute figure is trusted on its own: every variant is
// measured in the same round as its reference, one after the other (A B A B …), and what is reported
// is the median over rounds of the per-round ratio, with its min–max. Pairing per round cancels most
// of the drift caused by other processes on the machine.
import { mkdirSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const BENCH_DIR = dirname(dirname(fileURLToPath(import.meta.url)))
export const ROOT = dirname(BENCH_DIR)
export const RESULTS_DIR = join(BENCH_DIR, 'results')
/** The load average when this benchmark's process started; results carry it and the one at the end. */
const START_LOAD = os.loadavg()

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

// ---------- statistics ----------

export function quantile(sorted, q) {
  if (sorted.length === 0) return NaN
  const at = (sorted.length - 1) * q
  const lo = Math.floor(at)
  const hi = Math.ceil(at)
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (at - lo)
}

/** Median, min and max of a list of numbers. */
export function summarize(values) {
  const sorted = [...values].sort((a, b) => a - b)
  return { median: quantile(sorted, 0.5), min: sorted[0], max: sorted[sorted.length - 1], samples: values }
}

/** Latency percentiles (input in ms, any order). */
export function percentiles(valuesMs) {
  const sorted = Float64Array.from(valuesMs).sort()
  return { p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99), max: sorted[sorted.length - 1], n: sorted.length }
}

// ---------- interleaving ----------

/**
 * Runs `measure(variant, round)` for every variant in every round, in the order given (A B A B …),
 * after `warmup` unrecorded rounds. `measure` returns a number, or an object of numbers (several
 * metrics from one run, e.g. p50 and p99). Returns, per variant and metric, the summary, and for
 * every non-reference variant the summary of its per-round ratio to the reference.
 */
export async function interleave({ variants, reference = variants[0], rounds = 5, warmup = 1, measure, onRound }) {
  const samples = new Map(variants.map((v) => [v, []]))
  for (let r = -warmup; r < rounds; r++) {
    for (const v of variants) {
      const value = await measure(v, r)
      if (r >= 0) samples.get(v).push(value)
    }
    if (r >= 0 && onRound) onRound(r, samples)
  }
  const metricsOf = (x) => (typeof x === 'number' ? { value: x } : x)
  const out = {}
  for (const v of variants) {
    const runs = samples.get(v).map(metricsOf)
    const refRuns = samples.get(reference).map(metricsOf)
    out[v] = {}
    for (const metric of Object.keys(runs[0])) {
      const values = runs.map((m) => m[metric])
      const entry = summarize(values)
      if (v !== reference) entry.ratio = summarize(values.map((x, i) => x / refRuns[i][metric]))
      out[v][metric] = entry
    }
  }
  return out
}

// ---------- micro-benchmark loop ----------

/**
 * Runs a synchronous function for about `ms` milliseconds in batches sized so the clock is read
 * rarely; returns the operations done and the milliseconds taken. `fn(i)` returns its result, which
 * is kept so the optimizer cannot drop the work.
 */
export function runFor(fn, ms) {
  let runner = runners.get(fn)
  if (!runner) {
    // Each function gets its own compiled loop: a loop shared by all variants would see many
    // callees, stop inlining them, and add an indirect call to every operation of every variant.
    const loop = new Function(
      'fn',
      'ms',
      'batch',
      'keep',
      `let ops = 0, elapsed = 0
       const t0 = process.hrtime.bigint()
       do {
         for (let i = 0; i < batch; i++) keep[i & 7] = fn(i)
         ops += batch
         elapsed = Number(process.hrtime.bigint() - t0) / 1e6
       } while (elapsed < ms)
       return { ops, ms: elapsed }`,
    )
    // Calibrate the batch to about a tenth of a millisecond.
    let batch = 1
    while (loop(fn, 0, batch, kept).ms < 0.1) batch *= 2
    runner = (t) => loop(fn, t, batch, kept)
    runners.set(fn, runner)
  }
  return runner(ms)
}
const runners = new WeakMap()
/** Results are stored here so the optimizer cannot drop the work that made them. */
export const kept = new Array(8).fill(null)

/**
 * Operations per second of synchronous functions, interleaved finely: each round is `slices`
 * passes of A B C … of `sliceMs` each, so a burst from another process lands on every variant
 * of the round alike. Returns the same shape as `interleave` (metric `value`, ops/s).
 */
export async function interleaveOps({ fns, reference, rounds = 5, slices = 10, sliceMs = 8 }) {
  const variants = Object.keys(fns)
  for (const v of variants) runFor(fns[v], sliceMs * 2) // warm-up and calibration
  return interleave({
    variants,
    reference: reference ?? variants[0],
    rounds,
    warmup: 0,
    measure: async (v, r) => {
      // `interleave` calls variants one after the other; the fine interleaving happens here, once
      // per round, on the first variant's call, and the others read their share.
      if (v === variants[0]) {
        const acc = Object.fromEntries(variants.map((x) => [x, { ops: 0, ms: 0 }]))
        for (let s = 0; s < slices; s++) {
          for (const x of variants) {
            const { ops, ms } = runFor(fns[x], sliceMs)
            acc[x].ops += ops
            acc[x].ms += ms
          }
        }
        roundResults.set(r, acc)
      }
      const { ops, ms } = roundResults.get(r)[v]
      return (ops / ms) * 1000
    },
  })
}
const roundResults = new Map()

// ---------- formatting ----------

export function fmtNum(n, digits = 0) {
  if (n === undefined || n === null || Number.isNaN(n)) return '–'
  if (Math.abs(n) >= 1e6 && digits === 0) return Number.isInteger(n / 1e6) ? `${n / 1e6}M` : `${(n / 1e6).toFixed(2)}M`
  if (Math.abs(n) >= 1e4 && digits === 0) return Number.isInteger(n / 1e3) ? `${n / 1e3}k` : `${(n / 1e3).toFixed(1)}k`
  return n.toFixed(digits)
}

/** `median (min–max)` */
export function fmtRange(s, digits = 0, unit = '') {
  if (!s) return '–'
  return `${fmtNum(s.median, digits)}${unit} (${fmtNum(s.min, digits)}–${fmtNum(s.max, digits)})`
}

export function fmtRatio(s) {
  if (!s) return '–'
  return `${s.median.toFixed(2)}x (${s.min.toFixed(2)}–${s.max.toFixed(2)})`
}

/** A plain-text table; also returns a Markdown version for the README. */
export function table(title, header, rows) {
  const widths = header.map((h, i) => Math.max(String(h).length, ...rows.map((r) => String(r[i] ?? '').length)))
  const line = (cells) =>
    cells
      .map((c, i) => String(c ?? '').padEnd(widths[i]))
      .join('  ')
      .trimEnd()
  const text = [`\n== ${title}`, line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join(
    '\n',
  )
  const md = [
    `| ${header.join(' | ')} |`,
    `| ${header.map(() => '---').join(' | ')} |`,
    ...rows.map((r) => `| ${r.map((c) => String(c ?? '').replace(/\|/g, '\\|')).join(' | ')} |`),
  ].join('\n')
  console.log(text)
  return { title, header, rows, markdown: md }
}

// ---------- machine and results ----------

export function machineInfo() {
  const cpus = os.cpus()
  return {
    cpuModel: cpus[0]?.model,
    cpuCount: cpus.length,
    cpuMHz: cpus.map((c) => c.speed),
    totalMemBytes: os.totalmem(),
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    node: process.version,
    loadAvg: os.loadavg(),
    date: new Date().toISOString(),
  }
}

/**
 * Writes `bench/results/<name>.json` (the latest run of that benchmark) with the machine it ran on.
 * `headline` lists the figures that have a target: { metric, value, target, pass }.
 */
export function writeResult(name, { tables = [], headline = [], data = {}, notes = [] }) {
  mkdirSync(RESULTS_DIR, { recursive: true })
  const result = {
    name,
    machine: { ...machineInfo(), loadAvg: START_LOAD, loadAvgEnd: os.loadavg() },
    headline,
    notes,
    tables,
    data,
  }
  writeFileSync(join(RESULTS_DIR, `${name}.json`), JSON.stringify(result, null, 2))
  for (const n of notes) console.log(`note: ${n}`)
  return result
}

/** Command-line knobs shared by all benchmarks: `--rounds N` (at least 5), `--quick` (shorter runs, same rounds). */
export function benchArgs(argv = process.argv.slice(2)) {
  const get = (flag) => {
    const i = argv.indexOf(flag)
    return i >= 0 ? argv[i + 1] : undefined
  }
  const quick = argv.includes('--quick') || process.env.BENCH_QUICK === '1'
  const rounds = Math.max(5, Number(get('--rounds') ?? process.env.BENCH_ROUNDS ?? 5))
  return { quick, rounds, argv }
}

/**
 * `count` calls of `one(i, done)`, `window` outstanding; resolves with calls per second. A `done`
 * called synchronously (the localfilesystem store's memory cache) starts the next call from the
 * loop, not from inside itself: 2,000 nested calls overflowed the stack. `done(err)` rejects.
 */
export function windowed(count, window, one) {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    let sent = 0
    let finished = 0
    let ready = window
    let pumping = false
    const pump = () => {
      if (pumping) return
      pumping = true
      while (ready > 0 && sent < count) {
        ready -= 1
        const i = sent++
        one(i, (err) => {
          if (err) return reject(err)
          finished += 1
          if (finished === count) resolve((count / (performance.now() - started)) * 1000)
          ready += 1
          pump()
        })
      }
      pumping = false
    }
    pump()
  })
}

/** A summary figure of per-round ratios (`summarize`); `atLeast`, when given, is its target, else it is reported only. */
export function ratioFigure(metric, ratio, atLeast) {
  return {
    metric,
    value: Number(ratio.median.toFixed(3)),
    min: ratio.min,
    max: ratio.max,
    target: atLeast === undefined ? 'report (no target)' : `>= ${atLeast}x`,
    pass: atLeast === undefined || ratio.median >= atLeast,
  }
}

/**
 * Per-round ratio of two variants of one `interleave` result (any pair, not only against its
 * reference): summary of `a[metric][round] / b[metric][round]`.
 */
export function pairRatio(result, a, b, metric = 'value') {
  const x = result[a][metric].samples
  const y = result[b][metric].samples
  return summarize(x.map((v, i) => v / y[i]))
}

// `npm test`: the three test lanes side by side, each one mocha run (CONTRIBUTING.md, "The test
// lanes"): unit (no socket, no process), integration (in-process emulator, broker, client, nodes)
// and system (processes: mosquitto, the CLI, Node-RED, Chromium, the deploy kit, chaos). The
// integration and system lanes run their files in mocha's parallel mode, the slowest first (each
// file's time from the last run, test/support/spec-times.ts). A lane's output is
// printed whole when it ends, a failure's title at once; then each lane's counts and time, and
// the closing "N passed, M failed" line over all of them.
//
// Usage: node scripts/test-lanes.mjs [unit|integration|system ...] [--jobs N] [--serial] [-- mocha args]
// With TEST_TALLY set (CI), each lane's counts are added to that file too (test/support/tally.cjs).
import { spawn } from 'node:child_process'
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(import.meta.url)
const { line, runs, total } = require('../test/support/tally.cjs')

const args = process.argv.slice(2)
const extra = args.includes('--') ? args.splice(args.indexOf('--')).slice(1) : []
const option = (name, fallback) => {
  const at = args.indexOf(name)
  if (at === -1) return fallback
  const [, value] = args.splice(at, 2)
  return value
}
// Workers per parallel lane: the system lane's specs wait on processes more than they compute.
const jobs = option('--jobs', process.env.TEST_JOBS)
const jobsOf = (lane) => jobs ?? { integration: '3', system: '4' }[lane]
const serial = args.includes('--serial')
const named = args.filter((a) => !a.startsWith('--'))

/** The spec files under a folder, but those under `skip`. */
function specs(dir, skip) {
  const out = []
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`
    if (path === skip) continue
    if (entry.isDirectory()) out.push(...specs(path, skip))
    else if (entry.name.endsWith('.test.ts')) out.push(path)
  }
  return out
}

/**
 * Each file's time in the last run here (artifacts/), else as recorded in the repository: a
 * parallel lane starts its slowest files first, so that no long one runs alone at the end.
 */
const TIMES_RUN = join(ROOT, 'artifacts', 'spec-times.json')
const TIMES_KEPT = join(ROOT, 'test', 'support', 'spec-times.json')
const known = (() => {
  for (const file of [TIMES_RUN, TIMES_KEPT]) {
    if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8'))
  }
  return {}
})()
const slowestFirst = (files) => {
  const values = Object.values(known).sort((a, b) => a - b)
  const typical = values[Math.floor(values.length / 2)] ?? 0
  return files
    .map((f, i) => ({ f, i, ms: known[f] ?? typical }))
    .sort((a, b) => b.ms - a.ms || a.i - b.i)
    .map((x) => x.f)
}
const parallel = (lane) => ['--parallel', '--jobs', jobsOf(lane), '--require', 'test/support/spec-times.ts']

/**
 * Specs on node-red-node-test-helper (test/integration/nodes/support.ts): the helper is one
 * runtime per process, which a spec leaves as the next one in that process finds it, so these run
 * in one process, in one order, as they always have.
 */
const onTestHelper = (file) =>
  file.startsWith('test/integration/nodes/') || readFileSync(join(ROOT, file), 'utf8').includes("/nodes/support'")

/** Each lane's mocha runs: their specs, and how they run. */
const LANES = {
  unit: () => [['test/unit/**/*.test.ts', '--require', 'test/support/unit-guard.ts']],
  integration: () => {
    const files = specs('test/integration')
    return [
      [...slowestFirst(files.filter((f) => !onTestHelper(f))), ...parallel('integration')],
      files.filter(onTestHelper).sort(),
    ].filter((args) => args.length > 0)
  },
  system: () => {
    const files = specs('test/system', 'test/system/interop')
    return [
      [...slowestFirst(files.filter((f) => !onTestHelper(f))), ...parallel('system')],
      files.filter(onTestHelper).sort(),
    ].filter((args) => args.length > 0)
  },
}
for (const lane of named) {
  if (!LANES[lane]) {
    console.error(`no lane "${lane}": the lanes are ${Object.keys(LANES).join(', ')}`)
    process.exit(2)
  }
}
const chosen = named.length > 0 ? named : Object.keys(LANES)
const base = process.env.TEST_TALLY_LABEL ?? `Node.js ${process.versions.node}`
const scratch = mkdtempSync(join(tmpdir(), 'lanes-'))
const tally = join(scratch, 'tally')
const times = join(scratch, 'spec-times')
writeFileSync(tally, '')
writeFileSync(times, '')

/** Runs one lane, its mocha runs side by side; resolves with its seconds once it ends. */
async function run(lane) {
  const started = Date.now()
  const parts = LANES[lane]()
  const codes = await Promise.all(
    parts.map((args, i) =>
      runPart(lane, i === 0 ? `${lane} lane` : `${lane} lane, test-helper specs in one process`, args),
    ),
  )
  return { lane, seconds: Math.round((Date.now() - started) / 1000), code: codes.some((c) => c !== 0) ? 1 : 0 }
}

/** One mocha run of a lane; resolves with its exit code once it ends, its output printed whole. */
function runPart(lane, name, args) {
  const started = Date.now()
  const label = `${base}: ${name}`
  const mocha = join(ROOT, 'node_modules', 'mocha', 'bin', 'mocha.js')
  const child = spawn(process.execPath, [mocha, ...args, ...extra], {
    cwd: ROOT,
    env: { ...process.env, TEST_TALLY: tally, TEST_TALLY_LABEL: label, TEST_LANES: '1', TEST_SPEC_TIMES: times },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const out = []
  let partial = ''
  let failing = 0
  const take = (chunk) => {
    out.push(chunk)
    partial += chunk.toString()
    const lines = partial.split('\n')
    partial = lines.pop()
    for (const l of lines) {
      // The reporter prints a failure's title, then its message indented by nine spaces.
      if (/^\s+\d+\) /.test(l)) failing = 6
      else if (failing > 0 && !l.startsWith('         ')) failing = 0
      if (failing-- > 0) process.stdout.write(`[${lane} lane, failed] ${l.trim()}\n`)
    }
  }
  child.stdout.on('data', take)
  child.stderr.on('data', take)
  return new Promise((done) => {
    child.on('close', (code) => {
      const seconds = Math.round((Date.now() - started) / 1000)
      process.stdout.write(`\n--- the ${name} (${seconds} s)\n`)
      process.stdout.write(Buffer.concat(out))
      const reported = runs(tally).some((r) => r.label === label)
      if (!reported)
        appendFileSync(
          tally,
          `${JSON.stringify({ label: `${label} (ended before reporting)`, passes: 0, failures: 1, pending: 0 })}\n`,
        )
      done(code)
    })
  })
}

// Spec files run side by side, so what one of them would empty at its start is emptied here once.
rmSync(join(ROOT, 'artifacts', 'browser'), { recursive: true, force: true })

const ended = []
if (serial) for (const lane of chosen) ended.push(await run(lane))
else ended.push(...(await Promise.all(chosen.map(run))))

// This run's times, for the next run here: the slowest files first.
const measured = { ...known }
for (const line of readFileSync(times, 'utf8').split('\n').filter(Boolean)) {
  const { file, ms } = JSON.parse(line)
  measured[file] = ms
}
mkdirSync(dirname(TIMES_RUN), { recursive: true })
writeFileSync(TIMES_RUN, `${JSON.stringify(measured, Object.keys(measured).sort(), 2)}\n`)

const all = runs(tally)
process.stdout.write('\n')
for (const { lane, seconds } of ended) {
  const mine = all.filter((r) => r.label.startsWith(`${base}: ${lane} lane`))
  process.stdout.write(`  ${lane} lane: ${line(total(mine))} in ${seconds} s\n`)
}
if (process.env.TEST_TALLY) appendFileSync(process.env.TEST_TALLY, readFileSync(tally))
const sum = total(all)
process.stdout.write(`${line(sum)}\n`)
process.exitCode = sum.failures > 0 || ended.some((e) => e.code !== 0) ? 1 : 0

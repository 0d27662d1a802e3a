// `npm run bench [-- <name>… ] [--quick] [--rounds N] [--report]`: runs the benchmarks, each in a process of its
// own (one benchmark's heap, JIT state and child processes never colour the next), prints their
// tables, then a summary of every figure that has a target, and writes bench/results/summary.json.
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { BENCH_DIR, RESULTS_DIR, machineInfo, table } from './lib/harness.mjs'

/** In the order they run; each is bench/<name>.mjs. */
export const BENCHMARKS = {
  codec: 'RESP codec vs redis-parser and @redis/client (measurement 5)',
  throughput: 'client -> emulator pipelined throughput and sequential latency vs the echo limit (measurements 1, 2)',
  memory: 'emulator memory per key vs redis-server used_memory (measurement 6)',
  scale: 'throughput as connections and keys grow (measurement 7)',
  watch: 'notification latency and fan-out, 1,000 watched keys at 2,000 SETs/s (measurement 4)',
  nodered: 'Node-RED flow throughput vs node-red-contrib-redis, and ss-watch latency (measurements 3, 4)',
  context:
    'context store: cached sync get vs the memory store, set throughput vs localfilesystem and ss-set, a 10,000-set burst counted',
  sidebar:
    'editor sidebar: messages/s and runtime CPU with the tab open at 2,000 SETs/s; key browser first page at 1M keys',
  lock: "the lock's hand-off vs its floor (one notification + one SET), Lock.edit vs the SDK's algorithm on the same client, at no load and --load 6",
  import:
    'aio-statestore import of 100,000 keys vs a bare mqtt.js pipelined SET loop on the same emulator; its peak RSS',
  scan: "SCAN of 1M keys (1 % matching) vs redis-server SCAN MATCH; the emulator's event-loop block per page",
}

const args = process.argv.slice(2)
// Names are the words that are neither flags nor a flag's value (`--rounds 7`, `--rate 500`, `--baseline <dir>`).
const names = args.filter(
  (a, i) => !a.startsWith('--') && !/^\d+$/.test(a) && !(i > 0 && /^--(rounds|rate|baseline|keys)$/.test(args[i - 1])),
)
const flags = args.filter((a) => !names.includes(a))
const unknown = names.filter((n) => !(n in BENCHMARKS))
if (unknown.length > 0) {
  console.error(`unknown benchmark(s): ${unknown.join(', ')}; known: ${Object.keys(BENCHMARKS).join(', ')}`)
  process.exit(2)
}
const selected = names.length > 0 ? names : Object.keys(BENCHMARKS)

const machine = machineInfo()
console.log(
  `bench on ${machine.cpuCount} x ${machine.cpuModel}, ${(machine.totalMemBytes / 2 ** 30).toFixed(0)} GiB, node ${machine.node}, load ${machine.loadAvg.map((l) => l.toFixed(2)).join(' ')}`,
)

const ran = []
// `--report`: run nothing; rebuild the summary from the results already in bench/results/.
const reportOnly = flags.includes('--report')
for (const name of reportOnly ? [] : selected) {
  const script = join(BENCH_DIR, `${name}.mjs`)
  if (!existsSync(script)) {
    console.log(`\n## ${name}: not written yet (${BENCHMARKS[name]})`)
    ran.push({ name, status: 'missing' })
    continue
  }
  console.log(`\n## ${name}: ${BENCHMARKS[name]}`)
  const started = Date.now()
  // Bounded: no single benchmark may run away with the machine (context opens 100,000 keys twice over).
  const minutes = name === 'context' ? 12 : 5
  const r = spawnSync(process.execPath, ['--expose-gc', script, ...flags], {
    stdio: 'inherit',
    timeout: minutes * 60_000,
    killSignal: 'SIGKILL',
  })
  const seconds = (Date.now() - started) / 1000
  const status = r.status === 0 ? 'ok' : r.signal ? `killed (${r.signal})` : `exit ${r.status}`
  console.log(`## ${name}: ${status} in ${seconds.toFixed(0)} s`)
  ran.push({ name, status, seconds })
}

if (reportOnly)
  for (const name of selected)
    ran.push({ name, status: existsSync(join(RESULTS_DIR, `${name}.json`)) ? 'ok' : 'missing' })

// Summary of the figures with a target, from each benchmark's JSON.
const rows = []
const results = {}
for (const { name, status } of ran) {
  const file = join(RESULTS_DIR, `${name}.json`)
  if (status !== 'ok' || !existsSync(file)) {
    rows.push([name, status, '', '', '', ''])
    continue
  }
  const result = JSON.parse(readFileSync(file, 'utf8'))
  results[name] = result
  for (const h of result.headline ?? []) {
    rows.push([name, h.metric, shownValue(h), h.target, h.pass ? 'yes' : 'NO', loadOf(result)])
  }
}
table(
  'Summary: figures with a target (median of the rounds, min–max of the rounds)',
  ['benchmark', 'figure', 'value', 'target', 'met', 'load'],
  rows,
)
mkdirSync(RESULTS_DIR, { recursive: true })
writeFileSync(join(RESULTS_DIR, 'summary.json'), JSON.stringify({ machine, ran, results }, null, 2))
writeFileSync(join(RESULTS_DIR, 'summary.md'), markdown(machine, ran, results))
console.log(
  `\nresults: ${RESULTS_DIR}/<name>.json, summary.json, summary.md (the tables in Markdown, for bench/README.md)`,
)

/** The 1-minute load average over the benchmark that measured a figure: at its start – at its end. */
function loadOf(result) {
  const { loadAvg, loadAvgEnd } = result.machine ?? {}
  if (!loadAvg) return ''
  return loadAvgEnd ? `${loadAvg[0].toFixed(1)}–${loadAvgEnd[0].toFixed(1)}` : loadAvg[0].toFixed(1)
}

/** The median over the rounds, and their min–max when the figure has them. */
function shownValue(h) {
  if (typeof h.value !== 'number') return h.value
  const unit = h.unit ?? 'x'
  const range =
    typeof h.min === 'number' && typeof h.max === 'number' ? ` (${+h.min.toFixed(3)}–${+h.max.toFixed(3)})` : ''
  return `${h.value}${unit}${range}`
}

function markdown(m, runs, all) {
  const out = [
    `${reportOnly ? 'Summary written' : 'Run of'} ${m.date}: ${m.cpuCount} x ${m.cpuModel}, ${(m.totalMemBytes / 2 ** 30).toFixed(0)} GiB, ${m.platform}, Node.js ${m.node}, load average at start ${m.loadAvg.map((l) => l.toFixed(2)).join(' ')}.`,
    '',
    runs.map((r) => `${r.name}: ${r.status}${r.seconds ? ` (${r.seconds.toFixed(0)} s)` : ''}`).join(', '),
    '',
  ]
  out.push(
    '### Summary',
    '',
    'load: the 1-minute load average at the start and at the end of the benchmark that measured the figure.',
    '',
    '| benchmark | figure | value | target | met | load |',
    '| --- | --- | --- | --- | --- | --- |',
  )
  for (const [name, result] of Object.entries(all)) {
    for (const h of result.headline ?? [])
      out.push(
        `| ${name} | ${h.metric} | ${shownValue(h)} | ${h.target} | ${h.pass ? 'yes' : '**no**'} | ${loadOf(result)} |`,
      )
  }
  for (const [name, result] of Object.entries(all)) {
    const rm = result.machine
    out.push(
      '',
      `### ${name}`,
      '',
      `Run ${rm.date}, Node.js ${rm.node}, load average at its start ${rm.loadAvg.map((l) => l.toFixed(2)).join(' ')}${rm.loadAvgEnd ? `, at its end ${rm.loadAvgEnd.map((l) => l.toFixed(2)).join(' ')}` : ''}.`,
      '',
    )
    for (const t of result.tables ?? []) out.push(`${t.title}`, '', t.markdown, '')
    for (const n of result.notes ?? []) out.push(`- ${n}`)
  }
  return out.join('\n') + '\n'
}
process.exitCode = ran.some((r) => r.status !== 'ok' && r.status !== 'missing') ? 1 : 0

/**
 * npm run chaos -- [--seed S] [--seconds N] [--faults kind,kind] [--load N] | --help
 * Prints each round's fault schedule (replay a failure with its seed), every violation with the
 * history that shows it, the load average the run saw, and last `chaos: <ops> operations checked in
 * <n> fault schedules (<kinds>), <a> failures allowed, <i> indeterminate, <v> violations`.
 * `--load N` runs N busy processes of its own beside the run (scripts/cpu-load.mjs), started
 * before the first round and stopped after the last.
 */
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { FAULT_KINDS, type FaultKind } from '../../support/faults'
import { describeKinds, runChaos } from './run'

interface LoadSeen {
  first: number
  highest: number
  last: number
}
interface CpuLoad {
  startCpuLoad(n: number): { count: number; stop(): Promise<LoadSeen> }
  formatLoad(seen: LoadSeen): string
}

const USAGE = `usage: npm run chaos -- [--seed <integer>] [--seconds <n>] [--faults <kind,kind>] [--load <n>]

Runs seeded fault schedules against the emulator, the client, the context store and Node-RED lock
flows, checks every history, and prints each round's schedule (replay a failure with its seed) and
every violation.

  --seed <integer>    the schedule's seed (default: a random one, printed)
  --seconds <n>       how long to run (default: 30)
  --faults <kinds>    the faults to draw from, comma-separated (default: all): ${FAULT_KINDS.join(', ')}
  --load <n>          busy processes of its own beside the run (default: 0)
  -h, --help          this text`

/** A command line error: its line, then the usage, on stderr, and exit code 2. */
function refuse(problem: string): never {
  console.error(`${problem}\n\n${USAGE}`)
  process.exit(2)
}

function options(): ReturnType<typeof parse> {
  try {
    return parse()
  } catch (err) {
    // parseArgs names the option it does not know (ERR_PARSE_ARGS_UNKNOWN_OPTION) or the value it misses.
    return refuse((err as Error).message)
  }
}
function parse() {
  return parseArgs({
    options: {
      seed: { type: 'string' },
      seconds: { type: 'string' },
      faults: { type: 'string' },
      load: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  })
}

const { values } = options()
if (values.help) {
  console.log(USAGE)
  process.exit(0)
}
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed)
const seconds = Number(values.seconds ?? 30)
const load = Number(values.load ?? 0)
const faults = values.faults ? values.faults.split(',').map((k) => k.trim()) : [...FAULT_KINDS]
const unknown = faults.filter((k) => !(FAULT_KINDS as readonly string[]).includes(k))
if (unknown.length > 0) refuse(`unknown fault kinds: ${unknown.join(', ')}`)
if (!Number.isSafeInteger(seed) || !(seconds > 0) || !Number.isSafeInteger(load) || load < 0) {
  refuse('--seed takes an integer, --seconds a number above 0, --load a whole number')
}

async function main(): Promise<number> {
  const { startCpuLoad, formatLoad } = (await import(
    pathToFileURL(join(__dirname, '..', '..', '..', 'scripts', 'cpu-load.mjs')).href
  )) as CpuLoad
  const startedAt = Date.now()
  const busy = startCpuLoad(load)
  console.log(`chaos: seed ${seed}, ${seconds} s, ${busy.count} busy processes of our own beside it`)
  try {
    const report = await runChaos({ seed, seconds, faults: faults as FaultKind[], log: (line) => console.log(line) })
    const seen = await busy.stop()
    console.log(
      `faults applied: ${[...report.faults].map(([k, n]) => `${k} ${n}`).join(', ')}; failures allowed by fault: ${describeKinds(report.judged.byKind)}; ${report.unchecked} key histories beyond the search budget; ${Math.round((Date.now() - startedAt) / 1000)} s in all`,
    )
    console.log(`ran with ${busy.count} busy processes at ${formatLoad(seen)}`)
    console.log(report.line)
    return report.violations.length > 0 ? 1 : 0
  } catch (err) {
    await busy.stop()
    throw err
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err)
    process.exit(2)
  },
)

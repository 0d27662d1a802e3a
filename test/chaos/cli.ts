/**
 * npm run chaos -- --seed S --seconds N [--faults kind,kind] [--load N]
 * Prints each round's fault schedule (replay a failure with its seed), every violation with the
 * history that shows it, the load average the run saw, and last `chaos: <ops> operations checked in
 * <n> fault schedules (<kinds>), <a> failures allowed, <i> indeterminate, <v> violations`.
 * `--load N` runs N busy processes of its own beside the run (scripts/cpu-load.mjs), started
 * before the first round and stopped after the last.
 */
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { FAULT_KINDS, type FaultKind } from '../support/faults'
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

const { values } = parseArgs({ options: { seed: { type: 'string' }, seconds: { type: 'string' }, faults: { type: 'string' }, load: { type: 'string' } } })
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed)
const seconds = Number(values.seconds ?? 30)
const load = Number(values.load ?? 0)
const faults = values.faults ? values.faults.split(',').map((k) => k.trim()) : [...FAULT_KINDS]
const unknown = faults.filter((k) => !(FAULT_KINDS as readonly string[]).includes(k))
if (!Number.isSafeInteger(seed) || !(seconds > 0) || !Number.isSafeInteger(load) || load < 0 || unknown.length > 0) {
  console.error(
    `usage: npm run chaos -- --seed <integer> --seconds <n> [--faults ${FAULT_KINDS.join(',')}] [--load <busy processes>]${unknown.length ? `\nunknown fault kinds: ${unknown.join(', ')}` : ''}`,
  )
  process.exit(2)
}

async function main(): Promise<number> {
  const { startCpuLoad, formatLoad } = (await import(pathToFileURL(join(__dirname, '..', '..', 'scripts', 'cpu-load.mjs')).href)) as CpuLoad
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

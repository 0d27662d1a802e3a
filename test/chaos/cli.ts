/**
 * npm run chaos -- --seed S --seconds N [--faults kind,kind]
 * Prints each round's fault schedule (replay a failure with its seed), every violation with the
 * history that shows it, and last `chaos: <ops> operations checked in <n> fault schedules (<kinds>), <v> violations`.
 */
import { parseArgs } from 'node:util'
import { FAULT_KINDS, type FaultKind } from '../support/faults'
import { runChaos } from './run'

const { values } = parseArgs({ options: { seed: { type: 'string' }, seconds: { type: 'string' }, faults: { type: 'string' } } })
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed)
const seconds = Number(values.seconds ?? 30)
const faults = values.faults ? values.faults.split(',').map((k) => k.trim()) : [...FAULT_KINDS]
const unknown = faults.filter((k) => !(FAULT_KINDS as readonly string[]).includes(k))
if (!Number.isSafeInteger(seed) || !(seconds > 0) || unknown.length > 0) {
  console.error(
    `usage: npm run chaos -- --seed <integer> --seconds <n> [--faults ${FAULT_KINDS.join(',')}]${unknown.length ? `\nunknown fault kinds: ${unknown.join(', ')}` : ''}`,
  )
  process.exit(2)
}

const startedAt = Date.now()
runChaos({ seed, seconds, faults: faults as FaultKind[], log: (line) => console.log(line) }).then(
  (report) => {
    console.log(
      `faults applied: ${[...report.faults].map(([k, n]) => `${k} ${n}`).join(', ')}; ${report.unchecked} key histories beyond the search budget; ${Math.round((Date.now() - startedAt) / 1000)} s in all`,
    )
    console.log(report.line)
    process.exit(report.violations.length > 0 ? 1 : 0)
  },
  (err: unknown) => {
    console.error(err)
    process.exit(2)
  },
)

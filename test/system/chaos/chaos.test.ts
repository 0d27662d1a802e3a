/**
 * A short chaos run with a fixed seed, part of npm test: two fault schedules over every fault
 * kind while the requests, locks, watches, context store and Node-RED ss-lock workloads run, every
 * history checked (about 25 s, the two Node-RED runtimes' start included). The long runs are
 * `npm run chaos` (docs/reliability.md). Needs mosquitto, the built emulator CLI and the built nodes.
 */
import assert from 'node:assert/strict'
import { requireMosquitto } from '../../support/mosquitto'
import { runChaos } from './run'

describe('chaos: a fixed-seed run under every kind of fault', function () {
  this.timeout(120_000)

  it('checks the histories of two fault schedules and finds no violation', async function () {
    requireMosquitto(this)
    const lines: string[] = []
    const report = await runChaos({ seed: 7, seconds: 16, roundMs: 8000, log: (line) => lines.push(line) })
    assert.equal(report.schedules, 2)
    assert.ok(report.operations > 500, `operations checked: ${report.operations}`)
    assert.ok(report.faults.size >= 3, `fault kinds applied: ${[...report.faults.keys()].join(', ')}`)
    assert.deepEqual(report.violations, [], lines.join('\n'))
    assert.match(
      report.line,
      /^chaos: \d+ operations checked in 2 fault schedules \([a-z-]+(, [a-z-]+)*\), \d+ failures allowed, \d+ indeterminate, 0 violations$/,
    )
  })
})

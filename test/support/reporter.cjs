'use strict'
// The spec reporter, plus the plain closing line CI reads: "N passed, M failed[, K skipped]". With
// TEST_TALLY set, the counts are also added to that file (see tally.cjs), labelled TEST_TALLY_LABEL.
// A failure's message is also printed where it happens, so a run stopped before its end (a CI time
// limit, a busy machine) still says what failed and why; the tally keeps each failure's title and
// first line, so CI's closing lines name them too.
const Mocha = require('mocha')
const { line, record } = require('./tally.cjs')
const { EVENT_RUN_END, EVENT_TEST_FAIL } = Mocha.Runner.constants

class CountingReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options)
    const failed = []
    runner.on(EVENT_TEST_FAIL, (test, err) => {
      const lines = String((err && (err.message || err)) || 'failed')
        .split('\n')
        .filter((l) => l.trim())
      failed.push(`${test.fullTitle()}: ${lines[0] || 'failed'}`.slice(0, 400))
      const message = lines
        .slice(0, 6)
        .map((l) => `         ${l}`)
        .join('\n')
      process.stdout.write(`${message}\n`)
    })
    runner.once(EVENT_RUN_END, () => {
      const { passes, failures, pending } = runner.stats
      const run = {
        label: process.env.TEST_TALLY_LABEL || `Node.js ${process.versions.node}`,
        passes,
        failures,
        pending,
        failed,
      }
      if (process.env.TEST_TALLY) record(process.env.TEST_TALLY, run)
      process.stdout.write(`\n${line(run)}\n`)
    })
  }
}
module.exports = CountingReporter

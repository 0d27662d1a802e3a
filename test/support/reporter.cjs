'use strict'
// The spec reporter, plus the plain closing line CI reads: "N passed, M failed[, K skipped]". With
// TEST_TALLY set, the counts are also added to that file (see tally.cjs), labelled TEST_TALLY_LABEL.
const Mocha = require('mocha')
const { line, record } = require('./tally.cjs')
const { EVENT_RUN_END } = Mocha.Runner.constants

class CountingReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options)
    runner.once(EVENT_RUN_END, () => {
      const { passes, failures, pending } = runner.stats
      const run = { label: process.env.TEST_TALLY_LABEL || `Node.js ${process.versions.node}`, passes, failures, pending }
      if (process.env.TEST_TALLY) record(process.env.TEST_TALLY, run)
      process.stdout.write(`\n${line(run)}\n`)
    })
  }
}
module.exports = CountingReporter

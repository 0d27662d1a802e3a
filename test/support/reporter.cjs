'use strict'
// The spec reporter, plus the plain closing line CI reads: "N passed, M failed[, K skipped]".
const Mocha = require('mocha')
const { EVENT_RUN_END } = Mocha.Runner.constants

class CountingReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options)
    runner.once(EVENT_RUN_END, () => {
      const { passes, failures, pending } = runner.stats
      const skipped = pending ? `, ${pending} skipped` : ''
      process.stdout.write(`\n${passes} passed, ${failures} failed${skipped}\n`)
    })
  }
}
module.exports = CountingReporter

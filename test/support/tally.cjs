'use strict'
// Test counts across runs (CI's run on the `node` devDependency and its Node.js 20 run): each run's
// reporter appends a line to the file named by TEST_TALLY; `node test/support/tally.cjs FILE` prints
// every run with the titles of its failed tests, then the closing line CI reads, over all of them:
// "N passed, M failed[, K skipped]".
const { appendFileSync, readFileSync } = require('node:fs')

function line({ passes, failures, pending }) {
  return `${passes} passed, ${failures} failed${pending ? `, ${pending} skipped` : ''}`
}

function record(file, run) {
  appendFileSync(file, `${JSON.stringify(run)}\n`)
}

function runs(file) {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
}

function total(all) {
  return all.reduce(
    (sum, r) => ({
      passes: sum.passes + r.passes,
      failures: sum.failures + r.failures,
      pending: sum.pending + r.pending,
    }),
    {
      passes: 0,
      failures: 0,
      pending: 0,
    },
  )
}

module.exports = { line, record, runs, total }

if (require.main === module) {
  const all = runs(process.argv[2])
  for (const r of all) {
    process.stdout.write(`  ${r.label}: ${line(r)}\n`)
    for (const f of r.failed ?? []) process.stdout.write(`    failed: ${f}\n`)
  }
  process.stdout.write(`${line(total(all))}\n`)
}

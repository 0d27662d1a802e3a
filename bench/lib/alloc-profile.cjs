// Bench-only allocation profile of a process, loaded with `node --require` (e.g. into the emulator:
// BENCH_EMULATOR_NODE_ARGS="--require bench/lib/alloc-profile.cjs"): V8's sampling heap profiler with
// the objects later collected kept in, so it shows where garbage comes from, not only what stays.
// On exit (or SIGTERM/SIGINT) the profile goes to $ALLOC_PROFILE_DIR (default the OS temp dir) as
// alloc-<pid>.heapprofile; `node bench/lib/alloc-report.mjs <file>` sums it by allocating function.
'use strict'
const inspector = require('node:inspector')
const { writeFileSync } = require('node:fs')
const { tmpdir } = require('node:os')
const { join } = require('node:path')

const session = new inspector.Session()
session.connect()
session.post('HeapProfiler.enable')
session.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true })
let written = false
function write() {
  if (written) return
  written = true
  // The inspector session answers synchronously within the process.
  session.post('HeapProfiler.stopSampling', (err, result) => {
    if (!err) writeFileSync(join(process.env.ALLOC_PROFILE_DIR || tmpdir(), `alloc-${process.pid}.heapprofile`), JSON.stringify(result.profile))
  })
}
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    write()
    process.exit(0)
  })
}
process.on('exit', write)

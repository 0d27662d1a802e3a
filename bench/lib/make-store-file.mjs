// Writes an emulator persistence file holding n keys (16-byte keys, 100-byte values) through the
// emulator's own Keyspace and Journal, so an emulator started with `--persist <file>` holds
// them from its first request: loading a million keys through MQTT would take minutes here.
//   node bench/lib/make-store-file.mjs <file> <n>
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { ROOT } from './harness.mjs'
import { keyOf, VALUE_100 } from './load.mjs'

const require = createRequire(import.meta.url)
const { Keyspace } = require(join(ROOT, 'dist/src/emulator/core/keyspace'))
const { Journal } = require(join(ROOT, 'dist/src/emulator/journal/journal'))
const { HybridLogicalClock } = require(join(ROOT, 'dist/src/hlc'))

const [file, count] = process.argv.slice(2)
const store = new Keyspace({ clock: new HybridLogicalClock() })
const { journal } = await Journal.open(file, {
  snapshot: () => store.entries(),
  compactMinBytes: Number.MAX_SAFE_INTEGER,
})
store.setListener((change) => journal.record(change))
for (let i = 0; i < Number(count); i++) store.set(Buffer.from(keyOf(i)), VALUE_100, { persist: true })
await journal.whenDurable(journal.appendedSeq)
await journal.close()
store.close()

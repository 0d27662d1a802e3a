// Writes an emulator persistence file holding n keys (16-byte keys, 100-byte values) through the
// emulator's own Store and PersistenceLog, so an emulator started with `--persist <file>` holds
// them from its first request: loading a million keys through MQTT would take minutes here.
//   node bench/lib/make-store-file.mjs <file> <n>
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { ROOT } from './harness.mjs'
import { keyOf, VALUE_100 } from './load.mjs'

const require = createRequire(import.meta.url)
const { Store } = require(join(ROOT, 'dist/src/emulator/core/store'))
const { PersistenceLog } = require(join(ROOT, 'dist/src/emulator/journal/journal'))
const { HybridLogicalClock } = require(join(ROOT, 'dist/src/hlc'))

const [file, count] = process.argv.slice(2)
const store = new Store({ clock: new HybridLogicalClock() })
const { log } = await PersistenceLog.open(file, { snapshot: () => store.entries(), compactMinBytes: Number.MAX_SAFE_INTEGER })
store.setListener((change) => log.record(change))
for (let i = 0; i < Number(count); i++) store.set(Buffer.from(keyOf(i)), VALUE_100, { persist: true })
await log.whenDurable(log.appendedSeq)
await log.close()
store.close()

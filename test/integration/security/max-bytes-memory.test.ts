import assert from 'node:assert/strict'
import { StateStoreClient } from '../../../src/client'
import { ServiceError } from '../../../src/diagnostics/errors'
import { startEmulator } from '../../../src/emulator'
import { Keyspace } from '../../../src/emulator/core/keyspace'
import { HybridLogicalClock } from '../../../src/hlc'
import { heapAfterGc } from '../../support/heap'

/** What docs/emulator.md says a key costs `--max-bytes` besides its key and value bytes (no expiry, no fencing token). */
const DOCUMENTED_OVERHEAD = 160
const KEYS = 50_000

/**
 * `--max-bytes` counted 171 bytes for a key of a few bytes while the emulator held about 1 KB for it:
 * the quota let in several times the memory it names. The keyspace's own heap per key (after a full
 * collection, 50,000 keys) must stay within what the quota counts for it, and an emulator refuses the
 * SET past the count the documented cost per key gives.
 */
describe('security: --max-bytes counts what a key costs in memory', function () {
  this.timeout(120_000)

  for (const valueBytes of [8, 100]) {
    it(`the keyspace's heap for ${KEYS} keys of 12 + ${valueBytes} bytes is within the bytes the quota counts for them`, () => {
      const before = heapAfterGc()
      const store = new Keyspace({ clock: new HybridLogicalClock() })
      try {
        for (let i = 0; i < KEYS; i++)
          store.set(Buffer.from(`key/${String(i).padStart(8, '0')}`), Buffer.alloc(valueBytes, 0x61 + (i % 20)))
        const held = heapAfterGc() - before
        const counted = store.bytes
        assert.ok(
          held <= counted,
          `${Math.round(held / KEYS)} bytes of heap per key, ${Math.round(counted / KEYS)} counted by --max-bytes`,
        )
      } finally {
        store.close()
      }
    })
  }

  it('an emulator with maxBytes for 500 keys of 8 + 12 bytes takes 500 of them and refuses the next with QuotaExceeded', async () => {
    const perKey = 8 + 12 + DOCUMENTED_OVERHEAD
    const emulator = await startEmulator({
      listen: { host: '127.0.0.1', port: 0 },
      logLevel: 'error',
      maxBytes: 500 * perKey + perKey / 2,
    })
    const client = new StateStoreClient({ brokerUrl: emulator.brokerUrl, clientId: 'max-bytes-memory' })
    try {
      await client.ready({ timeoutMs: 10_000 })
      for (let i = 0; i < 500; i++) await client.set(`mb/${String(i).padStart(5, '0')}`, 'v'.repeat(12))
      await assert.rejects(
        client.set('mb/00500', 'v'.repeat(12)),
        (err: unknown) => err instanceof ServiceError && err.code === 'QuotaExceeded',
      )
      // An overwrite of the same size adds nothing and is taken.
      await client.set('mb/00000', 'w'.repeat(12))
    } finally {
      await client.close()
      await emulator.stop()
    }
  })
})

/**
 * Regression tests from two chaos-run histories (seed 20261125): with --persist, the emulator let
 * a GET and a key notification show a persistent write whose record was still being synced; a
 * kill -9 then lost the write, so a watcher kept a value the store no longer had and a reader
 * had seen a value that vanished with no DELETE (not linearizable). Now both wait for the sync:
 * here the sync is held back, and neither the read nor the notification may arrive before it.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { StateStoreClient, type KeyNotification } from '../../../src/client'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { sleep, until } from '../../support/wait'
import { holdSyncs as holdSyncsOf } from '../../support/hold-syncs'
import { ClientPool } from '../../support/clients'

describe('faults: nothing shows a persistent write before it is durable', function () {
  this.timeout(20_000)
  let dir: string
  let emulator: Emulator
  const clients = new ClientPool()
  let restoreSync: () => void = () => {}

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'durable-'))
    emulator = await startEmulator({
      listen: { host: '127.0.0.1', port: 0 },
      persistFile: join(dir, 'store.log'),
      logLevel: 'error',
    })
  })
  afterEach(async () => {
    restoreSync()
    await clients.closeAll()
    await emulator?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  async function holdSyncs(): Promise<() => void> {
    restoreSync = await holdSyncsOf(dir)
    return restoreSync
  }

  it('answers a GET of the key, and notifies its watcher, only once the SET is synced', async () => {
    const [writer, reader, watcher] = clients.add(
      ...['writer', 'reader', 'watcher'].map(
        (id) => new StateStoreClient({ brokerUrl: emulator.brokerUrl, clientId: `${id}-${process.pid}` }),
      ),
    ) as [StateStoreClient, StateStoreClient, StateStoreClient]
    await Promise.all([writer, reader, watcher].map((c) => c.ready({ timeoutMs: 5000 })))
    const told: KeyNotification[] = []
    await watcher.observe('durable/k', (n) => told.push(n))

    const release = await holdSyncs()
    const events: string[] = []
    const writing = writer.set('durable/k', 'v', { persist: true }).then(() => events.push('set answered'))
    await sleep(100)
    const reading = reader.get('durable/k').then((r) => {
      events.push(`get answered ${r.value?.toString()}`)
      return r
    })
    await sleep(400)
    assert.deepEqual(events, [], 'nothing answered while the record is not synced')
    assert.equal(told.length, 0, 'no notification while the record is not synced')

    release()
    await Promise.all([writing, reading])
    assert.deepEqual(events.sort(), ['get answered v', 'set answered'])
    await until(() => told.length === 1, 'the notification once synced')
    assert.equal(told[0]!.value?.toString(), 'v')
  })
})

/**
 * Regression test from a chaos-run history (`--faults kill-emulator --seed 20261125`, round 2):
 *
 *   c1 set {"by":"c1","n":61,…}: ok
 *   c1 set {"by":"c1","n":64,…}: unknown (SET request timed out after 2500 ms (no response))
 *   after quiescence: c0's cache holds n 61, the store n 64
 *
 * The emulator wrote the SET's record to its file and was killed before the sync ended: the answer
 * and the key notification, both waiting for the sync, died with it, while the record, in the file,
 * came back with the restart. c0 stayed connected to the broker, so nothing told it. Now an emulator
 * restarted with --persist tells each restored registration its key's current state.
 *
 * Here the same state is made on purpose: the first emulator reaches the broker through a relay;
 * syncs are held, so c1's SET is written to the file but neither answered nor notified; the relay
 * is cut (the process is gone, as the broker sees it) and a second emulator opens the same file.
 */
import assert from 'node:assert/strict'
import { isDeepStrictEqual } from 'node:util'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { StateStoreClient, type KeyNotification } from '../../../src/client'
import { Hlc } from '../../../src/hlc'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { call, contextStore, uniquePrefix, type TestStore } from '../context/support'
import { until } from '../../support/wait'
import { mqttBrokerUrl } from '../../support/broker'
import { holdSyncs } from '../../support/hold-syncs'
import { TcpRelay } from '../../support/relay'

describe('faults: a change on disk whose notification died with the emulator', function () {
  this.timeout(40_000)
  let dir: string
  let brokerUrl: string
  let relay: TcpRelay
  const emulators: Emulator[] = []
  const stores: TestStore[] = []
  let watcher: StateStoreClient | null = null
  let release: () => void = () => {}

  beforeEach(async function () {
    brokerUrl = await mqttBrokerUrl(this)
    dir = mkdtempSync(join(tmpdir(), 'notify-restart-'))
    relay = await TcpRelay.start(brokerUrl)
  })
  afterEach(async () => {
    release()
    await watcher?.close()
    await Promise.all(stores.splice(0).map((s) => s.close()))
    await Promise.all(emulators.splice(0).map((e) => e.stop()))
    await relay.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('reaches the watchers that stayed connected once the emulator is restarted with the file', async () => {
    const file = join(dir, 'store.log')
    emulators.push(await startEmulator({ brokerUrl: relay.url, persistFile: file, logLevel: 'error' }))
    const prefix = uniquePrefix()
    for (const name of ['c0', 'c1'])
      stores.push(contextStore({ broker: brokerUrl, prefix, clientId: `${name}-${process.pid}`, requestTimeout: 1500 }))
    const [c0, c1] = stores as [TestStore, TestStore]
    await Promise.all(stores.map((s) => s.open()))
    watcher = new StateStoreClient({ brokerUrl, clientId: `watcher-${process.pid}` })
    const told: KeyNotification[] = []
    await watcher.observe(`${prefix}global/c`, (n) => told.push(n))

    const before = { by: 'c1', n: 61 }
    await call((cb) => c1.set('global', 'c', before, cb))
    await until(
      () => isDeepStrictEqual(c0.get('global', 'c'), before) && told.length > 0,
      'c0 and the watcher hear of n 61',
    )

    release = await holdSyncs(dir)
    const after = { by: 'c1', n: 64 }
    const lost = call((cb) => c1.set('global', 'c', after, cb)).then(
      () => 'answered',
      () => 'failed',
    )
    await until(() => readFileSync(file).includes(JSON.stringify(after)), 'the record is in the file')
    relay.cut() // the first emulator is gone, as the broker and the clients see it
    assert.ok(
      told.every((n) => n.value?.toString() !== JSON.stringify(after)),
      'no notification came from the first emulator',
    )
    emulators.push(await startEmulator({ brokerUrl, persistFile: file, logLevel: 'error' }))
    release()
    assert.equal(await lost, 'failed', 'the answer died with the first emulator')

    await until(
      () => told.at(-1)?.value?.toString() === JSON.stringify(after),
      'the watcher is told the key holds n 64',
    )
    await until(
      () => isDeepStrictEqual(c0.get('global', 'c'), after) && isDeepStrictEqual(c1.get('global', 'c'), after),
      'both caches hold n 64',
    )
    const last = told.at(-1)!
    assert.equal(last.operation, 'SET')
    assert.equal(last.reconciled, false, 'a notification from the service, not a reconcile of the client')
    const stored = await watcher.get(`${prefix}global/c`)
    assert.ok(stored.version && last.version?.equals(stored.version), 'with the stored version')
  })

  it('tells a watcher of an in-memory key that the key is gone', async () => {
    const file = join(dir, 'store.log')
    emulators.push(await startEmulator({ brokerUrl: relay.url, persistFile: file, logLevel: 'error' }))
    watcher = new StateStoreClient({ brokerUrl, clientId: `watcher-${process.pid}` })
    const told: KeyNotification[] = []
    const key = `${uniquePrefix()}in-memory`
    await watcher.observe(key, (n) => told.push(n))
    await watcher.set(key, 'v')
    await until(() => told.length === 1, 'the SET notification')
    relay.cut()
    await emulators[0]!.stop()
    emulators.push(await startEmulator({ brokerUrl, persistFile: file, logLevel: 'error' }))
    await until(() => told.length === 2, 'a notification from the restarted emulator')
    assert.equal(told[1]!.operation, 'DELETE')
    assert.ok(
      told[1]!.version && Hlc.compare(told[1]!.version, told[0]!.version!) > 0,
      'stamped after the last version the watcher had',
    )
  })
})

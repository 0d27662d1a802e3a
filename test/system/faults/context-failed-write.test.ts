/**
 * Regression test from a chaos-run history (seed 20261125, round 1, faults kill-emulator only):
 *
 *   c0 set {"by":"c0","n":62,…}: ok
 *   c0 set {"by":"c0","n":76,…}: unknown (SET request timed out after 2500 ms (no state store
 *     service is subscribed to the request topic))
 *   after quiescence: c0's cache holds n 76, the store n 62
 *
 * A cached context store puts a value into its cache before writing it; when the write failed, the
 * cache kept it, though the service never had it (or, for a delete, kept the key gone though the
 * service still had it). Nothing made the cache read the key again: the client's connection never
 * dropped, so nothing was reconciled. Now a failed write leaves the key in doubt, and the store
 * reads it again until the cache holds what the service holds. Here the emulator (behind its own
 * broker, --persist) is stopped, the writes fail, and it is started again with the same file.
 */
import assert from 'node:assert/strict'
import { isDeepStrictEqual } from 'node:util'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { call, contextStore, uniquePrefix, type TestStore } from '../context/support'
import { until } from '../../support/wait'
import { mqttBrokerUrl } from '../../support/broker'

describe('faults: a context store whose write failed while the emulator was down', function () {
  this.timeout(40_000)
  let dir: string
  let brokerUrl: string
  let emulator: Emulator | null = null
  const stores: TestStore[] = []

  const start = () => startEmulator({ brokerUrl, persistFile: join(dir, 'store.log'), logLevel: 'error' })

  beforeEach(async function () {
    brokerUrl = await mqttBrokerUrl(this)
    dir = mkdtempSync(join(tmpdir(), 'context-failed-write-'))
    emulator = await start()
  })
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((s) => s.close()))
    await emulator?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('reads the key again until its cache, and keys(), hold what the service holds', async () => {
    const prefix = uniquePrefix()
    for (const name of ['c0', 'c1', 'truth']) {
      stores.push(
        contextStore({
          broker: brokerUrl,
          prefix,
          clientId: `${name}-${process.pid}`,
          requestTimeout: 1000,
          cache: name !== 'truth',
        }),
      )
    }
    const [c0, c1, truth] = stores as [TestStore, TestStore, TestStore]
    await Promise.all(stores.map((s) => s.open()))
    const kept = { by: 'c0', n: 62 }
    await call((cb) => c0.set('global', 'd', kept, cb))
    await call((cb) => c0.set('global', 'e', { by: 'c0', n: 63 }, cb))
    await until(
      () => isDeepStrictEqual(c1.get('global', 'd'), kept) && c1.get('global', 'e') !== undefined,
      'c1 has both keys',
    )

    await emulator!.stop()
    emulator = null
    // Neither reaches a service: the cache holds what the store does not.
    await assert.rejects(call((cb) => c0.set('global', 'd', { by: 'c0', n: 76 }, cb)))
    await assert.rejects(call((cb) => c1.set('global', 'e', undefined, cb)))
    assert.deepEqual(c0.get('global', 'd'), { by: 'c0', n: 76 }, 'the cache took the value before the write')
    assert.equal(c1.get('global', 'e'), undefined)

    emulator = await start()
    const stored = async () => ({
      d: (await call<[unknown]>((cb) => truth.get('global', 'd', cb)))[0],
      e: (await call<[unknown]>((cb) => truth.get('global', 'e', cb)))[0],
    })
    await until(async () => (await stored()).d !== undefined, 'the restarted emulator serves the stored keys')
    const expected = await stored()
    assert.deepEqual(expected, { d: kept, e: { by: 'c0', n: 63 } }, 'the failed writes were not executed')
    const agrees = (s: TestStore) =>
      isDeepStrictEqual(s.get('global', 'd'), expected.d) && isDeepStrictEqual(s.get('global', 'e'), expected.e)
    await until(() => agrees(c0) && agrees(c1), 'both caches hold what the service holds', 10_000)
    for (const s of [c0, c1]) assert.deepEqual(((s.keys('global') as string[]) ?? []).sort(), ['d', 'e'])

    // The caches follow later changes again.
    await call((cb) => c1.set('global', 'd', { by: 'c1', n: 1 }, cb))
    await until(() => isDeepStrictEqual(c0.get('global', 'd'), { by: 'c1', n: 1 }), 'c0 hears of the next change')
  })
})

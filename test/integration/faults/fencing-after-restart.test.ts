/**
 * Regression test from a chaos-run history (`--faults kill-emulator --seed 20261125`, Node-RED
 * workload, leader mode, rounds 1 and 3): a fenced write of an old holder, sent again by MQTT after
 * the emulator was killed, landed after the new holder's writes:
 *
 *   r1 token …931228:00011 landed at …931716:00034 (old process)
 *   r0 token …928152:00020 landed at …931754:00009 (restarted process)
 *
 * The protected key of the two-runtimes examples was in memory: the restart lost it, and with it
 * the token that guarded it. The fencing token lives on the key, so a key it protects must be
 * persisted for fencing to hold across a restart; the examples now persist it. Here: a persisted
 * key keeps refusing the older token after a restart with --persist, an in-memory key does not
 * (it is gone, as documented), and the examples' fenced writes persist.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { StateStoreClient } from '../../../src/client'
import { ServiceError } from '../../../src/diagnostics/errors'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { mqttBrokerUrl } from '../../support/broker'

describe('faults: a fencing token across an emulator restart with --persist', function () {
  this.timeout(30_000)
  let dir: string
  let brokerUrl: string
  let emulator: Emulator | null = null
  let client: StateStoreClient | null = null

  const start = () => startEmulator({ brokerUrl, persistFile: join(dir, 'store.log'), logLevel: 'error' })

  beforeEach(async function () {
    brokerUrl = await mqttBrokerUrl(this)
    dir = mkdtempSync(join(tmpdir(), 'fencing-restart-'))
    emulator = await start()
    client = new StateStoreClient({ brokerUrl, clientId: `fencing-restart-${process.pid}`, requestTimeoutMs: 5000 })
    await client.ready({ timeoutMs: 5000 })
  })
  afterEach(async () => {
    await client?.close()
    await emulator?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  async function restartWithTokens(persist: boolean): Promise<() => Promise<unknown>> {
    const c = client!
    // Two holders' tokens: versions of two SETs of a lease key, the second greater.
    const older = (await c.set('fenced/lease', 'r0', { persist: true })).version
    const newer = (await c.set('fenced/lease', 'r1', { persist: true })).version
    await c.set('fenced/pump', 'by r1', { fencingToken: newer, persist })
    await emulator!.stop()
    emulator = await start()
    return () => c.set('fenced/pump', 'late write of r0', { fencingToken: older, persist, timeoutMs: 5000 })
  }

  it('a persisted key keeps refusing the old holder after the restart', async () => {
    const lateWrite = await restartWithTokens(true)
    await assert.rejects(
      lateWrite(),
      (err: unknown) => err instanceof ServiceError && err.code === 'FencingTokenLowerVersion',
    )
    assert.equal((await client!.get('fenced/pump')).value?.toString(), 'by r1')
  })

  it('an in-memory key is gone after the restart, and its token with it', async () => {
    const lateWrite = await restartWithTokens(false)
    assert.equal((await client!.get('fenced/pump')).value, null)
    await lateWrite() // accepted: nothing guards the key any more
    assert.equal((await client!.get('fenced/pump')).value?.toString(), 'late write of r0')
  })

  it('the two-runtimes examples persist the key they fence', () => {
    for (const name of ['active-standby-lock', 'active-standby-leader']) {
      const flow = JSON.parse(
        readFileSync(join(__dirname, '..', '..', '..', 'examples', 'two-runtimes', `${name}.json`), 'utf8'),
      ) as Array<Record<string, unknown>>
      const fenced = flow.filter((n) => n.type === 'ss-set' && n.fencingToken)
      assert.equal(fenced.length, 1, name)
      assert.equal(fenced[0]!.persist, true, `${name}: the fenced key must outlive a restart of the service`)
    }
  })
})

/**
 * A lock or an update with its broker stopped: the cause travels as the typed ConnectionError
 * `NotConnected` within the client's connection wait, not as a TimeoutError ("lock acquire timed
 * out") when the wait's own time runs out, so that a flow can tell "the broker is down" from "busy".
 */
import assert from 'node:assert/strict'
import { StateStoreClient } from '../../../src/client'
import { Lock, updateKey } from '../../../src/locks'
import { ConnectionError } from '../../../src/diagnostics/errors'
import { startMqttBroker, type OwnBroker } from '../../support/broker'
import { ClientPool, uniqueId } from '../../support/clients'
import { until } from '../../support/wait'
import { startEmulator, type Emulator } from '../../../src/emulator'

/** nodes/ss-config.ts's default connection wait. */
const CONNECTION_WAIT_MS = 2000
/** Far longer than the connection wait: the old code failed only after this, with a TimeoutError. */
const WAIT_MS = 30_000

describe('locks with the broker stopped', function () {
  this.timeout(60_000)
  let broker: OwnBroker
  let emulator: Emulator
  const pool = new ClientPool()

  beforeEach(async function () {
    broker = await startMqttBroker(this)
    emulator = await startEmulator({ brokerUrl: broker.url, logLevel: 'error' })
  })
  afterEach(async () => {
    await pool.closeAll()
    await emulator?.stop()
    await broker?.stop()
  })

  /** A client that was connected, whose broker has then stopped. */
  async function orphaned(): Promise<StateStoreClient> {
    const c = new StateStoreClient({
      brokerUrl: broker.url,
      clientId: uniqueId('orphan'),
      connectionWaitMs: CONNECTION_WAIT_MS,
      reconnectMinMs: 100,
    })
    pool.add(c)
    await c.ready({ timeoutMs: 10_000 })
    await emulator.stop()
    await broker.stop()
    await until(() => c.status.state !== 'connected', 'the client to notice the broker is gone')
    return c
  }

  const isNotConnected = (err: unknown) => err instanceof ConnectionError && err.code === 'NotConnected'

  it('Lock.acquire fails with NotConnected, not a timeout of its own wait', async function () {
    const c = await orphaned()
    await assert.rejects(new Lock(c, uniqueId('lock')).acquire({ timeoutMs: WAIT_MS }), isNotConnected)
  })

  it('Lock.acquire with followKey (the lock node) fails with NotConnected', async function () {
    const c = await orphaned()
    await assert.rejects(
      new Lock(c, uniqueId('lock'), { followKey: true }).acquire({ timeoutMs: WAIT_MS }),
      isNotConnected,
    )
  })

  it('updateKey fails with NotConnected, not "lock acquire timed out"', async function () {
    const c = await orphaned()
    let called = false
    const update = updateKey(c, uniqueId('counter'), () => ((called = true), '1'), {
      holdValue: () => 'h:1',
      leaseMs: 5000,
      timeoutMs: WAIT_MS,
    })
    await assert.rejects(update, isNotConnected)
    assert.equal(called, false, 'nothing was computed without the lock')
  })
})

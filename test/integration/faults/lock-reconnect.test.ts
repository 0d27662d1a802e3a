/**
 * A Lock.acquire waiting for a held lock rides through its connection dropping, with the
 * connection wait of a config node: each try made while the broker is away fails with a
 * ConnectionError `notConnected` whose message says "(the connection closed)", which once made
 * the waiter give up (it decided by matching /closed/ in the message). And a waiter whose client is
 * closed fails at once with the code `closed`. A lease kept through a short loss; an edit that does
 * not write past its lease.
 */
import assert from 'node:assert/strict'
import { StateStoreClient } from '../../../src/client'
import { Lock } from '../../../src/locks'
import { ConnectionError, TimeoutError } from '../../../src/diagnostics/errors'
import { Hlc } from '../../../src/hlc'
import { sleep, until } from '../../support/wait'
import { withEmulator } from '../../support/emulator-fixture'

/** nodes/ss-config.ts's default connection wait, which ss-lock's requests get. */
const CONFIG_CONNECTION_WAIT_MS = 2000
const RECONNECT_MS = 1500

describe('faults: a lock waiter through a reconnect', function () {
  this.timeout(30_000)
  const fx = withEmulator({ relay: true })
  const { clients } = fx
  const client = (url: string, id: string, reconnectMs = 50) => {
    const c = new StateStoreClient({
      brokerUrl: url,
      clientId: `${id}-${process.pid}`,
      connectionWaitMs: CONFIG_CONNECTION_WAIT_MS,
      reconnectMinMs: reconnectMs,
      reconnectMaxMs: reconnectMs,
    })
    clients.add(c)
    return c
  }

  it('keeps waiting while its connection is down for longer than the connection wait, and acquires once the holder releases', async () => {
    const holderClient = client(fx.url, 'holder')
    const waiterClient = client(fx.relay.url, 'waiter', RECONNECT_MS)
    await Promise.all([holderClient.ready({ timeoutMs: 5000 }), waiterClient.ready({ timeoutMs: 5000 })])
    const holder = new Lock(holderClient, 'fault/reconnect', { leaseMs: 20_000 })
    const holderToken = await holder.acquire({ timeoutMs: 2000 })

    // A short lease: the waiter looks again every 300 ms, so it tries while its connection is down.
    const waiter = new Lock(waiterClient, 'fault/reconnect', { leaseMs: 300 })
    const startedAt = Date.now()
    let settled: string | null = null
    const acquiring = waiter.acquire({ timeoutMs: 15_000 }).then(
      (token) => ((settled = 'acquired'), token),
      (err: unknown) => {
        settled = `failed after ${Date.now() - startedAt} ms: ${String(err)}`
        throw err
      },
    )
    await sleep(400)

    // The broker goes away: the connection drops and the reconnects, every 1.5 s, are turned away for 3.5 s.
    fx.relay.cut()
    const downAt = Date.now()
    await sleep(2 * RECONNECT_MS + 500)
    fx.relay.restore()
    await until(() => waiterClient.status.state === 'connected', 'the waiter to reconnect', 10_000)
    const downMs = Date.now() - downAt
    assert.ok(
      downMs > CONFIG_CONNECTION_WAIT_MS,
      `the outage (${downMs} ms) outlasts the connection wait, so tries in it failed`,
    )
    assert.equal(settled, null, 'the waiter still waits')

    assert.equal(await holder.release(), true)
    const token = await acquiring
    assert.ok(Hlc.compare(token, holderToken) > 0, 'a greater fencing token than the holder had')
    await waiter.release()
  })

  it('keeps a held lease through a connection loss shorter than the lease: renewals try again', async () => {
    const c = new StateStoreClient({
      brokerUrl: fx.relay.url,
      clientId: `renewer-${process.pid}`,
      connectionWaitMs: 200,
      reconnectMinMs: 50,
      reconnectMaxMs: 100,
    })
    clients.add(c)
    const observer = client(fx.url, 'observer')
    await Promise.all([c.ready({ timeoutMs: 5000 }), observer.ready({ timeoutMs: 5000 })])
    const held = new Lock(c, 'fault/renew', { leaseMs: 4000, renewPeriodMs: 300 })
    const lost: string[] = []
    held.lease.on('lost', ({ reason }) => lost.push(reason))
    const first = await held.acquire({ timeoutMs: 2000 })
    fx.relay.cut()
    // Renewals fall due and each waits only 200 ms for the connection: they fail `NotConnected` and try again.
    await sleep(1200)
    fx.relay.restore()
    await until(
      () =>
        held.lease.fencingToken !== null &&
        Hlc.compare(held.lease.fencingToken, first) > 0 &&
        c.status.state === 'connected',
      'a renewal after the reconnect',
    )
    assert.deepEqual(lost, [])
    assert.equal((await observer.get('fault/renew')).value?.toString(), c.clientId)
    await held.release()
    await held.lease.close()
  })

  it('Lock.edit does not write once its lease may have run out, so the next holder loses no increment (chaos run, seed 20261125)', async () => {
    const [a, b] = [client(fx.url, 'slow-holder'), client(fx.url, 'next-holder')]
    await Promise.all([a.ready({ timeoutMs: 5000 }), b.ready({ timeoutMs: 5000 })])
    const counter = 'fault/counter'
    const bump = (current: Buffer | null) => String(Number(current?.toString() ?? '0') + 1)
    // A reads 0 and is held up past its 1 s lease; B takes the lock, reads 0, and is slow too; A's write would land in between.
    const slow = new Lock(a, 'fault/edit', { leaseMs: 1000 }).edit(
      counter,
      async (current) => (await sleep(1500), bump(current)),
    )
    const slowOutcome = slow.then(
      () => 'written',
      (err: unknown) => (err instanceof TimeoutError ? 'timeout' : String(err)),
    )
    await sleep(1100)
    const next = await new Lock(b, 'fault/edit', { leaseMs: 5000 }).edit(
      counter,
      async (current) => (await sleep(800), bump(current)),
      { timeoutMs: 5000 },
    )
    assert.equal(await slowOutcome, 'timeout', 'the holder past its lease does not write')
    assert.ok('applied' in next && next.applied)
    assert.equal((await b.get(counter)).value?.toString(), '1', 'one acknowledged increment, one count')
  })

  it('fails at once with the code closed when its client is closed', async () => {
    const holderClient = client(fx.url, 'holder2')
    const waiterClient = client(fx.relay.url, 'waiter2')
    await Promise.all([holderClient.ready({ timeoutMs: 5000 }), waiterClient.ready({ timeoutMs: 5000 })])
    const holder = new Lock(holderClient, 'fault/closed', { leaseMs: 20_000 })
    await holder.acquire({ timeoutMs: 2000 })
    // No timeout of its own: only the close can end this wait.
    const waiting = new Lock(waiterClient, 'fault/closed', { leaseMs: 300 }).acquire()
    await sleep(200)
    fx.relay.cut()
    await sleep(100)
    await waiterClient.close()
    await assert.rejects(waiting, (err: unknown) => err instanceof ConnectionError && err.code === 'ConnectionClosed')
    await holder.release()
  })
})

/**
 * A lease holder freezes (its connection stalls: nothing in, nothing out, no disconnect), so its
 * renewals stop reaching the service. The lease expires; the standby, waiting in Lock.acquire,
 * takes it with a greater fencing token and writes the protected key with it. When the old holder
 * wakes up, its writes with the old token are refused with FencingTokenLowerVersion, and it learns
 * it has lost the lease.
 */
import assert from 'node:assert/strict'
import { StateStoreClient } from '../../../src/client'
import { Lease, Lock } from '../../../src/locks'
import { ServiceError } from '../../../src/diagnostics/errors'
import { Hlc } from '../../../src/hlc'
import { until } from '../../support/wait'
import { withEmulator } from '../../support/emulator-fixture'

describe('faults: a lease holder paused past its lease', function () {
  this.timeout(30_000)
  const fx = withEmulator({ broker: 'own', relay: true, clients: 'suite' })
  const { clients } = fx

  it("hands the lease to the standby with a greater fencing token and refuses the old holder's fenced writes", async () => {
    const holderClient = new StateStoreClient({
      brokerUrl: fx.relay.url,
      clientId: `holder-${process.pid}`,
      requestTimeoutMs: 2000,
    })
    const standbyClient = new StateStoreClient({
      brokerUrl: fx.url,
      clientId: `standby-${process.pid}`,
      requestTimeoutMs: 2000,
    })
    clients.add(holderClient, standbyClient)
    await Promise.all([holderClient.ready({ timeoutMs: 5000 }), standbyClient.ready({ timeoutMs: 5000 })])

    const leaseMs = 600
    const held = new Lease(holderClient, 'fault/lease', { leaseMs, renewPeriodMs: 200 })
    const lost: string[] = []
    held.on('lost', ({ reason }) => lost.push(reason))
    const first = await held.tryAcquire()
    assert.equal(first.acquired, true)
    assert.ok(
      (await holderClient.set('fault/resource', 'written by the holder', { fencingToken: first.fencingToken! }))
        .applied,
    )

    const standby = new Lock(standbyClient, 'fault/lease', { leaseMs, renewPeriodMs: 200 })
    const taking = standby.acquire({ timeoutMs: 10_000 })
    // Renewals keep the lease with the holder while it runs.
    await until(
      () => held.fencingToken !== null && Hlc.compare(held.fencingToken, first.fencingToken!) > 0,
      'a renewal',
    )

    fx.relay.freeze()
    const lastToken = held.fencingToken!
    const frozenAt = Date.now()
    const standbyToken = await taking
    assert.ok(Date.now() - frozenAt >= leaseMs - 250, 'taken over only once the lease could have lapsed')
    assert.ok(
      Hlc.compare(standbyToken, lastToken) > 0,
      `the standby's token ${standbyToken} is greater than the holder's last ${lastToken}`,
    )
    assert.ok(
      (await standbyClient.set('fault/resource', 'written by the standby', { fencingToken: standbyToken })).applied,
    )

    fx.relay.thaw()
    await until(() => lost.length > 0, "the old holder's lease to be reported lost")
    for (const attempt of [
      () => holderClient.set('fault/resource', 'stale write', { fencingToken: lastToken }),
      () => holderClient.del('fault/resource', { fencingToken: lastToken }),
    ]) {
      await assert.rejects(
        attempt(),
        (err: unknown) => err instanceof ServiceError && err.code === 'FencingTokenLowerVersion',
      )
    }
    assert.equal((await standbyClient.get('fault/resource')).value?.toString(), 'written by the standby')
    assert.equal(
      (await standbyClient.get('fault/lease')).value?.toString(),
      standbyClient.clientId,
      'the standby holds the lease',
    )
    assert.equal(held.fencingToken, null)
    await held.close()
    await standby.release()
  })
})

// `npm run rehearse -- ha` and `npm run rehearse -- active-active` (scripts/rehearse.ts,
// docs/cluster.md) at a smaller count: the overlays' own settings files run from the repository
// with a runtime folder holding nothing but flows.json (the settings find the package where
// Node-RED finds its nodes), mosquitto's shared subscription, the emulator's state store on it,
// numbered QoS 1 msgs, the tick's leader killed with kill -9 mid-stream. Nothing lost, nothing
// handled twice, every msg published again after it was done a duplicate, no tick doubled.
import assert from 'node:assert/strict'
import { rehearse, type RehearsalResult } from '../../../scripts/rehearse'
import { requireMosquitto } from '../../support/mosquitto'

function check(r: RehearsalResult): void {
  assert.equal(r.lost, 0, r.line)
  assert.equal(r.twice, 0, r.line)
  assert.equal(r.once, r.sent, r.line)
  assert.ok(r.redelivered > 0, `some msgs were published again after they were done: ${r.line}`)
  assert.equal(r.redeliveredAsDuplicates, r.redelivered, `each left the run-once node as a duplicate: ${r.line}`)
  assert.equal(r.periodsDoubled, 0, `no period ticked in two replicas: ${r.line}`)
  assert.ok(r.takeoverMs !== null && r.takeoverMs > 0, `another replica ticks after the kill: ${r.line}`)
  const { handOver, gate, timers } = r.periodsMissed
  assert.equal(handOver + gate + timers, r.periodsWithout, r.line)
  console.log(`      (${r.line})`)
}

describe('npm run rehearse: the overlays on a laptop, one replica killed mid-stream', function () {
  this.timeout(900_000)
  before(function () {
    requireMosquitto(this)
  })

  it('active-active: 3 replicas on a shared subscription, 400 msgs, the tick leader killed: none lost, none twice, the tick once per period', async () => {
    check(
      await rehearse({
        overlay: 'active-active',
        msgs: 400,
        replicas: 3,
        termMs: 3000,
        // Whole seconds: the tick is a cron schedule, on the clock (scripts/rehearse.ts tickSchedule).
        tickMs: 1000,
        rate: 200,
        log: () => {},
      }),
    )
  })

  it('ha: the active killed, the standby takes over with the flows from the store: none lost, none twice', async () => {
    check(
      await rehearse({ overlay: 'ha', msgs: 400, replicas: 2, termMs: 3000, tickMs: 500, rate: 200, log: () => {} }),
    )
  })
})

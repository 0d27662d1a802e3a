/**
 * A service that stops answering, or answers too late. Requests end with TimeoutError at their
 * deadline; the client never holds more than maxInFlight + maxQueued of them (the rest are refused
 * at once with OverloadedError); nothing stays behind after thousands of timed-out requests (the
 * in-flight map is empty and the heap, read after a full GC, does not grow); late answers are
 * dropped; and the client works again as soon as the service does.
 */
import assert from 'node:assert/strict'
import { StateStoreClient, type GetResult } from '../../../src/client'
import { OverloadedError, TimeoutError } from '../../../src/diagnostics/errors'
import { Reply } from '../../../src/protocol'
import { startMqttBroker, type OwnBroker } from '../../support/broker'
import { Responder, type SeenRequest } from '../client/support/responder'
import { heapAfterGc } from '../../support/heap'
import { Outcomes } from '../../support/outcomes'
import { sleep, until } from '../../support/wait'
import { scaled } from '../../support/deadline'
import { ClientPool } from '../../support/clients'

describe('faults: silent or slow service', function () {
  this.timeout(60_000)
  let broker: OwnBroker
  let responder: Responder
  let mode: 'silent' | 'slow' | 'prompt' = 'silent'
  const clients = new ClientPool()

  before(async function () {
    broker = await startMqttBroker(this)
    responder = await Responder.start(broker.url, async (_request: SeenRequest) => {
      if (mode === 'silent') return null
      if (mode === 'slow') await sleep(250)
      return { payload: Reply.nil }
    })
  })
  after(async () => {
    await clients.closeAll()
    await responder?.stop()
    await broker?.stop()
  })

  it('times out every request, stays within maxInFlight + maxQueued, refuses the rest, and keeps nothing behind', async () => {
    mode = 'silent'
    const maxInFlight = 200
    const maxQueued = 100
    const c = new StateStoreClient({
      brokerUrl: broker.url,
      clientId: `silent-${process.pid}`,
      requestTimeoutMs: 80,
      maxInFlight,
      maxQueued,
    })
    clients.add(c)
    await c.ready({ timeoutMs: 5000 })

    const rounds = 16
    const perRound = 400
    const outcomes = new Outcomes<GetResult>()
    let peak = { inFlight: 0, queued: 0 }
    let heapWarm = 0
    let seen = 0
    for (let round = 0; round < rounds; round++) {
      const batch: Array<Promise<void>> = []
      for (let i = 0; i < perRound; i++) {
        batch.push(outcomes.track(c.get(`silent/${round}/${i}`)))
        const load = c.load
        peak = { inFlight: Math.max(peak.inFlight, load.inFlight), queued: Math.max(peak.queued, load.queued) }
      }
      await Promise.all(batch)
      assert.deepEqual(c.load, { inFlight: 0, queued: 0 }, `round ${round}: nothing left pending`)
      // The responder runs in this process: what it records must not count as the client's memory.
      await until(() => responder.requests.length >= maxInFlight, `the silent service to see round ${round}`)
      seen += responder.requests.splice(0).length
      if (round === 1) heapWarm = heapAfterGc()
    }
    const heapEnd = heapAfterGc()

    assert.deepEqual(peak, { inFlight: maxInFlight, queued: maxQueued })
    assert.deepEqual(outcomes.untyped, [])
    const timedOut = outcomes.failed.get(TimeoutError.name) ?? 0
    const refused = outcomes.failed.get(OverloadedError.name) ?? 0
    assert.equal(outcomes.ok.length, 0)
    assert.equal(timedOut, rounds * (maxInFlight + maxQueued), outcomes.summary())
    assert.equal(refused, rounds * (perRound - maxInFlight - maxQueued), outcomes.summary())
    // The admitted ones were published, and queued ones as slots freed up; nothing refused was sent.
    assert.ok(seen >= rounds * maxInFlight && seen <= rounds * (maxInFlight + maxQueued), `${seen} requests published`)
    const growth = heapEnd - heapWarm
    // A request kept alive (its promise, timer, correlation, properties and payload) costs over 1 KB,
    // so 4,200 of them would be over 4 MB; what is left is noise from the runtime (measured: ±1.3 MB).
    assert.ok(
      growth < 2 * 1024 * 1024,
      `heap grew ${growth} bytes over ${(rounds - 2) * (maxInFlight + maxQueued)} timed-out requests`,
    )
    console.log(
      `      ${JSON.stringify({ requests: outcomes.issued, timedOut, overloaded: refused, peak, heapGrowthBytes: growth })}`,
    )
  })

  it('drops answers that come after the deadline, and works again once the service answers in time', async () => {
    mode = 'slow'
    const dropped: string[] = []
    const c = new StateStoreClient({
      brokerUrl: broker.url,
      clientId: `slow-${process.pid}`,
      requestTimeoutMs: 100,
      logger: (_level, message) => {
        if (message.includes('dropped a response')) dropped.push(message)
      },
    })
    clients.add(c)
    await c.ready({ timeoutMs: 5000 })
    responder.requests.splice(0)
    const late = await Promise.allSettled(Array.from({ length: 50 }, (_, i) => c.get(`slow/${i}`)))
    assert.ok(late.every((r) => r.status === 'rejected' && r.reason instanceof TimeoutError))
    await until(() => dropped.length === 50, `50 late answers dropped (have ${dropped.length})`, 5000)
    assert.equal(responder.requests.length, 50)
    assert.equal(c.status.state, 'connected')
    mode = 'prompt'
    // In time: within a deadline the machine can meet (100 ms is not, on a busy one).
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => c.get(`prompt/${i}`, { timeoutMs: scaled(2000) })),
    )
    assert.ok(results.every((r) => r.value === null))
    assert.deepEqual(c.load, { inFlight: 0, queued: 0 })
  })
})

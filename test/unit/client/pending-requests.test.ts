/**
 * The request layer alone: PendingRequests over a fake transport (what the connection offers it)
 * and a plain envelope, with fake timers, so that deadlines, resends and connection waits are
 * exact and no broker is involved.
 */
import assert from 'node:assert/strict'
import type { IPublishPacket } from 'mqtt'
import { install } from '@sinonjs/fake-timers'
import { PendingRequests, QUEUED_REQUEST_BYTES, type Invocation } from '../../../src/client/pending-requests'
import type { PublishProperties, Transport } from '../../../src/client/transport'
import type { Envelope } from '../../../src/client/envelope'
import { resolveOptions } from '../../../src/client/options'
import type { ConnectionStatus } from '../../../src/client/types'
import { ConnectionError, NoServiceError, OverloadedError, TimeoutError } from '../../../src/diagnostics/errors'

interface Publish {
  payload: string
  properties: PublishProperties
  onAck: (outcome: { error?: Error; noSubscribers?: boolean }) => void
  messageId: number
}

class FakeTransport implements Transport {
  online = true
  status: ConnectionStatus = { state: 'connected' }
  readonly published: Publish[] = []
  readonly forgotten: number[] = []
  private nextId = 1

  publish(_topic: string, payload: Buffer, properties: PublishProperties, onAck: Publish['onAck']): number {
    const messageId = this.nextId++
    this.published.push({ payload: payload.toString(), properties, onAck, messageId })
    return messageId
  }

  forget(messageId: number): void {
    this.forgotten.push(messageId)
  }
}

const ENVELOPE: Envelope = {
  requestTopic: 'requests',
  properties: (r) => ({
    responseTopic: r.responseTopic,
    correlationData: r.correlation,
    messageExpiryInterval: r.expirySec,
  }),
  readVersion: () => null,
}

function answer(requests: PendingRequests, to: Publish, payload: string): void {
  requests.handleResponse(Buffer.from(payload), {
    properties: { correlationData: to.properties.correlationData },
  } as IPublishPacket)
}

function request(verb: string, more: Partial<Invocation<string>> = {}): Invocation<string> {
  return { verb, payload: Buffer.from(verb), parse: (payload) => `${verb}: ${payload.toString()}`, ...more }
}

/** Settles to what the promise did, so a test can look without awaiting a rejection it expects. */
function outcome<T>(promise: Promise<T>): { value?: T; error?: Error; settled: boolean } {
  const o: { value?: T; error?: Error; settled: boolean } = { settled: false }
  promise.then(
    (value) => Object.assign(o, { value, settled: true }),
    (error: Error) => Object.assign(o, { error, settled: true }),
  )
  return o
}

describe('client: PendingRequests over a fake transport', function () {
  let clock: ReturnType<typeof install>
  let transport: FakeTransport
  let requests: PendingRequests
  const setup = (
    options: {
      maxInFlight?: number
      maxQueued?: number
      maxQueuedBytes?: number
      requestTimeoutMs?: number
      connectionWaitMs?: number
    } = {},
  ) => {
    transport = new FakeTransport()
    requests = new PendingRequests(
      transport,
      resolveOptions({ brokerUrl: 'mqtt://127.0.0.1:1', clientId: 'unit', logger: () => {}, ...options }),
      'responses',
      ENVELOPE,
    )
  }

  beforeEach(() => {
    clock = install({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'performance', 'Date'] })
    setup()
  })
  afterEach(() => {
    requests.close()
    clock.uninstall()
  })

  it('settles each request with the parse of the response that carries its correlation data, and drops a duplicate', async () => {
    const a = requests.invoke(request('A'))
    const b = requests.invoke(request('B'))
    assert.equal(transport.published.length, 2)
    const [pa, pb] = transport.published
    assert.notDeepEqual(pa!.properties.correlationData, pb!.properties.correlationData)
    answer(requests, pb!, 'two')
    answer(requests, pa!, 'one')
    answer(requests, pa!, 'again')
    assert.equal(await a, 'A: one')
    assert.equal(await b, 'B: two')
    assert.deepEqual(requests.size, { inFlight: 0, queued: 0 })
  })

  it('times out at its deadline with TimeoutError, not before, and has the transport forget the publish', async () => {
    const o = outcome(requests.invoke(request('GET', { timeoutMs: 1000 })))
    await clock.tickAsync(999)
    assert.equal(o.settled, false)
    await clock.tickAsync(1)
    assert.ok(o.error instanceof TimeoutError, String(o.error))
    assert.match(o.error.message, /no response/)
    assert.deepEqual(transport.forgotten, [transport.published[0]!.messageId])
    answer(requests, transport.published[0]!, 'late')
    assert.deepEqual(requests.size, { inFlight: 0, queued: 0 })
  })

  it('queues past maxInFlight, admits the oldest as one settles, and refuses past maxQueued', async () => {
    setup({ maxInFlight: 1, maxQueued: 1 })
    const first = requests.invoke(request('first'))
    const second = requests.invoke(request('second'))
    await assert.rejects(requests.invoke(request('third')), OverloadedError)
    assert.deepEqual(requests.size, { inFlight: 1, queued: 1 })
    assert.deepEqual(
      transport.published.map((p) => p.payload),
      ['first'],
    )
    answer(requests, transport.published[0]!, 'ok')
    assert.equal(await first, 'first: ok')
    assert.deepEqual(
      transport.published.map((p) => p.payload),
      ['first', 'second'],
    )
    answer(requests, transport.published[1]!, 'ok')
    assert.equal(await second, 'second: ok')
  })

  it('queues a burst of 50,000 requests past maxInFlight by default (the bound is bytes, not a count tied to maxInFlight)', async () => {
    const burst = Array.from({ length: 50_000 }, (_, i) =>
      outcome(requests.invoke(request(`SET ${'x'.repeat(1024)} ${i}`))),
    )
    await clock.tickAsync(0)
    assert.deepEqual(
      burst.filter((o) => o.settled).map((o) => o.error?.message),
      [],
    )
    assert.deepEqual(requests.size, { inFlight: 1000, queued: 49_000 })
    assert.ok(
      requests.queuedBytes <= resolveOptions({ brokerUrl: 'mqtt://h', clientId: 'c' }).maxQueuedBytes,
      String(requests.queuedBytes),
    )
  })

  it('a request waiting for a free slot waits past its timeout while answers come, and times out once none came for its timeout', async () => {
    setup({ maxInFlight: 1, requestTimeoutMs: 1000 })
    const first = outcome(requests.invoke(request('first')))
    const second = outcome(requests.invoke(request('second')))
    const third = outcome(requests.invoke(request('third')))
    await clock.tickAsync(900)
    answer(requests, transport.published[0]!, 'ok')
    await clock.tickAsync(900)
    answer(requests, transport.published[1]!, 'ok')
    // 1800 ms since the third was made, more than its timeout: the queue moved, so it waits on.
    await clock.tickAsync(100)
    assert.equal(first.value, 'first: ok')
    assert.equal(second.value, 'second: ok')
    assert.equal(third.settled, false)
    assert.equal(transport.published[2]?.payload, 'third')
    answer(requests, transport.published[2], 'ok')
    await clock.tickAsync(0)
    assert.equal(third.value, 'third: ok')

    // Nobody answers: the waiting one times out a timeout after the last answer.
    const stuck = outcome(requests.invoke(request('stuck')))
    const waiting = outcome(requests.invoke(request('waiting')))
    await clock.tickAsync(1000)
    assert.ok(stuck.error instanceof TimeoutError, String(stuck.error))
    assert.ok(waiting.error instanceof TimeoutError, String(waiting.error))
    assert.match(waiting.error.message, /free slot/)
  })

  it('an event loop blocked past the deadlines (a burst handled in one turn) times out no request', async () => {
    setup({ requestTimeoutMs: 1000 })
    const sent = outcome(requests.invoke(request('sent')))
    // The timers fire late, all at once: as after a turn of the loop that took 5 s.
    clock.jump(5000)
    await clock.tickAsync(0)
    assert.equal(sent.settled, false)
    answer(requests, transport.published[0]!, 'ok')
    await clock.tickAsync(0)
    assert.equal(sent.value, 'sent: ok')
    const late = outcome(requests.invoke(request('late')))
    await clock.tickAsync(1000)
    assert.ok(late.error instanceof TimeoutError, 'a timeout still ends a request the loop had time for')
  })

  it('refuses past maxQueuedBytes with OverloadedError naming the bound and its setting, and takes a request again once the queue drains', async () => {
    const one = request('SET a').payload.length + QUEUED_REQUEST_BYTES
    setup({ maxInFlight: 1, maxQueuedBytes: 2 * one })
    const admitted = requests.invoke(request('SET a'))
    const queued = [requests.invoke(request('SET b')), requests.invoke(request('SET c'))]
    assert.equal(requests.queuedBytes, 2 * one)
    const refused = outcome(requests.invoke(request('SET d')))
    await clock.tickAsync(0)
    assert.ok(refused.error instanceof OverloadedError, String(refused.error))
    assert.equal(refused.error.bound, 'maxQueuedBytes')
    assert.equal(refused.error.limit, 2 * one)
    assert.match(refused.error.message, /maxQueuedBytes/)
    answer(requests, transport.published[0]!, 'ok')
    await admitted
    assert.equal(requests.queuedBytes, one)
    const again = requests.invoke(request('SET e'))
    for (let i = 1; i <= 3; i++) {
      await clock.tickAsync(0)
      answer(requests, transport.published[i]!, 'ok')
    }
    assert.deepEqual(await Promise.all([...queued, again]), ['SET b: ok', 'SET c: ok', 'SET e: ok'])
    assert.equal(requests.queuedBytes, 0)
  })

  it('holds a request while offline and sends it when the connection comes back', async () => {
    transport.online = false
    const o = outcome(requests.invoke(request('SET')))
    assert.equal(transport.published.length, 0)
    await clock.tickAsync(500)
    transport.online = true
    requests.onOnline(true, false)
    assert.equal(transport.published.length, 1)
    answer(requests, transport.published[0]!, 'ok')
    await clock.tickAsync(0)
    assert.equal(o.value, 'SET: ok')
  })

  it('with connectionWaitMs, fails a request the connection did not come back for with ConnectionError', async () => {
    setup({ connectionWaitMs: 300 })
    transport.online = false
    transport.status = { state: 'reconnecting', reason: 'connection refused' }
    const o = outcome(requests.invoke(request('GET', { timeoutMs: 5000 })))
    await clock.tickAsync(299)
    assert.equal(o.settled, false)
    await clock.tickAsync(1)
    assert.ok(o.error instanceof ConnectionError && !(o.error instanceof TimeoutError), String(o.error))
    assert.equal(o.error.code, 'NotConnected')
    assert.match(o.error.message, /connection refused/)
  })

  it('resends a request nobody was subscribed for with backoff; another one fails at once with NoServiceError', async () => {
    const found = outcome(requests.invoke(request('GET', { timeoutMs: 10_000 })))
    transport.published[0]!.onAck({ noSubscribers: true })
    assert.equal(requests.serviceAbsent, true)
    const other = outcome(requests.invoke(request('SET')))
    transport.published[1]!.onAck({ noSubscribers: true })
    await clock.tickAsync(0)
    assert.ok(other.error instanceof NoServiceError, String(other.error))
    await clock.tickAsync(2000)
    const resent = transport.published.filter((p) => p.payload === 'GET')
    assert.ok(resent.length >= 2, `sent ${resent.length} times`)
    answer(requests, resent.at(-1)!, 'at last')
    await clock.tickAsync(0)
    assert.equal(found.value, 'GET: at last')
    assert.equal(requests.serviceAbsent, false)
  })

  it('is cancelled by its signal, and close() fails what is pending and what comes after', async () => {
    const controller = new AbortController()
    const cancelled = outcome(requests.invoke(request('GET', { signal: controller.signal })))
    const pending = outcome(requests.invoke(request('SET')))
    controller.abort()
    await clock.tickAsync(0)
    assert.ok(cancelled.error, 'cancelled')
    assert.equal(pending.settled, false)
    requests.close()
    await clock.tickAsync(0)
    assert.ok(
      pending.error instanceof ConnectionError && pending.error.code === 'ConnectionClosed',
      String(pending.error),
    )
    await assert.rejects(
      requests.invoke(request('DEL')),
      (err: Error) => err instanceof ConnectionError && err.code === 'ConnectionClosed',
    )
  })
})

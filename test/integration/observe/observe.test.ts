import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import { install } from '@sinonjs/fake-timers'
import { Hlc } from '../../../src/hlc'
import {
  Coalescer,
  ConnectionMetrics,
  LiveFeed,
  StoreActivity,
  viewValue,
  type StoreUpdate,
} from '../../../src/observe'
import { StateStoreClient, type RequestRecorder } from '../../../src/client'
import { ArgumentError, ServiceError, TimeoutError } from '../../../src/diagnostics/errors'
import type { Lease } from '../../../src/locks'
import { startBroker, startEmulator } from '../../../src/emulator'

describe('observe: connection metrics', () => {
  it('rate and quantiles over the last minute, within the histogram resolution', () => {
    let now = 1_000_000
    const m = new ConnectionMetrics(() => now)
    for (let i = 1; i <= 1000; i++) {
      m.record('GET', i / 10) // 0.1 … 100 ms
      if (i % 100 === 0) now += 1000
    }
    const f = m.figures()
    assert.equal(f.requests, 1000)
    assert.ok(Math.abs(f.requestsPerSecond - 100) < 1, `rps ${f.requestsPerSecond}`)
    assert.ok(f.p50Ms! >= 50 && f.p50Ms! <= 50 * 1.08, `p50 ${f.p50Ms}`)
    assert.ok(f.p99Ms! >= 99 && f.p99Ms! <= 99 * 1.08, `p99 ${f.p99Ms}`)
    now += 61_000
    const later = m.figures()
    assert.equal(later.requests, 0)
    assert.equal(later.p50Ms, null)
  })

  it('counts failures, reconnects and keeps the last errors newest first', () => {
    let now = 5_000
    const m = new ConnectionMetrics(() => now)
    m.onStatus({ state: 'connecting' })
    m.onStatus({ state: 'connected' })
    assert.equal(m.figures().connectedSince, 5_000)
    now += 10
    m.onStatus({ state: 'reconnecting', reason: 'socket closed' })
    assert.equal(m.figures().connectedSince, null)
    m.onStatus({ state: 'connected' })
    m.record('SET', 3, new Error('the SET request timed out'))
    const f = m.figures()
    assert.equal(f.reconnects, 1)
    assert.equal(f.failures, 1)
    assert.deepEqual(
      f.lastErrors.map((e) => e.message),
      ['the SET request timed out', 'socket closed'],
    )
    for (let i = 0; i < 30; i++) m.addError(`e${i}`)
    assert.equal(m.figures().lastErrors.length, 10)
    assert.equal(m.figures().lastErrors[0]!.message, 'e29')
  })

  it("lists a node's failed msg by the node's name, id and key, and a failed request once however many msgs it fails, naming the msg's node", () => {
    const m = new ConnectionMetrics(() => 7_000)
    // Refused by the service: the request itself worked, so only the msg's failure lists it.
    m.msgFailed(
      'late write',
      new Error(
        'state store error: the request fencing token is a lower version than the fencing token protecting the resource',
      ),
    )
    m.msgFailed('reader', 'the key is empty')
    const timeout = new Error('the GET request timed out')
    m.record('GET', 10_000, timeout)
    m.msgFailed('reader', timeout, { nodeId: 'n1', key: 'line-3/speed' })
    assert.deepEqual(m.figures().lastErrors, [
      { at: 7_000, message: 'the GET request timed out', node: 'reader', nodeId: 'n1', key: 'line-3/speed' },
      { at: 7_000, message: 'the key is empty', node: 'reader' },
      {
        at: 7_000,
        message:
          'state store error: the request fencing token is a lower version than the fencing token protecting the resource',
        node: 'late write',
      },
    ])
    assert.equal(m.figures().failures, 1, 'failures counts requests, not msgs')
  })
})

describe('observe: coalescer', () => {
  let clock: ReturnType<typeof install>
  beforeEach(() => (clock = install({ toFake: ['setTimeout', 'clearTimeout', 'Date'] })))
  afterEach(() => clock.uninstall())

  it('hands over each changed id once per interval however often it changed', () => {
    const flushed: string[][] = []
    const c = new Coalescer<string>(30, (ids) => flushed.push([...ids]))
    for (let i = 0; i < 2000; i++) c.mark(i % 2 ? 'a' : 'b')
    clock.tick(60)
    assert.deepEqual(flushed, [['b', 'a']])
    c.mark('a')
    c.clear()
    clock.tick(60)
    assert.equal(flushed.length, 1, 'cleared ids are not flushed')
  })
})

describe('observe: value view', () => {
  it('JSON pretty, text as is, binary as hex, truncated past the limit', () => {
    assert.deepEqual(viewValue(Buffer.from('{"a":1}')), {
      size: 7,
      kind: 'json',
      preview: '{\n  "a": 1\n}',
      truncated: false,
    })
    assert.deepEqual(viewValue(Buffer.from('<script>x</script>')), {
      size: 18,
      kind: 'text',
      preview: '<script>x</script>',
      truncated: false,
    })
    assert.deepEqual(viewValue(Buffer.from([0, 1, 255])), {
      size: 3,
      kind: 'binary',
      preview: '0001ff',
      truncated: false,
    })
    const long = viewValue(Buffer.from('x'.repeat(5000)), 100)
    assert.equal(long.preview.length, 100)
    assert.equal(long.truncated, true)
    assert.equal(long.size, 5000)
  })
})

describe('observe: activity registry', () => {
  it('follows watches and their last notification, and forgets an owner', () => {
    const a = new StoreActivity(() => 42)
    const changes: unknown[] = []
    a.on('change', (c) => changes.push(c))
    a.watchStarted('n1', 'room')
    a.watchStarted('n2', 'room')
    a.watchNotified('room', {
      key: Buffer.from('room'),
      operation: 'SET',
      value: Buffer.from('21'),
      version: new Hlc(1, 0, 'x'),
      reconciled: false,
    })
    const w = a.watches.get('room')!
    assert.equal(w.value?.toString(), '21')
    assert.equal(w.at, 42)
    assert.equal(w.notifications, 1)
    a.forget('n1')
    assert.ok(a.watches.has('room'))
    a.forget('n2')
    assert.ok(!a.watches.has('room'))
    assert.deepEqual(changes[0], { kind: 'watch', key: 'room' })
  })

  it('follows a lease: acquired, renewed, lost, with token and expiry', () => {
    let now = 1000
    const a = new StoreActivity(() => now)
    const lease = new EventEmitter() as unknown as Lease
    const emit = (e: string, arg?: unknown) => (lease as unknown as EventEmitter).emit(e, arg)
    a.trackLease('node', 'pump', 'lock', 'me', 5000, lease)
    const r = a.locks.get('node/pump')!
    assert.equal(r.held, false)
    emit('acquired', { fencingToken: new Hlc(7, 0, 'svc') })
    assert.equal(r.held, true)
    assert.equal(r.fencingToken, new Hlc(7, 0, 'svc').toString())
    assert.equal(r.expiresAt, 6000)
    assert.equal(r.currentHolder, 'me')
    now = 2000
    emit('renewed', { fencingToken: new Hlc(8, 0, 'svc') })
    assert.equal(r.renewals, 1)
    assert.equal(r.expiresAt, 7000)
    emit('lost', { reason: 'anotherHolder', message: 'another holder has the lease' })
    assert.equal(r.held, false)
    assert.equal(r.lastReason, 'another holder has the lease', 'the sidebar shows the words')
    a.forget('node')
    assert.equal(a.locks.size, 0)
    assert.equal((lease as unknown as EventEmitter).listenerCount('acquired'), 0, 'listeners detached')
  })
})

describe('observe: the client reports its requests', () => {
  it('every settled request reaches the recorder, failures with their error', async () => {
    const emulator = await startEmulator({ listen: { host: '127.0.0.1', port: 0 } })
    // A broker nobody serves: a request there fails by itself, with a TimeoutError.
    const unserved = await startBroker({ port: 0 })
    const metrics = new ConnectionMetrics()
    const recorded: Array<{ verb: string; error: Error | undefined }> = []
    const recorder: RequestRecorder = {
      record(verb, latencyMs, error) {
        recorded.push({ verb, error })
        metrics.record(verb, latencyMs, error)
      },
    }
    const client = new StateStoreClient({
      brokerUrl: emulator.brokerUrl,
      clientId: `observe-${process.pid}`,
      metrics: recorder,
    })
    const lonely = new StateStoreClient({
      brokerUrl: unserved.url,
      clientId: `observe-lonely-${process.pid}`,
      metrics: recorder,
      requestTimeoutMs: 300,
    })
    try {
      await client.ready({ timeoutMs: 5000 })
      await lonely.ready({ timeoutMs: 5000 })
      const token = new Hlc(Date.now(), 5, 'holder')
      await client.set('observed', 'v', { fencingToken: token })
      await client.get('observed')
      // Answered, with -ERR: the request itself worked, so it is recorded without an error.
      const refused = await client
        .set('observed', 'w', { fencingToken: new Hlc(token.timestamp - 1000, 0, 'holder') })
        .catch((err: unknown) => err)
      assert.ok(refused instanceof ServiceError && refused.code === 'FencingTokenLowerVersion', String(refused))
      // Refused before it is sent: not a request at all.
      await assert.rejects(client.set('observed', 'x', { fencingToken: 'not a token' }), ArgumentError)
      const timedOut = await lonely.get('observed').catch((err: unknown) => err)
      assert.ok(timedOut instanceof TimeoutError, String(timedOut))

      assert.deepEqual(
        recorded.map((r) => [r.verb, r.error]),
        [
          ['SET', undefined],
          ['GET', undefined],
          ['SET', undefined],
          ['GET', timedOut],
        ],
      )
      const f = metrics.figures()
      assert.equal(f.requests, 4)
      assert.equal(f.failures, 1)
      assert.ok(f.lastErrors[0]?.message.includes(timedOut.message), JSON.stringify(f.lastErrors))
      assert.ok(f.p50Ms !== null && f.p50Ms > 0)
    } finally {
      await client.close()
      await lonely.close()
      await emulator.stop()
      await unserved.stop()
    }
  })
})

describe('observe: live feed', () => {
  let clock: ReturnType<typeof install>
  beforeEach(() => (clock = install({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] })))
  afterEach(() => clock.uninstall())
  const sleep = (ms: number) => clock.tickAsync(ms)

  it('pushes only while a viewer holds a lease, each changed item once per interval', async () => {
    const updates: StoreUpdate[] = []
    let now = 0
    const feed = new LiveFeed({
      publish: (u) => updates.push(u),
      intervalMs: 20,
      leaseMs: 1000,
      figuresMs: 10_000,
      now: () => now,
    })
    const activity = new StoreActivity()
    feed.setStores(new Map([['cfg', activity]]))
    activity.watchStarted('n', 'k')
    const notify = (v: string) =>
      activity.watchNotified('k', {
        key: Buffer.from('k'),
        operation: 'SET',
        value: Buffer.from(v),
        version: null,
        reconciled: false,
      })
    notify('unseen')
    await sleep(40)
    assert.equal(updates.length, 0, 'nothing while nobody looks')
    assert.equal(activity.listenerCount('change'), 0, 'nobody listens to the registry either')

    feed.open('editor')
    for (let i = 0; i < 500; i++) notify(`v${i}`)
    await sleep(60)
    const watchUpdates = updates.filter((u) => u.watches)
    assert.equal(watchUpdates.length, 1, 'one update for 500 changes within an interval')
    assert.equal(watchUpdates[0]!.watches![0]!.value?.preview, 'v499')

    activity.forget('n')
    await sleep(60)
    assert.deepEqual(updates.at(-1)?.unwatched, ['k'])

    feed.close('editor')
    assert.equal(feed.live, false)
    const count = updates.length
    activity.watchStarted('n', 'k2')
    await sleep(40)
    assert.equal(updates.length, count, 'nothing after the viewer closed')

    feed.open('editor')
    now = 2000 // the lease runs out without a renewal
    ;(feed as unknown as { tick(): void }).tick()
    assert.equal(feed.live, false, 'a viewer that stops renewing is dropped')
    feed.stop()
  })
})

/**
 * Reconnects against the emulator: a client taken off the network (a proxy in front of the
 * broker) while another one changes keys, a kept session, and a mosquitto restarted mid-stream.
 * After every reconnect the observed keys are registered again and the changes missed meanwhile
 * arrive as reconciled notifications; requests made or in flight meanwhile complete.
 */
import assert from 'node:assert/strict'
import { Prop } from '../../../src/protocol'
import { TimeoutError } from '../../../src/diagnostics/errors'
import { retry, eventually } from '../../support/wait'
import { ClientPool, Inbox, statusWhere, uniqueId } from '../../support/clients'
import { withEmulator } from '../../support/emulator-fixture'
import { TcpRelay } from '../../support/relay'
import { Responder } from './support/responder'
import { onEveryBroker } from './support/topology'

const describeNotification = (n: { operation: string; key: Buffer; value: Buffer | null; reconciled: boolean }) =>
  `${n.reconciled ? 'reconciled ' : ''}${n.operation} ${n.key.toString()}${n.value ? `=${n.value.toString()}` : ''}`

onEveryBroker('reconnect', (t) => {
  const pool = new ClientPool()
  let proxy: TcpRelay
  let spy: Responder
  before(async () => {
    proxy = await TcpRelay.start(t.port)
    // Sees every request and answers none: proof of what the client sends.
    spy = await Responder.start(t.url, () => null)
  })
  afterEach(async () => {
    proxy.restore()
    await pool.closeAll()
  })
  after(async () => {
    await spy?.stop()
    await proxy?.stop()
  })

  it('registers observed keys again and delivers the changes it missed as reconciled notifications', async function () {
    const away = await pool.ready(proxy.url)
    const writer = await pool.ready(t.url)
    const [changed, deleted, unchanged, created] = ['changed', 'deleted', 'unchanged', 'created'].map((k) =>
      uniqueId(k),
    )
    await writer.set(changed!, 'v1')
    await writer.set(deleted!, 'd1')
    await writer.set(unchanged!, 'u1')
    const inbox = new Inbox()
    for (const k of [changed!, deleted!, unchanged!, created!]) await away.observe(k, inbox.listener)
    await writer.set(changed!, 'v2')
    await inbox.count(1)
    const states: string[] = []
    away.on('status', (s) => states.push(s.state))

    proxy.cut()
    await statusWhere(away, (s) => s.state === 'disconnected')
    const sentBefore = spy.requests.length
    await writer.set(changed!, 'v3')
    await writer.set(changed!, 'v4')
    await writer.del(deleted!)
    await writer.set(created!, 'c1')
    // A request made while disconnected waits for the connection.
    const whileAway = away.get(changed!, { timeoutMs: 10_000 })
    await new Promise((r) => setTimeout(r, 100))
    proxy.restore()

    assert.equal((await whileAway).value?.toString(), 'v4')
    const got = await inbox.count(4)
    assert.equal(describeNotification(got[0]!), `SET ${changed}=v2`)
    assert.deepEqual(
      new Set(got.slice(1).map(describeNotification)),
      new Set([`reconciled SET ${changed}=v4`, `reconciled DELETE ${deleted}`, `reconciled SET ${created}=c1`]),
    )
    const reconciledVersion = got.slice(1).find((n) => n.key.toString() === changed)!.version
    assert.ok(
      reconciledVersion?.equals((await writer.get(changed!)).version!),
      'the reconciled SET carries the current version',
    )
    assert.ok(
      states.includes('disconnected') && states.includes('reconnecting') && states.at(-1) === 'connected',
      states.join(' → '),
    )

    // Registered again: a KEYNOTIFY for every observed key after the cut.
    await eventually(() => (away.load.inFlight === 0 ? true : undefined), 'away.load.inFlight === 0')
    const again = spy.requests
      .slice(sentBefore)
      .filter((r) => r.user[Prop.sourceId] === away.clientId && r.words[0] === 'KEYNOTIFY')
      .map((r) => r.words[1])
    assert.deepEqual(new Set(again), new Set([changed, deleted, unchanged, created]))

    // And live notifications flow again, nothing duplicated.
    await writer.set(unchanged!, 'u2')
    const live = await inbox.count(5)
    assert.equal(describeNotification(live[4]!), `SET ${unchanged}=u2`)
    await writer.set(changed!, 'v5')
    await inbox.count(6)
    assert.equal(inbox.items.length, 6)
  })

  it('a request sent, then held for a re-send while disconnected, that runs out of time ends in a TimeoutError', async function () {
    // Regression (chaos run, seed 93): taking the publish out of mqtt.js's replay store made mqtt.js
    // call it back with "Message removed", which settled it first as ConnectionError 'lost'.
    const away = await pool.ready(proxy.url)
    proxy.freeze() // sent, never acknowledged
    const started = performance.now()
    const request = away.get(uniqueId('held'), { timeoutMs: 1500 })
    await new Promise((r) => setTimeout(r, 200))
    proxy.cut()
    proxy.thaw()
    await statusWhere(away, (s) => s.state !== 'connected')
    await assert.rejects(request, (err: unknown) => err instanceof TimeoutError && /no response/.test(err.message))
    assert.ok(performance.now() - started >= 1400, 'at its own deadline')
  })

  it('keeps its session (cleanStart false): requests and notifications from the time away are not lost or doubled', async function () {
    const away = await pool.ready(proxy.url, { cleanStart: false, sessionExpirySec: 30 })
    const writer = await pool.ready(t.url)
    const k = uniqueId('kept')
    const inbox = new Inbox()
    await away.observe(k, inbox.listener)
    proxy.cut()
    await statusWhere(away, (s) => s.state === 'disconnected')
    await writer.set(k, 'while-away')
    const pending = away.set(`${k}-own`, 'queued', { timeoutMs: 10_000 })
    proxy.restore()
    assert.equal((await pending).applied, true)
    const [n] = await inbox.count(1)
    assert.equal(n!.value?.toString(), 'while-away')
    await eventually(() => (away.load.inFlight === 0 ? true : undefined), 'away.load.inFlight === 0')
    await writer.set(k, 'after')
    await inbox.count(2)
    assert.deepEqual(
      inbox.items.map((i) => i.value?.toString()),
      ['while-away', 'after'],
    )
  })
})

describe('reconnect across a mosquitto restart (emulator over mosquitto)', function () {
  let spy: Responder
  // Registered first, so it runs first: the spy goes before the broker.
  after(() => spy?.stop())
  const fx = withEmulator({ broker: 'mosquitto', relay: true, clients: 'suite' })
  const { clients: pool } = fx
  before(async () => {
    spy = await Responder.start(fx.url, () => null)
  })

  it('completes requests in flight, re-registers and reconciles after the broker comes back', async function () {
    const away = await pool.ready(fx.relay.url)
    const writer = await pool.ready(fx.url)
    const k = uniqueId('restart')
    const inbox = new Inbox()
    await away.observe(k, inbox.listener)
    await writer.set(k, 'before')
    await inbox.count(1)

    // A burst in flight when the broker dies: some already executed, some not. NX, so that a
    // request executed twice would come back "not applied".
    const burst = Array.from({ length: 50 }, (_, i) =>
      away.set(`${k}-${i}`, `value-${i}`, { condition: 'NX', timeoutMs: 15_000 }),
    )
    await spy.waitForRequests(spy.requests.length + 10)
    fx.relay.cut()
    await fx.mosquitto.kill()
    await fx.mosquitto.start()
    // The writer and the emulator reconnect on their own; wait until the service answers again.
    await statusWhere(writer, (s) => s.state === 'connected')
    await retry(() => writer.set(k, 'while-away', { timeoutMs: 500 }))
    fx.relay.restore()

    const results = await Promise.all(burst)
    assert.ok(
      results.every((r) => r.applied),
      'every request executed once, duplicates answered from the dedup cache',
    )
    const seen = new Map<string, number>()
    for (const r of spy.requests)
      if (r.words[1]?.startsWith(`${k}-`))
        seen.set(r.correlation!.toString('hex'), (seen.get(r.correlation!.toString('hex')) ?? 0) + 1)
    assert.equal(seen.size, 50, 'one correlation id per request, kept across the reconnect')
    assert.ok(
      [...seen.values()].some((n) => n > 1),
      'some requests were sent again after the reconnect',
    )
    for (let i = 0; i < 50; i += 7) assert.equal((await writer.get(`${k}-${i}`)).value?.toString(), `value-${i}`)
    const [, reconciled] = await inbox.count(2)
    assert.equal(describeNotification(reconciled!), `reconciled SET ${k}=while-away`)
    await writer.set(k, 'live')
    const [, , live] = await inbox.count(3)
    assert.equal(describeNotification(live!), `SET ${k}=live`)
  })
})

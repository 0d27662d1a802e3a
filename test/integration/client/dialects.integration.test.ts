/**
 * Both dialects of the protocol (src/protocol/dialect.ts) against one emulator, over mosquitto and
 * over the embedded broker: every verb through the client in v1 and in the 2023 preview dialect,
 * the preview's wire format checked by hand, and a mixed run where a preview client and a v1
 * client share keys, versions and fencing tokens.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import mqtt, { type IPublishPacket } from 'mqtt'
import type { StateStoreClient } from '../../../src/client'
import { Lease, LeaderElection } from '../../../src/locks'
import { ArgumentError, ServiceError } from '../../../src/diagnostics/errors'
import { Hlc } from '../../../src/hlc'
import { encodeCommand } from '../../../src/resp'
import { PREVIEW_REQUEST_TOPIC, type ProtocolName } from '../../../src/protocol'
import { ClientPool, Inbox, uniqueId } from '../../support/clients'
import { onEveryBroker } from './support/topology'

/** One request sent by hand: the payload and user properties given, the whole response packet back. */
async function rawRequest(
  url: string,
  topic: string,
  args: string[],
  userProperties: Record<string, string>,
): Promise<IPublishPacket> {
  const clientId = uniqueId('raw')
  const responseTopic = `clients/${clientId}/services/statestore/_any_/command/invoke/response`
  const client = await mqtt.connectAsync(url, { protocolVersion: 5, clientId, reconnectPeriod: 0 })
  try {
    await client.subscribeAsync(responseTopic, { qos: 1 })
    const answer = new Promise<IPublishPacket>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer to ${args[0]} on ${topic}`)), 4000)
      client.on('message', (_t, _p, packet) => {
        clearTimeout(timer)
        resolve(packet)
      })
    })
    await client.publishAsync(topic, encodeCommand(args.map((a) => Buffer.from(a))), {
      qos: 1,
      properties: { responseTopic, correlationData: randomBytes(16), userProperties },
    })
    return await answer
  } finally {
    await client.endAsync()
  }
}

onEveryBroker('both protocol dialects', (t) => {
  const pool = new ClientPool()
  afterEach(() => pool.closeAll())

  for (const protocol of ['v1', 'preview'] as ProtocolName[]) {
    describe(`protocol ${protocol}`, function () {
      const ready = (): Promise<StateStoreClient> => pool.ready(t.url, { protocol })

      it('SET (NX, NEX, PX), GET, DEL and VDEL', async function () {
        const c = await ready()
        assert.equal(c.protocol, protocol)
        const k = uniqueId('key')
        assert.deepEqual(await c.get(k), { value: null, version: null })
        const first = await c.set(k, 'one', { condition: 'NX' })
        assert.equal(first.applied, true)
        assert.equal((await c.set(k, 'two', { condition: 'NX' })).applied, false)
        const got = await c.get(k)
        assert.equal(got.value?.toString(), 'one')
        assert.ok(
          got.version?.equals(first.version),
          `GET returns the SET version (${got.version} vs ${first.version})`,
        )
        assert.equal((await c.set(k, 'one', { condition: 'NEX' })).applied, true)
        assert.equal((await c.set(k, 'other', { condition: 'NEX' })).applied, false)
        assert.equal((await c.vdel(k, 'wrong')).deleted, -1)
        assert.equal((await c.vdel(k, 'one')).deleted, 1)
        await c.set(k, 'again')
        assert.equal((await c.del(k)).deleted, 1)
        assert.equal((await c.del(k)).deleted, 0)
        const brief = uniqueId('brief')
        await c.set(brief, 'x', { expiryMs: 50 })
        await new Promise((r) => setTimeout(r, 300))
        assert.equal((await c.get(brief)).value, null, 'PX expired the key')
      })

      it('fences SET, DEL and VDEL with a lease token', async function () {
        const c = await ready()
        const lease = new Lease(c, uniqueId('lease'), { leaseMs: 5000 })
        const first = await lease.tryAcquire()
        assert.equal(first.acquired, true)
        const guarded = uniqueId('guarded')
        assert.equal((await c.set(guarded, 'v', { fencingToken: first.fencingToken! })).applied, true)
        const renewed = await lease.tryAcquire()
        assert.ok(Hlc.compare(renewed.fencingToken!, first.fencingToken!) > 0)
        assert.equal((await c.set(guarded, 'v2', { fencingToken: renewed.fencingToken! })).applied, true)
        for (const stale of [
          c.set(guarded, 'late', { fencingToken: first.fencingToken! }),
          c.del(guarded, { fencingToken: first.fencingToken! }),
          c.vdel(guarded, 'v2', { fencingToken: first.fencingToken! }),
        ]) {
          await assert.rejects(
            stale,
            (e: unknown) => e instanceof ServiceError && e.code === 'FencingTokenLowerVersion',
          )
        }
        assert.equal((await c.vdel(guarded, 'v2', { fencingToken: renewed.fencingToken! })).deleted, 1)
        assert.equal(await lease.release(), true)
        await lease.close()
      })

      it('KEYNOTIFY: notifications in v1; in the preview a clear refusal from the client and "unknown command" from the service', async function () {
        const c = await ready()
        const k = uniqueId('watched')
        if (protocol === 'v1') {
          const inbox = new Inbox()
          const observation = await c.observe(k, inbox.listener)
          await c.set(k, 'seen')
          const [n] = await inbox.count(1)
          assert.equal(n!.value?.toString(), 'seen')
          await observation.close()
          return
        }
        assert.equal(c.canObserve, false)
        await assert.rejects(
          c.observe(k, () => {}),
          (e: unknown) => e instanceof ArgumentError && /preview protocol.*KEYNOTIFY/.test(e.message),
        )
        const answer = await rawRequest(t.url, PREVIEW_REQUEST_TOPIC, ['KEYNOTIFY', k], {
          Timestamp: `${Date.now()}:0:raw`,
        })
        assert.equal(answer.payload.toString(), '-ERR unknown command\r\n')
      })

      it('a waiting lock and a leader election work (without notifications in the preview, by polling)', async function () {
        const a = await ready()
        const b = await ready()
        const name = uniqueId('position')
        const ea = new LeaderElection(a, name, { termMs: 2000 })
        const eb = new LeaderElection(b, name, { termMs: 2000 })
        const ta = await ea.campaign({ timeoutMs: 5000 })
        const waiting = eb.campaign({ timeoutMs: 10000 })
        assert.equal((await eb.leader())?.toString(), a.clientId)
        assert.equal(await ea.resign(), true)
        const tb = await waiting
        assert.ok(Hlc.compare(tb, ta) > 0, 'the new term has a greater fencing token')
        await ea.close()
        await eb.resign()
        await eb.close()
      })
    })
  }

  it('preview on the wire: request topic, Timestamp and FencingToken properties, unpadded HLCs, no v1 headers', async function () {
    const k = uniqueId('wire')
    const now = Date.now()
    const set = await rawRequest(t.url, PREVIEW_REQUEST_TOPIC, ['SET', k, 'hello'], { Timestamp: `${now}:0:CLIENT` })
    assert.equal(set.payload.toString(), '+OK\r\n')
    const user = set.properties?.userProperties ?? {}
    assert.deepEqual(Object.keys(user), ['Timestamp'], `only Timestamp: ${JSON.stringify(user)}`)
    const version = String(user.Timestamp)
    assert.match(version, /^[1-9][0-9]*:(0|[1-9][0-9]*):[^:]+$/, 'written without zero padding')
    // A fencing token older than the key's: refused with the service's text, in the payload.
    const lease = uniqueId('lease')
    const acquired = await rawRequest(t.url, PREVIEW_REQUEST_TOPIC, ['SET', lease, 'me', 'NEX', 'PX', '5000'], {
      Timestamp: `${Date.now()}:0:CLIENT`,
    })
    const token = String(acquired.properties?.userProperties?.Timestamp)
    const fenced = await rawRequest(t.url, PREVIEW_REQUEST_TOPIC, ['SET', k, 'fenced'], {
      Timestamp: `${Date.now()}:0:CLIENT`,
      FencingToken: token,
    })
    assert.equal(fenced.payload.toString(), '+OK\r\n')
    const stale = await rawRequest(t.url, PREVIEW_REQUEST_TOPIC, ['DEL', k], {
      Timestamp: `${Date.now()}:0:CLIENT`,
      FencingToken: `${now - 1000}:0:CLIENT`,
    })
    assert.equal(
      stale.payload.toString(),
      '-ERR the request fencing token is a lower version than the fencing token protecting the resource\r\n',
    )
    // v1 property names mean nothing in the preview topic: a SET without Timestamp is refused.
    const wrongNames = await rawRequest(t.url, PREVIEW_REQUEST_TOPIC, ['SET', k, 'x'], {
      __ts: `${String(Date.now()).padStart(15, '0')}:00000:c`,
    })
    assert.equal(wrongNames.payload.toString(), '-ERR missing timestamp\r\n')
  })

  it('mixed: a preview client and a v1 client share keys, versions and fencing tokens', async function () {
    const preview = await pool.ready(t.url, { protocol: 'preview' })
    const v1 = await pool.ready(t.url, { protocol: 'v1' })
    const k = uniqueId('shared')
    const written = await preview.set(k, 'from preview')
    const seen = await v1.get(k)
    assert.equal(seen.value?.toString(), 'from preview')
    assert.ok(seen.version?.equals(written.version), 'the same version in both dialects')
    const rewritten = await v1.set(k, 'from v1')
    const back = await preview.get(k)
    assert.equal(back.value?.toString(), 'from v1')
    assert.ok(back.version?.equals(rewritten.version))

    // One lease, handed between dialects: each holder's token fences out the other's older one.
    const name = uniqueId('lease')
    const guarded = uniqueId('guarded')
    const held = new Lease(preview, name, { leaseMs: 5000 })
    const t1 = (await held.tryAcquire()).fencingToken!
    assert.equal((await v1.set(guarded, 'v1 with the preview token', { fencingToken: t1 })).applied, true)
    assert.equal(await held.release(), true)
    const taken = new Lease(v1, name, { leaseMs: 5000 })
    const t2 = (await taken.tryAcquire()).fencingToken!
    assert.ok(Hlc.compare(t2, t1) > 0)
    assert.equal((await preview.set(guarded, 'preview with the v1 token', { fencingToken: t2 })).applied, true)
    await assert.rejects(
      preview.set(guarded, 'stale', { fencingToken: t1 }),
      (e: unknown) => e instanceof ServiceError && e.code === 'FencingTokenLowerVersion',
    )
    await assert.rejects(
      v1.del(guarded, { fencingToken: t1 }),
      (e: unknown) => e instanceof ServiceError && e.code === 'FencingTokenLowerVersion',
    )
    assert.equal((await v1.get(guarded)).value?.toString(), 'preview with the v1 token')
    await held.close()
    await taken.release()
    await taken.close()
  })
})

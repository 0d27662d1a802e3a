import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SERVICE_ERROR_TEXT, type ServiceErrorCode } from '../../../src/diagnostics/errors'
import { Hlc } from '../../../src/hlc'
import {
  CONTENT_TYPE,
  Notification,
  notificationTopic,
  PREVIEW_REQUEST_TOPIC,
  Prop,
  Reply,
  Request,
  REQUEST_TOPIC,
  SERVICE_CLIENTS_PREFIX,
} from '../../../src/protocol'
import { encodeCommand } from '../../../src/resp'
import type { Emulator, EmulatorOptions } from '../../../src/emulator'
import { EMULATOR_REFUSAL_TEXT } from '../../../src/emulator/core/refusals'
import { RawClient, sleep, type Received, type SendOptions } from './raw-client'
import { until } from '../../support/wait'

/**
 * The emulator as a client sees it, through a real MQTT 5 broker: raw requests in, exact payloads
 * and properties out. Called once per broker (mosquitto, the embedded aedes).
 */

export type StartEmulator = (ctx: Mocha.Context, options: EmulatorOptions) => Promise<Emulator>

const err = (code: ServiceErrorCode): Buffer => Reply.error(SERVICE_ERROR_TEXT[code])
const ts = (r: Received): Hlc => Hlc.parse(r.prop(Prop.timestamp)!)
const text = (b: Buffer): string => JSON.stringify(b.toString('latin1'))

function assertPayload(r: Received, expected: Buffer, message?: string): void {
  assert.equal(text(r.payload), text(expected), message)
}

/** Publishes a request whose answer goes to `responseTopic` (not the client's own), as mosquitto_rr -e does. */
async function requestVia(
  c: RawClient,
  responseTopic: string,
  payload: Buffer,
  options: SendOptions = {},
): Promise<Received> {
  await c.client.subscribeAsync(responseTopic, { qos: 1 })
  const correlation = randomBytes(16)
  const arrived = until(
    () => c.others.some((m) => m.topic === responseTopic && m.properties.correlationData?.equals(correlation)),
    `an answer on ${responseTopic}`,
    4000,
  )
  c.send(payload, { ...options, responseTopic, correlation })
  await arrived
  await c.client.unsubscribeAsync(responseTopic)
  return c.others.find((m) => m.topic === responseTopic && m.properties.correlationData?.equals(correlation))!
}

/** A running emulator plus the clients and logs of one describe block. */
class Fixture {
  emulator!: Emulator
  readonly logs: string[] = []
  readonly clients: RawClient[] = []
  readonly dir = mkdtempSync(join(tmpdir(), 'emu-'))

  async start(ctx: Mocha.Context, start: StartEmulator, options: EmulatorOptions = {}): Promise<void> {
    this.emulator = await start(ctx, {
      logLevel: 'info',
      logger: (level, m) => this.logs.push(`${level} ${m}`),
      ...options,
    })
  }

  async client(id?: string): Promise<RawClient> {
    const c = await RawClient.connect(this.emulator.brokerUrl, id)
    this.clients.push(c)
    return c
  }

  async stop(): Promise<void> {
    await Promise.all(this.clients.map((c) => c.close()))
    this.clients.length = 0
    await this.emulator?.stop()
    rmSync(this.dir, { recursive: true, force: true })
  }
}

/** Where the broker is: the emulator's own (it sees connections) or another process (it sees only messages). */
export type BrokerKind = 'embedded' | 'external'

export function behaviourSuite(brokerName: string, start: StartEmulator, kind: BrokerKind): void {
  describe(`emulator behaviour over ${brokerName}`, function () {
    this.timeout(10_000)

    describe('requests and responses', function () {
      const f = new Fixture()
      let c: RawClient
      let other: RawClient
      before(async function () {
        await f.start(this, start, { persistFile: join(f.dir, 'store.aof') })
        c = await f.client()
        other = await f.client()
      })
      after(() => f.stop())

      it('answers SET and GET with the exact payloads and response properties', async () => {
        const sentTs = c.clock.current
        const set = await c.request(Request.set('greeting', 'hello'))
        assertPayload(set, Reply.ok)
        assert.equal(set.qos, 1)
        assert.equal(set.topic, c.responseTopic)
        assert.equal(set.properties.contentType, CONTENT_TYPE)
        assert.equal(set.prop(Prop.status), '200')
        assert.equal(set.prop(Prop.protocolVersion), '1.0')
        const expiry = set.properties.messageExpiryInterval!
        assert.ok(expiry >= 1 && expiry <= 10, `message expiry ${expiry}`)
        const version = ts(set)
        assert.equal(version.nodeId, f.emulator.nodeId)
        assert.ok(Hlc.compare(version, sentTs) > 0, 'the version is after the request __ts')

        const get = await c.request(Request.get('greeting'))
        assertPayload(get, Reply.value(Buffer.from('hello')))
        assert.equal(get.prop(Prop.timestamp), set.prop(Prop.timestamp), 'GET returns the version SET returned')
        assert.equal(get.prop(Prop.status), '200')

        const miss = await c.request(Request.get('no-such-key'))
        assertPayload(miss, Reply.nil)
        assert.equal(miss.prop(Prop.timestamp), undefined, 'a GET miss has no __ts')
        assert.equal(miss.prop(Prop.status), '200')
      })

      it('echoes any correlation data byte for byte and answers on whatever response topic the request names', async () => {
        const correlation = Buffer.from([0, 13, 10, 255, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
        const r = await c.request(Request.get('x'), { correlation })
        assert.deepEqual(r.properties.correlationData, correlation)
        const goTopic = `clients/${Buffer.from('go-client').toString('hex').toUpperCase()}/${REQUEST_TOPIC}/response`
        await c.client.subscribeAsync(goTopic, { qos: 1 })
        const arrived = new Promise<Buffer>((resolve) =>
          c.client.on('message', (topic, payload) => topic === goTopic && resolve(payload)),
        )
        c.send(Request.get('x'), { responseTopic: goTopic })
        assertPayload({ payload: await arrived } as Received, Reply.nil)
      })

      it('keeps binary keys and values byte for byte: CRLF, NUL, high bytes, empty values', async () => {
        const key = Buffer.from([0x00, 0x0d, 0x0a, 0xff, 0x24, 0x2a, 0x0d, 0x0a, 0x00])
        const value = Buffer.concat([Buffer.from('\r\n$5\r\n*1\r\n'), Buffer.from([0, 0, 0xfe, 0xff, 0x0d])])
        assertPayload(await c.request(Request.set(key, value)), Reply.ok)
        assertPayload(await c.request(Request.get(key)), Reply.value(value))
        // Keys that differ only in bytes invalid as UTF-8 are different keys.
        const k1 = Buffer.from([0xc3, 0x28])
        const k2 = Buffer.from([0xc3, 0x29])
        await c.request(Request.set(k1, 'one'))
        await c.request(Request.set(k2, 'two'))
        assertPayload(await c.request(Request.get(k1)), Reply.value(Buffer.from('one')))
        assertPayload(await c.request(Request.get(k2)), Reply.value(Buffer.from('two')))
        assertPayload(await c.request(Request.set('empty', Buffer.alloc(0))), Reply.ok)
        assertPayload(await c.request(Request.get('empty')), Buffer.from('$0\r\n\r\n'))
        assertPayload(await c.request(Request.vdel('empty', Buffer.alloc(0))), Reply.integer(1))
      })

      it('stores and returns a 1 MiB value', async () => {
        const value = randomBytes(1024 * 1024)
        assertPayload(await c.request(Request.set('big', value)), Reply.ok)
        const get = await c.request(Request.get('big'))
        assert.ok(get.payload.equals(Reply.value(value)), 'the 1 MiB value comes back intact')
        assertPayload(await c.request(Request.del('big')), Reply.integer(1))
      })

      it('applies NX and NEX, alone or with PX in any order, and reports the stored version when not applied', async () => {
        const first = await c.request(Request.set('cond', 'a', { condition: 'NX' }))
        assertPayload(first, Reply.ok)
        const skipped = await c.request(Request.set('cond', 'b', { condition: 'NX' }))
        assertPayload(skipped, Reply.notApplied)
        assert.equal(skipped.prop(Prop.timestamp), first.prop(Prop.timestamp), 'not applied: the stored version')
        const differ = await c.request(Request.set('cond', 'b', { condition: 'NEX' }))
        assertPayload(differ, Reply.notApplied)
        assert.equal(differ.prop(Prop.timestamp), first.prop(Prop.timestamp))
        const equal = await c.request(Request.set('cond', 'a', { condition: 'NEX' }))
        assertPayload(equal, Reply.ok)
        assert.ok(Hlc.compare(ts(equal), ts(first)) > 0, 'NEX on an equal value writes a new version')
        assertPayload(await c.request(Request.set('cond-nex-new', 'a', { condition: 'NEX' })), Reply.ok)

        for (const [i, words] of [
          ['NX', 'PX', '5000'],
          ['PX', '5000', 'NX'],
          ['NEX', 'PX', '5000'],
          ['PX', '5000', 'NEX'],
          ['NX', 'NX', 'PX', '5000'],
          ['PX', '5000'],
        ].entries()) {
          const r = await c.request(encodeCommand(['SET', `order-${i}`, 'v', ...words]))
          assertPayload(r, Reply.ok)
          assert.ok(r.prop(Prop.timestamp))
        }
        assertPayload(await c.request(encodeCommand(['SET', 'order-0', 'w', 'PX', '5000', 'NX'])), Reply.notApplied)
      })

      it('mints versions from its own clock: strictly increasing per key and after every request __ts', async () => {
        let last: Hlc | null = null
        for (let i = 0; i < 20; i++) {
          const r = await c.request(Request.set('versions', String(i)))
          const v = ts(r)
          if (last) assert.ok(Hlc.compare(v, last) > 0, `${v} > ${last}`)
          last = v
        }
        // A client whose clock runs 30 s ahead (within the 60 s allowed) still gets a later version.
        const ahead = new Hlc(Date.now() + 30_000, 7, 'fast-client')
        const r = await c.request(Request.set('versions', 'ahead'), { props: { [Prop.timestamp]: ahead.toString() } })
        assertPayload(r, Reply.ok)
        assert.ok(Hlc.compare(ts(r), ahead) > 0, `${ts(r)} > ${ahead}`)
        const next = await other.request(Request.set('versions', 'after'))
        assert.ok(Hlc.compare(ts(next), ts(r)) > 0, 'versions keep increasing after the clock jumped')
      })

      it('DEL answers :1 then :0; VDEL answers :-1 on a different value, :1 on the same, :0 when gone', async () => {
        await c.request(Request.set('d', 'v'))
        const del = await c.request(Request.del('d'))
        assertPayload(del, Reply.integer(1))
        assert.ok(del.prop(Prop.timestamp), 'a deletion has a version')
        const again = await c.request(Request.del('d'))
        assertPayload(again, Reply.integer(0))
        assert.equal(again.prop(Prop.timestamp), undefined)

        const set = await c.request(Request.set('vd', 'mine'))
        const mismatch = await c.request(Request.vdel('vd', 'yours'))
        assertPayload(mismatch, Reply.notApplied)
        assert.equal(mismatch.prop(Prop.timestamp), set.prop(Prop.timestamp))
        assertPayload(await c.request(Request.get('vd')), Reply.value(Buffer.from('mine')))
        assertPayload(await c.request(Request.vdel('vd', 'mine')), Reply.integer(1))
        assertPayload(await c.request(Request.vdel('vd', 'mine')), Reply.integer(0))
        assertPayload(await c.request(Request.get('vd')), Reply.nil)
      })

      it('checks __ts: SET needs one, others may omit it; malformed and too-far-ahead ones are refused', async () => {
        assertPayload(
          await c.request(Request.set('t', 'v'), { props: { [Prop.timestamp]: null } }),
          err('TimestampMissing'),
        )
        assertPayload(await c.request(Request.get('t'), { props: { [Prop.timestamp]: null } }), Reply.nil)
        assertPayload(await c.request(Request.del('t'), { props: { [Prop.timestamp]: null } }), Reply.integer(0))
        assertPayload(await c.request(Request.keyNotify('t'), { props: { [Prop.timestamp]: null } }), Reply.ok)
        for (const bad of [
          '',
          'garbage',
          '1700000000000:0',
          '1700000000000:00000:',
          'x:00000:node',
          '1700000000000:-1:node',
          '1:2:3:4',
        ]) {
          assertPayload(
            await c.request(Request.set('t', 'v'), { props: { [Prop.timestamp]: bad } }),
            err('TimestampMalformed'),
          )
          assertPayload(
            await c.request(Request.get('t'), { props: { [Prop.timestamp]: bad } }),
            err('TimestampMalformed'),
          )
        }
        const skewed = new Hlc(Date.now() + 61_000, 0, 'skewed').toString()
        assertPayload(
          await c.request(Request.set('t', 'v'), { props: { [Prop.timestamp]: skewed } }),
          err('TimestampSkew'),
        )
        assertPayload(await c.request(Request.get('t'), { props: { [Prop.timestamp]: skewed } }), err('TimestampSkew'))
        const past = new Hlc(0, 0, 'old').toString()
        assertPayload(await c.request(Request.set('t', 'v'), { props: { [Prop.timestamp]: past } }), Reply.ok)
      })

      it('enforces fencing tokens: stored on first use, required after, lower refused, newer advance, gone with the key', async () => {
        const t = (ms: number, counter = 0) => new Hlc(ms, counter, 'lock-node').toString()
        const base = Date.now() - 10_000
        const ft = (token: string) => ({ props: { [Prop.fencingToken]: token } })
        assertPayload(await c.request(Request.set('fenced', 'v1'), ft(t(base))), Reply.ok)
        assertPayload(await c.request(Request.set('fenced', 'v2')), err('MissingFencingToken'))
        assertPayload(
          await c.request(
            Request.set('fenced', 'v2'),
            ft(new Hlc(0, 0, '00000000-0000-0000-0000-000000000000').toString()),
          ),
          err('FencingTokenLowerVersion'),
        )
        assertPayload(await c.request(Request.set('fenced', 'v2'), ft(t(base))), Reply.ok)
        assertPayload(await c.request(Request.set('fenced', 'v3'), ft(t(base, 1))), Reply.ok)
        assertPayload(await c.request(Request.set('fenced', 'v4'), ft(t(base))), err('FencingTokenLowerVersion'))
        assertPayload(await c.request(Request.get('fenced')), Reply.value(Buffer.from('v3')))
        assertPayload(await c.request(Request.del('fenced')), err('MissingFencingToken'))
        assertPayload(await c.request(Request.del('fenced'), ft(t(base))), err('FencingTokenLowerVersion'))
        assertPayload(await c.request(Request.vdel('fenced', 'v3')), err('MissingFencingToken'))
        assertPayload(await c.request(Request.vdel('fenced', 'other'), ft(t(base, 1))), Reply.notApplied)
        assertPayload(await c.request(Request.set('fenced', 'v5', { condition: 'NX' })), err('MissingFencingToken'))
        assertPayload(
          await c.request(Request.set('fenced', 'v5', { condition: 'NX' }), ft(t(base, 1))),
          Reply.notApplied,
        )
        assertPayload(await c.request(Request.del('fenced'), ft(t(base + 1))), Reply.integer(1))
        // The token went with the key.
        assertPayload(await c.request(Request.set('fenced', 'free')), Reply.ok)
        assertPayload(await c.request(Request.del('fenced')), Reply.integer(1))
        // GET never needs a token; a token on GET is ignored.
        await c.request(Request.set('fenced2', 'v'), ft(t(base)))
        assertPayload(await c.request(Request.get('fenced2')), Reply.value(Buffer.from('v')))
        assertPayload(await c.request(Request.get('fenced2'), ft('garbage')), Reply.value(Buffer.from('v')))
        // A token on a key without one is stored on the spot.
        await c.request(Request.set('fenced3', 'v'))
        assertPayload(await c.request(Request.set('fenced3', 'w'), ft(t(base))), Reply.ok)
        assertPayload(await c.request(Request.set('fenced3', 'x')), err('MissingFencingToken'))
        // Malformed or far-future tokens.
        assertPayload(await c.request(Request.set('fenced2', 'v'), ft('not-an-hlc')), err('TimestampMalformed'))
        assertPayload(
          await c.request(
            Request.set('fenced2', 'v'),
            ft(new Hlc(Date.now() + 10 * 365 * 86_400_000, 0, 'x').toString()),
          ),
          err('FencingTokenSkew'),
        )
        assertPayload(
          await c.request(Request.del('fenced2'), ft(new Hlc(Date.now() + 120_000, 0, 'x').toString())),
          err('FencingTokenSkew'),
        )
      })

      // Over the wire: PX reaches the keyspace, and NEX renews. When a renewed key expires and that a
      // SET without PX makes a key permanent is proven with injected time in keyspace.test.ts.
      it('expires keys: present before the deadline, never after it; NEX with PX renews', async () => {
        const set = await c.request(Request.set('exp', 'v', { expiryMs: 300 }))
        const answeredAt = Date.now()
        assertPayload(set, Reply.ok)
        assertPayload(await c.request(Request.get('exp')), Reply.value(Buffer.from('v')))
        // The deadline was set before the answer left; anything sent after answer + 300 ms must miss.
        await sleep(answeredAt + 300 - Date.now() + 1)
        assertPayload(await c.request(Request.get('exp')), Reply.nil)
        assertPayload(await c.request(Request.set('exp', 'w', { condition: 'NX' })), Reply.ok)

        // Renewal (as a lease does): NEX with PX applies to the holder's key, NX does not.
        const lease = await c.request(Request.set('lease', 'holder', { condition: 'NEX', expiryMs: 60_000 }))
        assertPayload(lease, Reply.ok)
        const renewed = await c.request(Request.set('lease', 'holder', { condition: 'NEX', expiryMs: 60_000 }))
        assertPayload(renewed, Reply.ok)
        assert.ok(Hlc.compare(ts(renewed), ts(lease)) > 0)
        assertPayload(
          await c.request(Request.set('lease', 'intruder', { condition: 'NX', expiryMs: 60_000 })),
          Reply.notApplied,
        )
        assertPayload(await c.request(Request.get('lease')), Reply.value(Buffer.from('holder')))
      })

      it('answers a re-sent request (same response topic and correlation data) from its cache, never executing it twice', async () => {
        // A re-send is the same PUBLISH again: the same payload and user properties (a fixed __ts).
        const resend = (correlation: Buffer, props: Record<string, string> = {}) => ({
          correlation,
          props: { [Prop.timestamp]: c.clock.tick().toString(), ...props },
        })
        const correlation = randomBytes(16)
        const once = resend(correlation)
        const first = await c.request(Request.set('once', 'v', { condition: 'NX' }), once)
        assertPayload(first, Reply.ok)
        const resent = await c.request(Request.set('once', 'v', { condition: 'NX' }), once)
        assertPayload(resent, Reply.ok)
        assert.equal(resent.prop(Prop.timestamp), first.prop(Prop.timestamp), 'the same __ts')
        assert.deepEqual(resent.properties.correlationData, correlation)
        assert.ok(resent.properties.messageExpiryInterval! <= first.properties.messageExpiryInterval!)
        // A new correlation is a new request.
        assertPayload(await c.request(Request.set('once', 'v', { condition: 'NX' })), Reply.notApplied)
        // The same correlation from another response topic is another request.
        assertPayload(
          await other.request(Request.set('once', 'v', { condition: 'NX' }), { correlation }),
          Reply.notApplied,
        )

        const del = resend(randomBytes(16))
        assertPayload(await c.request(Request.del('once'), del), Reply.integer(1))
        await c.request(Request.set('once', 'again'))
        assertPayload(await c.request(Request.del('once'), del), Reply.integer(1))
        assertPayload(
          await c.request(Request.get('once')),
          Reply.value(Buffer.from('again')),
          'the re-sent DEL did not run',
        )

        // Re-sent while the original still waits for the disk: both get the one answer.
        const persist = resend(randomBytes(16), { [Prop.persist]: 'true' })
        const [a, b] = await Promise.all([
          c.request(Request.set('dup-durable', 'v', { condition: 'NX' }), persist),
          c.request(Request.set('dup-durable', 'v', { condition: 'NX' }), persist),
        ])
        assertPayload(a, Reply.ok)
        assertPayload(b, Reply.ok)
        assert.equal(a.prop(Prop.timestamp), b.prop(Prop.timestamp))
      })

      it('answers every malformed request with the right -ERR and keeps serving', async () => {
        const cases: Array<[string, Buffer, ServiceErrorCode]> = [
          ['empty payload', Buffer.alloc(0), 'SyntaxError'],
          ['garbage', Buffer.from('hello world'), 'SyntaxError'],
          ['simple string', Buffer.from('+GET\r\n'), 'SyntaxError'],
          ['integer', Buffer.from(':1\r\n'), 'SyntaxError'],
          ['bulk string', Buffer.from('$3\r\nGET\r\n'), 'SyntaxError'],
          ['null array', Buffer.from('*-1\r\n'), 'SyntaxError'],
          ['empty array', Buffer.from('*0\r\n'), 'SyntaxError'],
          ['array with an integer', Buffer.from('*2\r\n$3\r\nGET\r\n:1\r\n'), 'SyntaxError'],
          ['nested array', Buffer.from('*2\r\n$3\r\nGET\r\n*1\r\n$1\r\nk\r\n'), 'SyntaxError'],
          ['truncated', encodeCommand(['GET', 'key']).subarray(0, 12), 'SyntaxError'],
          ['length lies', Buffer.from('*2\r\n$3\r\nGET\r\n$9\r\nkey\r\n'), 'SyntaxError'],
          ['trailing bytes', Buffer.concat([encodeCommand(['GET', 'key']), Buffer.from('x')]), 'SyntaxError'],
          ['two commands', Buffer.concat([encodeCommand(['GET', 'a']), encodeCommand(['GET', 'b'])]), 'SyntaxError'],
          ['map', Buffer.from('%0\r\n'), 'SyntaxError'],
          ['unknown verb', encodeCommand(['FLUSHALL']), 'UnknownCommand'],
          ['lower-case verb', encodeCommand(['get', 'key']), 'UnknownCommand'],
          ['MGET (deferred by the SDKs, ADR 33)', encodeCommand(['MGET', 'a', 'b']), 'UnknownCommand'],
          ['SCAN without pattern', encodeCommand(['SCAN']), 'WrongNumberOfArguments'],
          ['SCAN with an empty pattern', encodeCommand(['SCAN', '']), 'SyntaxError'],
          ['SCAN with an unclosed [', encodeCommand(['SCAN', 'a[bc']), 'SyntaxError'],
          ['SCAN with too many arguments', encodeCommand(['SCAN', '*', 'token', 'more']), 'WrongNumberOfArguments'],
          ['GET without key', encodeCommand(['GET']), 'WrongNumberOfArguments'],
          ['GET with two keys', encodeCommand(['GET', 'a', 'b']), 'WrongNumberOfArguments'],
          ['SET without value', encodeCommand(['SET', 'k']), 'WrongNumberOfArguments'],
          ['DEL two keys', encodeCommand(['DEL', 'a', 'b']), 'WrongNumberOfArguments'],
          ['VDEL without value', encodeCommand(['VDEL', 'a']), 'WrongNumberOfArguments'],
          ['KEYNOTIFY without key', encodeCommand(['KEYNOTIFY']), 'WrongNumberOfArguments'],
          ['KEYNOTIFY too many', encodeCommand(['KEYNOTIFY', 'k', 'STOP', 'NOW']), 'WrongNumberOfArguments'],
          ['KEYNOTIFY bad option', encodeCommand(['KEYNOTIFY', 'k', 'START']), 'SyntaxError'],
          ['GET empty key', encodeCommand(['GET', '']), 'KeyLengthZero'],
          ['SET empty key', encodeCommand(['SET', '', 'v']), 'KeyLengthZero'],
          ['DEL empty key', encodeCommand(['DEL', '']), 'KeyLengthZero'],
          ['VDEL empty key', encodeCommand(['VDEL', '', 'v']), 'KeyLengthZero'],
          ['KEYNOTIFY empty key', encodeCommand(['KEYNOTIFY', '']), 'KeyLengthZero'],
          ['SET NX and NEX', encodeCommand(['SET', 'k', 'v', 'NX', 'NEX']), 'SyntaxError'],
          ['SET PX twice', encodeCommand(['SET', 'k', 'v', 'PX', '10', 'PX', '10']), 'SyntaxError'],
          ['SET PX without number', encodeCommand(['SET', 'k', 'v', 'PX']), 'SyntaxError'],
          ['SET PX 0', encodeCommand(['SET', 'k', 'v', 'PX', '0']), 'SyntaxError'],
          ['SET PX negative', encodeCommand(['SET', 'k', 'v', 'PX', '-5']), 'SyntaxError'],
          ['SET PX fraction', encodeCommand(['SET', 'k', 'v', 'PX', '1500.5']), 'SyntaxError'],
          ['SET PX text', encodeCommand(['SET', 'k', 'v', 'PX', 'soon']), 'SyntaxError'],
          ['SET lower-case option', encodeCommand(['SET', 'k', 'v', 'nx']), 'SyntaxError'],
          ['SET unknown option', encodeCommand(['SET', 'k', 'v', 'EX', '10']), 'SyntaxError'],
          ['NEX with an argument', encodeCommand(['SET', 'k', 'v', 'NEX', 'v']), 'SyntaxError'],
        ]
        for (const [name, payload, code] of cases) {
          const r = await c.request(payload)
          assert.equal(text(r.payload), text(err(code)), name)
          assert.equal(r.prop(Prop.status), '200', name)
          assert.equal(r.properties.contentType, CONTENT_TYPE, name)
        }
        assertPayload(await c.request(Request.set('still-serving', 'yes')), Reply.ok)
        assert.ok(
          f.logs.some((l) => l.includes('refused') && l.includes('UnknownCommand')),
          'refusals are logged with the reason',
        )
      })

      it('drops and logs requests it cannot answer: no Response Topic, no Correlation Data', async () => {
        const spy = await f.client()
        await spy.client.subscribeAsync({ [REQUEST_TOPIC]: { qos: 1 }, [`${SERVICE_CLIENTS_PREFIX}/#`]: { qos: 1 } })
        spy.send(Request.set('dropped', '1'), { responseTopic: null, correlation: randomBytes(16) })
        spy.send(Request.set('dropped', '2'), { correlation: null })
        spy.send(Request.set('dropped', '3'), { correlation: Buffer.alloc(0) })
        // A request sent after them is answered after them: by then, any answer to them would be here.
        assertPayload(await spy.request(Request.get('dropped')), Reply.nil)
        const answers = spy.others.filter((m) => m.prop(Prop.status) !== undefined)
        assert.deepEqual(
          answers.map((m) => m.topic),
          [],
          'nothing was answered',
        )
        for (const reason of ['no Response Topic', 'no Correlation Data']) {
          assert.ok(
            f.logs.some((l) => l.startsWith('warn') && l.includes(reason)),
            `logged: ${reason}`,
          )
        }
      })

      it('lets exactly one of two clients racing for SET NX win', async () => {
        for (let round = 0; round < 20; round++) {
          const key = `race-${round}`
          const [a, b] = await Promise.all([
            c.request(Request.set(key, 'c', { condition: 'NX', expiryMs: 5000 })),
            other.request(Request.set(key, 'other', { condition: 'NX', expiryMs: 5000 })),
          ])
          const wins = [a, b].filter((r) => r.payload.equals(Reply.ok))
          const losses = [a, b].filter((r) => r.payload.equals(Reply.notApplied))
          assert.equal(wins.length, 1, `round ${round}: one winner`)
          assert.equal(losses.length, 1, `round ${round}: one loser`)
          assert.equal(
            losses[0]!.prop(Prop.timestamp),
            wins[0]!.prop(Prop.timestamp),
            "the loser sees the winner's version",
          )
          const winner = wins[0] === a ? 'c' : 'other'
          assertPayload(await c.request(Request.get(key)), Reply.value(Buffer.from(winner)))
        }
      })

      it('serves thousands of requests in flight from many clients', async () => {
        const clients = await Promise.all(Array.from({ length: 8 }, () => f.client()))
        const results = await Promise.all(
          clients.flatMap((cl, i) =>
            Array.from({ length: 250 }, (_, j) =>
              cl.request(Request.set(`load-${i}-${j}`, `${i}:${j}`), { timeoutMs: 8000 }),
            ),
          ),
        )
        assert.equal(results.length, 2000)
        assert.ok(results.every((r) => r.payload.equals(Reply.ok)))
        const gets = await Promise.all(clients.map((cl, i) => cl.request(Request.get(`load-${i}-249`))))
        gets.forEach((g, i) => assertPayload(g, Reply.value(Buffer.from(`${i}:249`))))
      })
    })

    // What mosquitto_rr and mosquitto_pub users find: requests no SDK sends, answered as the article
    // says (or, where it is silent, as the official clients' evidence says). docs/emulator.md has each rule.
    describe('requests as plain MQTT tools send them', function () {
      const f = new Fixture()
      let c: RawClient
      before(async function () {
        await f.start(this, start)
        c = await f.client()
      })
      after(() => f.stop())

      it("mints the version of a SET with one application of the HLC receive rule, as in the article's example", async () => {
        // A client clock ahead of the store's (within the allowed minute): the article's `T:0:CLIENT` → `T:1:<node>`.
        const t = Date.now() + 20_000
        const set = await c.request(Request.set('hlc', 'v'), {
          props: { [Prop.timestamp]: new Hlc(t, 0, 'CLIENT').toString() },
        })
        assertPayload(set, Reply.ok)
        assert.equal(set.prop(Prop.timestamp), new Hlc(t, 1, f.emulator.nodeId).toString())
        assert.equal(
          (await c.request(Request.get('hlc'))).prop(Prop.timestamp),
          set.prop(Prop.timestamp),
          'GET returns the version SET returned',
        )
        const del = await c.request(Request.del('hlc'), {
          props: { [Prop.timestamp]: new Hlc(t + 1000, 4, 'CLIENT').toString() },
        })
        assert.equal(del.prop(Prop.timestamp), new Hlc(t + 1000, 5, f.emulator.nodeId).toString(), 'a deletion too')
        // A write without a later __ts still gets a version after every one minted before.
        const next = await c.request(Request.set('hlc', 'w'), {
          props: { [Prop.timestamp]: new Hlc(0, 0, 'CLIENT').toString() },
        })
        assert.ok(Hlc.compare(ts(next), ts(del)) > 0, `${ts(next)} > ${ts(del)}`)
      })

      it('answers a re-send from the cache, and refuses another request under the same correlation data without running it', async () => {
        const correlation = randomBytes(16)
        const first = { correlation, props: { [Prop.timestamp]: c.clock.tick().toString() } }
        const set = await c.request(Request.set('reused', 'first'), first)
        assertPayload(set, Reply.ok)
        // mosquitto_rr with the same -D correlation-data and another payload, or another __ts.
        for (const [payload, options] of [
          [Request.set('reused', 'second'), first],
          [Request.set('reused', 'first'), { correlation, props: { [Prop.timestamp]: c.clock.tick().toString() } }],
        ] as const) {
          const refused = await c.request(payload, options)
          assertPayload(refused, Reply.error(EMULATOR_REFUSAL_TEXT.CorrelationReused))
          assert.equal(refused.prop(Prop.timestamp), undefined, 'nothing was written')
          assert.equal(refused.prop(Prop.status), '200')
        }
        assertPayload(
          await c.request(Request.get('reused')),
          Reply.value(Buffer.from('first')),
          'the key keeps the write that was acknowledged',
        )
        // The first request's re-sends are still answered from the cache, byte for byte.
        const resent = await c.request(Request.set('reused', 'first'), first)
        assertPayload(resent, Reply.ok)
        assert.equal(resent.prop(Prop.timestamp), set.prop(Prop.timestamp))
        assert.ok(
          f.logs.some((l) => l.startsWith('info') && l.includes('CorrelationReused') && l.includes(c.clientId)),
          'logged with the client id',
        )
      })

      it('answers a request with Message Expiry 0 as one without expiry: executed once, answered once', async () => {
        const correlation = randomBytes(16)
        const request = { correlation, expiry: 0, props: { [Prop.timestamp]: c.clock.tick().toString() } }
        const r = await c.request(Request.set('expiry-zero', 'v', { condition: 'NX' }), request)
        assertPayload(r, Reply.ok)
        assert.equal(r.properties.messageExpiryInterval, undefined, 'no expiry on the answer either')
        assertPayload(await c.request(Request.get('expiry-zero')), Reply.value(Buffer.from('v')))
        const resent = await c.request(Request.set('expiry-zero', 'v', { condition: 'NX' }), request)
        assertPayload(resent, Reply.ok, 'remembered for re-sends like a request without expiry')
        assert.equal(resent.prop(Prop.timestamp), r.prop(Prop.timestamp))
      })

      it('refuses requests published with QoS 0 or QoS 2 with an -ERR answer, without running them', async () => {
        for (const qos of [0, 2] as const) {
          const r = await c.request(Request.set(`qos-${qos}`, 'v'), { qos })
          assertPayload(r, Reply.error(EMULATOR_REFUSAL_TEXT.NotQos1), `QoS ${qos}`)
          assert.equal(r.prop(Prop.status), '200')
          assertPayload(await c.request(Request.get(`qos-${qos}`)), Reply.nil, `the QoS ${qos} SET did not run`)
        }
        assert.ok(f.logs.some((l) => l.includes('NotQos1') && l.includes('QoS 2')))
      })

      const reservedTopics = [
        REQUEST_TOPIC,
        PREVIEW_REQUEST_TOPIC,
        `${SERVICE_CLIENTS_PREFIX}/x/response`,
        SERVICE_CLIENTS_PREFIX,
      ]
      if (kind === 'embedded') {
        it("disconnects a client whose request names the request topic or a topic under the service's prefix as its Response Topic", async () => {
          for (const [i, topic] of reservedTopics.entries()) {
            const bad = await f.client()
            bad.send(Request.set('reserved-topic', String(i)), { responseTopic: topic })
            const disconnect = await bad.disconnected
            assert.equal(disconnect.reasonCode, 0x90, 'Topic Name invalid')
            assert.match(disconnect.properties?.reasonString ?? '', /Response Topic .* may not be/)
            assert.ok(
              f.logs.some(
                (l) => l.startsWith('warn') && l.includes(`client ${JSON.stringify(bad.clientId)} disconnected`),
              ),
              'logged with the client id',
            )
          }
          assertPayload(await c.request(Request.get('reserved-topic')), Reply.nil, 'none of the requests ran')
        })
      } else {
        it("drops and logs, with the client id, a request whose Response Topic is the request topic or under the service's prefix; the client stays connected", async () => {
          const spy = await f.client()
          await spy.client.subscribeAsync({ [REQUEST_TOPIC]: { qos: 1 }, [`${SERVICE_CLIENTS_PREFIX}/#`]: { qos: 1 } })
          for (const [i, topic] of reservedTopics.entries())
            spy.send(Request.set('reserved-topic', String(i)), { responseTopic: topic })
          // A request sent after them is answered after them: by then, any answer to them would be here.
          assertPayload(await spy.request(Request.get('reserved-topic')), Reply.nil, 'none of the requests ran')
          assert.deepEqual(
            spy.others.filter((m) => m.prop(Prop.status) !== undefined).map((m) => m.topic),
            [],
            'nothing was answered',
          )
          assert.ok(spy.client.connected, "another broker's client cannot be disconnected by the service")
          const logged = f.logs.filter(
            (l) =>
              l.startsWith('warn') &&
              l.includes(`client ${JSON.stringify(spy.clientId)}`) &&
              l.includes('is not permitted'),
          )
          assert.equal(logged.length, reservedTopics.length)
        })
      }

      it(
        kind === 'embedded'
          ? "registers KEYNOTIFY under the connection's client id, whatever the response topic"
          : 'registers KEYNOTIFY only under a client id it can stand behind: __srcId or clients/<id>/…, else refuses it',
        async () => {
          const tool = await f.client()
          // mosquitto_rr -e replies/for/<id>: no __srcId, no $partition, a response topic outside clients/.
          const anonymous = { props: { [Prop.sourceId]: null, [Prop.partition]: null } }
          const answer = await requestVia(
            tool,
            `replies/for/${tool.clientId}`,
            Request.keyNotify('identity'),
            anonymous,
          )
          if (kind === 'embedded') {
            assertPayload(answer, Reply.ok)
          } else {
            assertPayload(answer, Reply.error(EMULATOR_REFUSAL_TEXT.UnknownClient))
            // Under clients/<id>/ the id is the level after clients/.
            assertPayload(
              await requestVia(tool, `clients/${tool.clientId}/anything`, Request.keyNotify('identity'), anonymous),
              Reply.ok,
            )
          }
          await c.request(Request.set('identity', 'v'))
          const n = await tool.nextNotification()
          assert.equal(n.topic, notificationTopic(tool.clientId, Buffer.from('identity')))
          assertPayload(n, Notification.set(Buffer.from('v')))
        },
      )

      it('publishes notifications through the broker: a monitoring subscriber sees them, a subscribed client gets one copy', async () => {
        const monitor = await f.client()
        await monitor.client.subscribeAsync(`${SERVICE_CLIENTS_PREFIX}/#`, { qos: 1 })
        // As the Go SDK: registered, but no subscription to its notification topic.
        const quiet = await RawClient.connect(f.emulator.brokerUrl, undefined, {}, { notifications: false })
        f.clients.push(quiet)
        const watcher = await f.client()
        assertPayload(await quiet.request(Request.keyNotify('routed')), Reply.ok)
        assertPayload(await watcher.request(Request.keyNotify('routed')), Reply.ok)
        await c.request(Request.set('routed', 'v'))
        await c.request(Request.del('routed'))
        const topics = [
          notificationTopic(quiet.clientId, Buffer.from('routed')),
          notificationTopic(watcher.clientId, Buffer.from('routed')),
        ]
        await until(
          () => topics.every((t) => monitor.others.filter((m) => m.topic === t).length === 2),
          'the monitor sees both notifications of both clients',
          4000,
        )
        for (const t of topics) {
          const seen = monitor.others.filter((m) => m.topic === t)
          assertPayload(seen[0]!, Notification.set(Buffer.from('v')))
          assertPayload(seen[1]!, Notification.delete)
        }
        // The subscribed watcher: each change once, not once routed and once more delivered directly.
        assertPayload(await watcher.nextNotification(), Notification.set(Buffer.from('v')))
        assertPayload(await watcher.nextNotification(), Notification.delete)
        assertPayload(await watcher.request(Request.keyNotify('routed-sentinel')), Reply.ok)
        await c.request(Request.set('routed-sentinel', 'x'))
        assert.equal((await watcher.nextNotification()).key.toString(), 'routed-sentinel', 'no second copy')
        if (kind === 'embedded') {
          // The broker in this process also hands them to the client that registered without subscribing.
          assertPayload(await quiet.nextNotification(), Notification.set(Buffer.from('v')))
          assertPayload(await quiet.nextNotification(), Notification.delete)
        }
      })

      it("answers the article's literal examples as docs/emulator.md says", async () => {
        // Lower-case verbs (the article's RESP3 examples): unknown command.
        for (const example of [
          '*3\r\n$3\r\nset\r\n$7\r\nSETKEY2\r\n$6\r\nVALUE5\r\n',
          '*2\r\n$3\r\nget\r\n$7\r\nSETKEY2\r\n',
          '*2\r\n$3\r\ndel\r\n$7\r\nSETKEY2\r\n',
          '*3\r\n$4\r\nvdel\r\n$7\r\nSETKEY2\r\n$3\r\nABC\r\n',
        ]) {
          assertPayload(await c.request(Buffer.from(example)), err('UnknownCommand'), example)
        }
        // `NEX <value>`: the value is the SET's own; an argument after NEX is a syntax error.
        assertPayload(
          await c.request(encodeCommand(['SET', 'LockName', 'Client1', 'NEX', 'Client1', 'PX', '10000'])),
          err('SyntaxError'),
        )
        // KEYNOTIFY with a GET option (the article ties VALUE to it): syntax error; VALUE is always sent.
        assertPayload(await c.request(encodeCommand(['KEYNOTIFY', 'SOMEKEY', 'GET'])), err('SyntaxError'))
        // The article's KEYNOTIFY layout without RESP3 framing: syntax error.
        assertPayload(await c.request(Buffer.from('KEYNOTIFY\r\nSOMEKEY\r\n')), err('SyntaxError'))
        // NX not applied and VDEL mismatch: `:-1`, not the article's `-1`.
        assertPayload(await c.request(Request.set('article', 'a')), Reply.ok)
        assertPayload(await c.request(Request.set('article', 'b', { condition: 'NX' })), Buffer.from(':-1\r\n'))
        assertPayload(await c.request(Request.vdel('article', 'b')), Buffer.from(':-1\r\n'))
        // A deletion is notified as `NOTIFY DELETE`, not the article's `NOTIFY DEL`.
        assertPayload(await c.request(Request.keyNotify('article')), Reply.ok)
        await c.request(Request.del('article'))
        const n = await c.nextNotification()
        assertPayload(n, Buffer.from('*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n'))
      })
    })

    describe('key notifications', function () {
      const f = new Fixture()
      let watcher: RawClient
      let writer: RawClient
      before(async function () {
        await f.start(this, start)
        watcher = await f.client()
        writer = await f.client()
      })
      after(() => f.stop())

      it('notifies SET and DELETE on the upper-case hex topic with the version, to the writer too', async () => {
        const key = Buffer.from([0x6b, 0x00, 0x0d, 0x0a, 0xab])
        assertPayload(await watcher.request(Request.keyNotify(key)), Reply.ok)
        assertPayload(await writer.request(Request.keyNotify(key)), Reply.ok)
        const set = await writer.request(Request.set(key, 'v\r\n1'))
        const del = await writer.request(Request.del(key))
        for (const cl of [watcher, writer]) {
          const n1 = await cl.nextNotification()
          assert.equal(n1.topic, notificationTopic(cl.clientId, key))
          assert.match(n1.topic, /\/command\/notify\/6B000D0AAB$/)
          assert.equal(n1.topic.split('/')[4], Buffer.from(cl.clientId).toString('hex').toUpperCase())
          assert.equal(n1.qos, 1)
          assertPayload(n1, Notification.set(Buffer.from('v\r\n1')))
          assert.equal(n1.prop(Prop.timestamp), set.prop(Prop.timestamp))
          assert.equal(n1.properties.contentType, CONTENT_TYPE)
          const n2 = await cl.nextNotification()
          assertPayload(n2, Notification.delete)
          assert.equal(n2.prop(Prop.timestamp), del.prop(Prop.timestamp))
          assert.ok(Hlc.compare(ts(n2), ts(n1)) > 0)
        }
      })

      it('delivers every change in order', async () => {
        assertPayload(await watcher.request(Request.keyNotify('ordered')), Reply.ok)
        const answers = await Promise.all(
          Array.from({ length: 100 }, (_, i) => writer.request(Request.set('ordered', String(i)))),
        )
        let last: Hlc | null = null
        for (let i = 0; i < 100; i++) {
          const n = await watcher.nextNotification()
          assertPayload(n, Notification.set(Buffer.from(String(i))))
          assert.equal(n.prop(Prop.timestamp), answers[i]!.prop(Prop.timestamp))
          if (last) assert.ok(Hlc.compare(ts(n), last) > 0)
          last = ts(n)
        }
        assertPayload(await watcher.request(Request.keyNotifyStop('ordered')), Reply.ok)
      })

      it('watches keys that do not exist yet; re-registering is +OK and still one notification per change', async () => {
        assertPayload(await watcher.request(Request.keyNotify('later')), Reply.ok)
        assertPayload(await watcher.request(Request.keyNotify('later')), Reply.ok)
        await writer.request(Request.set('later', 'x'))
        await writer.request(Request.set('later-sentinel', 'x'))
        assertPayload(await watcher.request(Request.keyNotify('later-sentinel')), Reply.ok)
        await writer.request(Request.set('later-sentinel', 'y'))
        assertPayload(await watcher.nextNotification(), Notification.set(Buffer.from('x')))
        const next = await watcher.nextNotification()
        assert.equal(next.key.toString(), 'later-sentinel', 'no second notification for the double registration')
      })

      it('STOP ends notifications and answers :0 when nothing was registered', async () => {
        assertPayload(await watcher.request(Request.keyNotify('stopme')), Reply.ok)
        assertPayload(await watcher.request(Request.keyNotifyStop('stopme')), Reply.ok)
        assertPayload(await watcher.request(Request.keyNotifyStop('stopme')), Reply.integer(0))
        assertPayload(await watcher.request(Request.keyNotifyStop('never-registered')), Reply.integer(0))
        await writer.request(Request.set('stopme', 'unseen'))
        assertPayload(await watcher.request(Request.keyNotify('stop-sentinel')), Reply.ok)
        await writer.request(Request.set('stop-sentinel', 'seen'))
        const n = await watcher.nextNotification()
        assert.equal(n.key.toString(), 'stop-sentinel')
      })

      it('notifies DELETE when a key expires, without anyone touching it', async () => {
        assertPayload(await watcher.request(Request.keyNotify('short-lived')), Reply.ok)
        const set = await writer.request(Request.set('short-lived', 'v', { expiryMs: 150 }))
        const n1 = await watcher.nextNotification()
        assertPayload(n1, Notification.set(Buffer.from('v')))
        const n2 = await watcher.nextNotification(3000)
        assertPayload(n2, Notification.delete)
        assert.equal(n2.key.toString(), 'short-lived')
        assert.ok(Hlc.compare(ts(n2), ts(set)) > 0, 'the DELETE has a later version')
        assertPayload(await writer.request(Request.get('short-lived')), Reply.nil)
      })

      it('notifies VDEL deletions and NEX renewals, not refused or skipped writes', async () => {
        assertPayload(await watcher.request(Request.keyNotify('vn')), Reply.ok)
        await writer.request(Request.set('vn', 'a'))
        await writer.request(Request.set('vn', 'b', { condition: 'NX' }))
        await writer.request(Request.set('vn', 'a', { condition: 'NEX' }))
        await writer.request(Request.vdel('vn', 'zzz'))
        await writer.request(Request.vdel('vn', 'a'))
        assertPayload(await watcher.nextNotification(), Notification.set(Buffer.from('a')))
        assertPayload(await watcher.nextNotification(), Notification.set(Buffer.from('a')))
        assertPayload(await watcher.nextNotification(), Notification.delete)
        assertPayload(await watcher.request(Request.keyNotifyStop('vn')), Reply.ok)
      })
    })

    describe('key quota', function () {
      const f = new Fixture()
      let c: RawClient
      before(async function () {
        await f.start(this, start, { maxKeys: 2 })
        c = await f.client()
      })
      after(() => f.stop())

      // That an expired key frees room is proven with injected time in keyspace.test.ts.
      it('refuses a new key beyond the quota, allows overwrites, and frees room on delete', async () => {
        assertPayload(await c.request(Request.set('q1', 'v')), Reply.ok)
        assertPayload(await c.request(Request.set('q2', 'v')), Reply.ok)
        assertPayload(await c.request(Request.set('q3', 'v')), err('QuotaExceeded'))
        assertPayload(await c.request(Request.set('q1', 'overwrite')), Reply.ok)
        assertPayload(await c.request(Request.get('q3')), Reply.nil)
        assertPayload(await c.request(Request.del('q1')), Reply.integer(1))
        assertPayload(await c.request(Request.set('q3', 'v')), Reply.ok)
        assertPayload(await c.request(Request.set('q4', 'v')), err('QuotaExceeded'))
        assert.equal(f.emulator.keyCount, 2)
      })
    })

    describe('authorization rules', function () {
      const f = new Fixture()
      before(async function () {
        const file = join(f.dir, 'auth.json')
        writeFileSync(
          file,
          JSON.stringify({
            rules: [
              {
                principals: { clientIds: ['reader-*'] },
                stateStoreResources: [{ method: 'Read', keyType: 'Pattern', keys: ['shared/*'] }],
              },
              {
                principals: { clientIds: ['writer-*'] },
                stateStoreResources: [
                  { method: 'ReadWrite', keyType: 'Pattern', keys: ['shared/*', '{principal.clientId}/*'] },
                  { method: 'Write', keyType: 'Binary', keys: [Buffer.from([0, 1, 2]).toString('base64')] },
                ],
              },
            ],
          }),
        )
        await f.start(this, start, { authorizationFile: file })
      })
      after(() => f.stop())

      it('grants what the rules grant, by client id and key, and refuses the rest with -ERR not authorized', async () => {
        const writer = await f.client('writer-1')
        const reader = await f.client('reader-1')
        const stranger = await f.client('stranger')
        assertPayload(await writer.request(Request.set('shared/a', 'v')), Reply.ok)
        assertPayload(await reader.request(Request.get('shared/a')), Reply.value(Buffer.from('v')))
        assertPayload(await reader.request(Request.keyNotify('shared/a')), Reply.ok)
        assertPayload(await reader.request(Request.set('shared/a', 'w')), err('NotAuthorized'))
        assertPayload(await reader.request(Request.del('shared/a')), err('NotAuthorized'))
        assertPayload(await reader.request(Request.get('private')), err('NotAuthorized'))
        assertPayload(await writer.request(Request.set('writer-1/mine', 'v')), Reply.ok)
        assertPayload(await writer.request(Request.set('writer-2/theirs', 'v')), err('NotAuthorized'))
        assertPayload(await writer.request(Request.set(Buffer.from([0, 1, 2]), 'v')), Reply.ok)
        assertPayload(await writer.request(Request.get(Buffer.from([0, 1, 2]))), err('NotAuthorized'))
        assertPayload(await stranger.request(Request.get('shared/a')), err('NotAuthorized'))
        assert.ok(f.logs.some((l) => l.includes('NotAuthorized') && l.includes('stranger')))
      })
    })
  })
}

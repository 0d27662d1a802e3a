import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SERVICE_ERROR_TEXT, type ServiceErrorCode } from '../../src/errors'
import { Hlc } from '../../src/hlc'
import { CONTENT_TYPE, Notification, notificationTopic, Prop, Reply, Request, REQUEST_TOPIC, SERVICE_CLIENTS_PREFIX } from '../../src/protocol'
import { encodeCommand, encodeValue } from '../../src/resp'
import type { Emulator, EmulatorOptions } from '../../src/emulator'
import { RawClient, sleep, type Received } from './raw-client'

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

/** A running emulator plus the clients and logs of one describe block. */
class Fixture {
  emulator!: Emulator
  readonly logs: string[] = []
  readonly clients: RawClient[] = []
  readonly dir = mkdtempSync(join(tmpdir(), 'emu-'))

  async start(ctx: Mocha.Context, start: StartEmulator, options: EmulatorOptions = {}): Promise<void> {
    this.emulator = await start(ctx, { logLevel: 'info', logger: (level, m) => this.logs.push(`${level} ${m}`), ...options })
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

export function behaviourSuite(brokerName: string, start: StartEmulator): void {
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
        const arrived = new Promise<Buffer>((resolve) => c.client.on('message', (topic, payload) => topic === goTopic && resolve(payload)))
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

        for (const [i, words] of [['NX', 'PX', '5000'], ['PX', '5000', 'NX'], ['NEX', 'PX', '5000'], ['PX', '5000', 'NEX'], ['NX', 'NX', 'PX', '5000'], ['PX', '5000']].entries()) {
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
        assertPayload(await c.request(Request.set('t', 'v'), { props: { [Prop.timestamp]: null } }), err('TimestampMissing'))
        assertPayload(await c.request(Request.get('t'), { props: { [Prop.timestamp]: null } }), Reply.nil)
        assertPayload(await c.request(Request.del('t'), { props: { [Prop.timestamp]: null } }), Reply.integer(0))
        assertPayload(await c.request(Request.keyNotify('t'), { props: { [Prop.timestamp]: null } }), Reply.ok)
        for (const bad of ['', 'garbage', '1700000000000:0', '1700000000000:00000:', 'x:00000:node', '1700000000000:-1:node', '1:2:3:4']) {
          assertPayload(await c.request(Request.set('t', 'v'), { props: { [Prop.timestamp]: bad } }), err('TimestampMalformed'))
          assertPayload(await c.request(Request.get('t'), { props: { [Prop.timestamp]: bad } }), err('TimestampMalformed'))
        }
        const skewed = new Hlc(Date.now() + 61_000, 0, 'skewed').toString()
        assertPayload(await c.request(Request.set('t', 'v'), { props: { [Prop.timestamp]: skewed } }), err('TimestampSkew'))
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
        assertPayload(await c.request(Request.set('fenced', 'v2'), ft(new Hlc(0, 0, '00000000-0000-0000-0000-000000000000').toString())), err('FencingTokenLowerVersion'))
        assertPayload(await c.request(Request.set('fenced', 'v2'), ft(t(base))), Reply.ok)
        assertPayload(await c.request(Request.set('fenced', 'v3'), ft(t(base, 1))), Reply.ok)
        assertPayload(await c.request(Request.set('fenced', 'v4'), ft(t(base))), err('FencingTokenLowerVersion'))
        assertPayload(await c.request(Request.get('fenced')), Reply.value(Buffer.from('v3')))
        assertPayload(await c.request(Request.del('fenced')), err('MissingFencingToken'))
        assertPayload(await c.request(Request.del('fenced'), ft(t(base))), err('FencingTokenLowerVersion'))
        assertPayload(await c.request(Request.vdel('fenced', 'v3')), err('MissingFencingToken'))
        assertPayload(await c.request(Request.vdel('fenced', 'other'), ft(t(base, 1))), Reply.notApplied)
        assertPayload(await c.request(Request.set('fenced', 'v5', { condition: 'NX' })), err('MissingFencingToken'))
        assertPayload(await c.request(Request.set('fenced', 'v5', { condition: 'NX' }), ft(t(base, 1))), Reply.notApplied)
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
        assertPayload(await c.request(Request.set('fenced2', 'v'), ft(new Hlc(Date.now() + 10 * 365 * 86_400_000, 0, 'x').toString())), err('FencingTokenSkew'))
        assertPayload(await c.request(Request.del('fenced2'), ft(new Hlc(Date.now() + 120_000, 0, 'x').toString())), err('FencingTokenSkew'))
      })

      it('expires keys: present before the deadline, never after it, renewable just before it', async () => {
        const set = await c.request(Request.set('exp', 'v', { expiryMs: 300 }))
        const answeredAt = Date.now()
        assertPayload(set, Reply.ok)
        assertPayload(await c.request(Request.get('exp')), Reply.value(Buffer.from('v')))
        // The deadline was set before the answer left; anything sent after answer + 300 ms must miss.
        await sleep(answeredAt + 300 - Date.now() + 1)
        assertPayload(await c.request(Request.get('exp')), Reply.nil)
        assertPayload(await c.request(Request.set('exp', 'w', { condition: 'NX' })), Reply.ok)

        // Renewal (as a lease does): NEX PX shortly before expiry keeps the key alive.
        const lease = await c.request(Request.set('lease', 'holder', { condition: 'NEX', expiryMs: 600 }))
        assertPayload(lease, Reply.ok)
        await sleep(350)
        const renewed = await c.request(Request.set('lease', 'holder', { condition: 'NEX', expiryMs: 600 }))
        assertPayload(renewed, Reply.ok)
        assert.ok(Hlc.compare(ts(renewed), ts(lease)) > 0)
        assertPayload(await c.request(Request.set('lease', 'intruder', { condition: 'NX', expiryMs: 600 })), Reply.notApplied)
        await sleep(350)
        // Past the first deadline, within the renewed one.
        assertPayload(await c.request(Request.get('lease')), Reply.value(Buffer.from('holder')))
        // A SET without PX makes the key permanent.
        await c.request(Request.set('lease', 'holder'))
        await sleep(50)
        assertPayload(await c.request(Request.get('lease')), Reply.value(Buffer.from('holder')))
      })

      it('answers a re-sent request (same response topic and correlation data) from its cache, never executing it twice', async () => {
        const correlation = randomBytes(16)
        const first = await c.request(Request.set('once', 'v', { condition: 'NX' }), { correlation })
        assertPayload(first, Reply.ok)
        const resent = await c.request(Request.set('once', 'v', { condition: 'NX' }), { correlation })
        assertPayload(resent, Reply.ok)
        assert.equal(resent.prop(Prop.timestamp), first.prop(Prop.timestamp), 'the same __ts')
        assert.deepEqual(resent.properties.correlationData, correlation)
        assert.ok(resent.properties.messageExpiryInterval! <= first.properties.messageExpiryInterval!)
        // A new correlation is a new request.
        assertPayload(await c.request(Request.set('once', 'v', { condition: 'NX' })), Reply.notApplied)
        // The same correlation from another response topic is another request.
        assertPayload(await other.request(Request.set('once', 'v', { condition: 'NX' }), { correlation }), Reply.notApplied)

        const delCorrelation = randomBytes(16)
        assertPayload(await c.request(Request.del('once'), { correlation: delCorrelation }), Reply.integer(1))
        await c.request(Request.set('once', 'again'))
        assertPayload(await c.request(Request.del('once'), { correlation: delCorrelation }), Reply.integer(1))
        assertPayload(await c.request(Request.get('once')), Reply.value(Buffer.from('again')), 'the re-sent DEL did not run')

        // Re-sent while the original still waits for the disk: both get the one answer.
        const pc = randomBytes(16)
        const persist = { correlation: pc, props: { [Prop.persist]: 'true' } }
        const [a, b] = await Promise.all([c.request(Request.set('dup-durable', 'v', { condition: 'NX' }), persist), c.request(Request.set('dup-durable', 'v', { condition: 'NX' }), persist)])
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
          ['map', encodeValue({ kind: 'map', value: [] }), 'SyntaxError'],
          ['unknown verb', encodeCommand(['FLUSHALL']), 'UnknownCommand'],
          ['lower-case verb', encodeCommand(['get', 'key']), 'UnknownCommand'],
          ['SCAN', encodeCommand(['SCAN', '*']), 'UnknownCommand'],
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
        assert.ok(f.logs.some((l) => l.includes('refused') && l.includes('UnknownCommand')), 'refusals are logged with the reason')
      })

      it('drops and logs requests it cannot answer: no Response Topic, no Correlation Data, a reserved Response Topic', async () => {
        const spy = await f.client()
        await spy.client.subscribeAsync({ [REQUEST_TOPIC]: { qos: 1 }, [`${SERVICE_CLIENTS_PREFIX}/#`]: { qos: 1 } })
        const marks = [randomBytes(16), randomBytes(16), randomBytes(16), randomBytes(16)]
        spy.send(Request.set('dropped', '1'), { responseTopic: null, correlation: marks[0]! })
        spy.send(Request.set('dropped', '2'), { correlation: null })
        spy.send(Request.set('dropped', '3'), { correlation: Buffer.alloc(0) })
        spy.send(Request.set('dropped', '4'), { responseTopic: REQUEST_TOPIC, correlation: marks[1]! })
        spy.send(Request.set('dropped', '5'), { responseTopic: `${SERVICE_CLIENTS_PREFIX}/x/response`, correlation: marks[2]! })
        spy.send(Request.set('dropped', '6'), { responseTopic: SERVICE_CLIENTS_PREFIX, correlation: marks[3]! })
        // A request sent after them is answered after them: by then, any answer to them would be here.
        assertPayload(await spy.request(Request.get('dropped')), Reply.nil)
        const answers = spy.others.filter((m) => m.prop(Prop.status) !== undefined)
        assert.deepEqual(answers.map((m) => m.topic), [], 'nothing was answered')
        for (const reason of ['no Response Topic', 'no Correlation Data', 'reserved']) {
          assert.ok(f.logs.some((l) => l.startsWith('warn') && l.includes(reason)), `logged: ${reason}`)
        }
      })

      it('lets exactly one of two clients racing for SET NX win', async () => {
        for (let round = 0; round < 20; round++) {
          const key = `race-${round}`
          const [a, b] = await Promise.all([c.request(Request.set(key, 'c', { condition: 'NX', expiryMs: 5000 })), other.request(Request.set(key, 'other', { condition: 'NX', expiryMs: 5000 }))])
          const wins = [a, b].filter((r) => r.payload.equals(Reply.ok))
          const losses = [a, b].filter((r) => r.payload.equals(Reply.notApplied))
          assert.equal(wins.length, 1, `round ${round}: one winner`)
          assert.equal(losses.length, 1, `round ${round}: one loser`)
          assert.equal(losses[0]!.prop(Prop.timestamp), wins[0]!.prop(Prop.timestamp), 'the loser sees the winner\'s version')
          const winner = wins[0] === a ? 'c' : 'other'
          assertPayload(await c.request(Request.get(key)), Reply.value(Buffer.from(winner)))
        }
      })

      it('serves thousands of requests in flight from many clients', async () => {
        const clients = await Promise.all(Array.from({ length: 8 }, () => f.client()))
        const results = await Promise.all(
          clients.flatMap((cl, i) => Array.from({ length: 250 }, (_, j) => cl.request(Request.set(`load-${i}-${j}`, `${i}:${j}`), { timeoutMs: 8000 }))),
        )
        assert.equal(results.length, 2000)
        assert.ok(results.every((r) => r.payload.equals(Reply.ok)))
        const gets = await Promise.all(clients.map((cl, i) => cl.request(Request.get(`load-${i}-249`))))
        gets.forEach((g, i) => assertPayload(g, Reply.value(Buffer.from(`${i}:249`))))
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
        const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => writer.request(Request.set('ordered', String(i)))))
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

      it('refuses a new key beyond the quota, allows overwrites, and frees room on delete and expiry', async () => {
        assertPayload(await c.request(Request.set('q1', 'v')), Reply.ok)
        assertPayload(await c.request(Request.set('q2', 'v', { expiryMs: 200 })), Reply.ok)
        assertPayload(await c.request(Request.set('q3', 'v')), err('QuotaExceeded'))
        assertPayload(await c.request(Request.set('q1', 'overwrite')), Reply.ok)
        assertPayload(await c.request(Request.get('q3')), Reply.nil)
        await sleep(250)
        assertPayload(await c.request(Request.set('q3', 'v')), Reply.ok)
        assertPayload(await c.request(Request.del('q1')), Reply.integer(1))
        assertPayload(await c.request(Request.set('q4', 'v')), Reply.ok)
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
              { principals: { clientIds: ['reader-*'] }, stateStoreResources: [{ method: 'Read', keyType: 'Pattern', keys: ['shared/*'] }] },
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

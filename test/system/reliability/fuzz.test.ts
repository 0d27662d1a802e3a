/**
 * The emulator under bad input, generated with fast-check: random bytes, mutated and truncated
 * requests, RESP3 of the wrong shape, and user properties that are missing, repeated, huge or
 * not valid UTF-8 (as a broker hands them over: U+FFFD and lone surrogates in JS strings).
 *
 * The rule (protocol reference, sections 2, 10 and 12): a request without a usable Response Topic
 * or Correlation Data is dropped (a Message Expiry of 0 is no expiry, as mosquitto passes it on); every other
 * request gets exactly one answer on its Response Topic with the Correlation Data echoed,
 * `__stat=200` and a non-empty RESP3 payload, `-ERR <catalogue text>` when it is refused. The
 * service never throws, never logs an internal error, and its memory does not grow with the
 * number of bad requests.
 *
 * 100,000 requests go through the service's request handler in-process (the MQTT client's publish
 * is replaced by a recorder, so the run measures the emulator, not the network); a smaller run goes
 * through mosquitto end to end.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import fc from 'fast-check'
import mqtt, { type IPublishPacket } from 'mqtt'
import { SERVICE_ERROR_TEXT } from '../../../src/diagnostics/errors'
import { Hlc, HybridLogicalClock } from '../../../src/hlc'
import { Prop, responseTopicRefusal, REQUEST_TOPIC, Request, SERVICE_CLIENTS_PREFIX } from '../../../src/protocol'
import { decodeExact, encodeCommand, encodeValue, type RespValue } from '../../../src/resp'
import { startBroker, startEmulator, type EmbeddedBroker, type Emulator } from '../../../src/emulator'
import { DedupCache } from '../../../src/emulator/core/dedup'
import { EMULATOR_REFUSAL_TEXT } from '../../../src/emulator/core/refusals'
import { Executor } from '../../../src/emulator/core/execute'
import type { LogLevel } from '../../../src/diagnostics/log'
import { makeLogger } from '../../../src/emulator/logger'
import { Registrations } from '../../../src/emulator/core/registrations'
import { StateStoreService } from '../../../src/emulator/service/service'
import { Keyspace } from '../../../src/emulator/core/keyspace'
import { Mosquitto, requireMosquitto } from '../../support/mosquitto'
import { heapAfterGc } from '../../support/heap'
import { sleep, until } from '../../support/wait'

type Properties = NonNullable<IPublishPacket['properties']>
type UserProperties = NonNullable<Properties['userProperties']>

interface Published {
  topic: string
  payload: Buffer
  properties: Properties
}

// The catalogue, and the emulator's own answer to a SCAN token it does not know (a fuzzed SCAN can carry any token).
const ERROR_TEXTS = new Set<string>([...Object.values(SERVICE_ERROR_TEXT), EMULATOR_REFUSAL_TEXT.ScanTokenUnknown])
const FUZZ_CLIENT = 'fuzz-client'
/** An MQTT string (topic, user property) is at most 65,535 bytes: the longest a broker can hand over. */
const MAX_STRING = 65_000
const HUGE_X = 'x'.repeat(MAX_STRING)
const HUGE_Y = 'y'.repeat(MAX_STRING)
const RESPONSE_TOPIC = `clients/${FUZZ_CLIENT}/services/${REQUEST_TOPIC}/response`

// ---- generators --------------------------------------------------------------------------------

const smallBytes = fc.uint8Array({ maxLength: 24 }).map((u) => Buffer.from(u))
const key = fc.oneof(fc.constantFrom('k', 'lock', 'a/b', ''), fc.string({ maxLength: 8 })).map((s) => Buffer.from(s))
const verb = fc.constantFrom('GET', 'SET', 'DEL', 'VDEL', 'KEYNOTIFY', 'get', 'SCAN', 'MGET', '', 'SET ')
const option = fc.constantFrom('NX', 'NEX', 'PX', '100', '0', '-5', 'EX', 'STOP', '1e3', '99999999999999999999')

/** Requests that are almost right: known and unknown verbs, any arity, options in any order. */
const command = fc
  .tuple(
    verb,
    fc.array(
      fc.oneof(
        key,
        smallBytes,
        option.map((o) => Buffer.from(o)),
      ),
      { maxLength: 5 },
    ),
  )
  .map(([v, args]) => encodeCommand([v, ...args]))

const wellFormed = fc.oneof(
  fc.tuple(key, smallBytes).map(([k, v]) => Request.set(k.length ? k : Buffer.from('k'), v)),
  key.map((k) => Request.get(k.length ? k : Buffer.from('k'))),
  key.map((k) => Request.del(k.length ? k : Buffer.from('k'))),
  key.map((k) => Request.keyNotify(k.length ? k : Buffer.from('k'))),
)

/** Byte-level damage: flips, cuts, insertions, repeats. */
function mutate(base: fc.Arbitrary<Buffer>): fc.Arbitrary<Buffer> {
  return fc
    .tuple(
      base,
      fc.array(
        fc.tuple(
          fc.constantFrom('flip', 'cut', 'insert', 'repeat', 'crlf'),
          fc.nat(),
          fc.integer({ min: 0, max: 255 }),
        ),
        {
          minLength: 1,
          maxLength: 3,
        },
      ),
    )
    .map(([buf, edits]) => {
      let b = Buffer.from(buf)
      for (const [kind, at, byte] of edits) {
        const i = b.length ? at % b.length : 0
        if (kind === 'flip' && b.length) b[i] = byte
        else if (kind === 'cut') b = b.subarray(0, i)
        else if (kind === 'insert') b = Buffer.concat([b.subarray(0, i), Buffer.from([byte]), b.subarray(i)])
        else if (kind === 'repeat') b = Buffer.concat([b, b.subarray(i)])
        else b = Buffer.concat([b.subarray(0, i), Buffer.from('\r\n'), b.subarray(i)])
      }
      return b
    })
}

/** Well-formed RESP3 of shapes a request never has (maps, numbers, nested arrays, attributes, `_`). */
const wrongShape = fc.oneof(
  fc
    .oneof(
      fc.integer().map((value): RespValue => ({ kind: 'integer', value })),
      smallBytes.map((value): RespValue => ({ kind: 'bulk', value })),
      fc.constant<RespValue>({ kind: 'null', from: '$' }),
      fc
        .array(
          fc.integer().map((value): RespValue => ({ kind: 'integer', value })),
          { maxLength: 3 },
        )
        .map((value): RespValue => ({ kind: 'array', value })),
      fc.array(smallBytes, { maxLength: 3 }).map((items): RespValue => ({
        kind: 'array',
        value: [{ kind: 'array', value: items.map((value): RespValue => ({ kind: 'bulk', value })) }],
      })),
    )
    .map((v) => encodeValue(v)),
  // Kinds the protocol does not use (the decoder refuses them as malformed).
  fc.constant(Buffer.from('_\r\n')),
  smallBytes.map((v) =>
    Buffer.concat([Buffer.from('%1\r\n'), encodeCommand([v]).subarray(4), encodeCommand([v]).subarray(4)]),
  ),
  smallBytes.map((v) => Buffer.concat([Buffer.from('*2\r\n|1\r\n'), encodeCommand([v, v, 'GET', v]).subarray(4)])),
)

const payload = fc.oneof(
  { weight: 3, arbitrary: fc.uint8Array({ maxLength: 64 }).map((u) => Buffer.from(u)) },
  { weight: 4, arbitrary: mutate(fc.oneof(command, wellFormed)) },
  { weight: 2, arbitrary: command },
  { weight: 2, arbitrary: wrongShape },
  { weight: 1, arbitrary: wellFormed },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      Buffer.from('*1\r\n$999999999\r\n'),
      Buffer.from('*2147483647\r\n'),
      Buffer.from('*-1\r\n'),
      Buffer.alloc(0),
      Buffer.from('*1\r\n$3\r\nGET\r\n$3\r\nGET\r\n'),
    ),
  },
)

const now = () => Date.now()
/** Values for `__ts` and `__ft`: right, old, far ahead, malformed, huge, not UTF-8. */
const hlcText = fc.oneof(
  fc.constant(null).map(() => new Hlc(now(), 0, 'fuzzer').toString()),
  fc.constant('000000000000000:00000:old'),
  fc.constant(null).map(() => new Hlc(now() + 3_600_000, 0, 'future').toString()),
  fc.string({ maxLength: 40 }),
  fc.constantFrom(
    '1:2',
    '::',
    'abc:def:ghi',
    '999999999999999999999:0:x',
    '1:99999999999999999999:x',
    '-1:0:x',
    '1.5:0:x',
  ),
  fc.nat(40).map((n) => `${'9'.repeat(15)}:${'0'.repeat(5)}:${'\uFFFD'.repeat(n)}`),
  fc.constant(null).map(() => `${now()}:00000:\uD800`),
  fc.constant(HUGE_X),
)
const anyText = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.constantFrom('', 'true', 'TRUE', '\uFFFD\uFFFD', '\uDC00', '\u0000'),
  fc.constant(HUGE_Y),
)
const propValue = (inner: fc.Arbitrary<string>) =>
  fc.oneof({ weight: 5, arbitrary: inner }, { weight: 1, arbitrary: fc.array(inner, { minLength: 2, maxLength: 3 }) })

const userProperties: fc.Arbitrary<UserProperties | undefined> = fc.option(
  fc.record(
    {
      [Prop.timestamp]: propValue(hlcText),
      [Prop.fencingToken]: propValue(hlcText),
      [Prop.sourceId]: propValue(fc.oneof(fc.constantFrom(FUZZ_CLIENT, 'other', ''), anyText)),
      [Prop.protocolVersion]: propValue(fc.constantFrom('1.0', '2.0', '', 'x')),
      [Prop.persist]: propValue(anyText),
      [Prop.partition]: propValue(anyText),
      extra: propValue(anyText),
    },
    { requiredKeys: [] },
  ),
  { nil: undefined, freq: 10 },
)

const responseTopic = fc.oneof(
  { weight: 12, arbitrary: fc.constant(RESPONSE_TOPIC) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      undefined,
      '',
      REQUEST_TOPIC,
      `${SERVICE_CLIENTS_PREFIX}/x`,
      `clients/${FUZZ_CLIENT}/+`,
      `clients/${FUZZ_CLIENT}/#`,
    ),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 30 }).map((s) => `clients/${FUZZ_CLIENT}/${s.replace(/[+#]/g, '')}`) },
)
let serial = 0
/** Unique per request (re-sends are the subject of their own property below), of any length from 4 to 300 bytes. */
const uniqueCorrelation = (length: number): Buffer => {
  const b = randomBytes(length)
  b.writeUInt32BE(serial++ >>> 0, 0)
  return b
}
const correlation = fc.oneof(
  { weight: 12, arbitrary: fc.constant(16).map(uniqueCorrelation) },
  { weight: 1, arbitrary: fc.constantFrom(undefined, Buffer.alloc(0)) },
  { weight: 1, arbitrary: fc.integer({ min: 4, max: 300 }).map(uniqueCorrelation) },
)
const expiry = fc.oneof(
  { weight: 8, arbitrary: fc.constant(10) },
  { weight: 1, arbitrary: fc.constantFrom(undefined, 0, 1, 0xffffffff) },
)

interface FuzzRequest {
  payload: Buffer
  responseTopic: string | undefined
  correlation: Buffer | undefined
  expiry: number | undefined
  user: UserProperties | undefined
}

const request: fc.Arbitrary<FuzzRequest> = fc.record({
  payload,
  responseTopic,
  correlation,
  expiry,
  user: userProperties,
})

/**
 * MQTT strings may not contain U+0000: mosquitto disconnects a client that sends one ("Malformed
 * UTF-8"), so such a request never reaches the service. Over the network it is sent as U+FFFD.
 */
function sendable(r: FuzzRequest): FuzzRequest {
  const clean = (t: string) => t.replaceAll('\u0000', '\uFFFD')
  const user =
    r.user &&
    Object.fromEntries(Object.entries(r.user).map(([k, v]) => [clean(k), Array.isArray(v) ? v.map(clean) : clean(v)]))
  return { ...r, responseTopic: r.responseTopic === undefined ? undefined : clean(r.responseTopic), user }
}

function packetOf(r: FuzzRequest): IPublishPacket {
  const properties: Properties = {}
  if (r.responseTopic !== undefined) properties.responseTopic = r.responseTopic
  if (r.correlation !== undefined) properties.correlationData = r.correlation
  if (r.expiry !== undefined) properties.messageExpiryInterval = r.expiry
  if (r.user !== undefined) properties.userProperties = r.user
  return {
    cmd: 'publish',
    topic: REQUEST_TOPIC,
    payload: r.payload,
    qos: 1,
    dup: false,
    retain: false,
    messageId: 1,
    properties,
  }
}

/** Whether the service must answer (spec sections 10 and 12), or drop the request. */
function answerable(r: FuzzRequest): boolean {
  if (!r.responseTopic || responseTopicRefusal(r.responseTopic) !== null) return false
  return r.correlation !== undefined && r.correlation.length > 0
}

/** One answer, well formed for this request. */
function checkAnswer(r: FuzzRequest, answer: Published): void {
  assert.equal(answer.topic, r.responseTopic)
  assert.ok(answer.properties.correlationData?.equals(r.correlation!), 'correlation data echoed')
  const user = answer.properties.userProperties ?? {}
  assert.equal(user[Prop.status], '200')
  assert.ok(answer.payload.length > 0, 'never an empty payload')
  const reply = decodeExact(answer.payload)
  if (reply.kind === 'error') {
    assert.ok(reply.value.startsWith('ERR '), reply.value)
    // Beside the catalogue, the emulator's own refusal of a watch no notification topic could carry.
    const text = reply.value.slice(4)
    assert.ok(
      ERROR_TEXTS.has(text) || /^the key is too long to be notified: at most \d+ bytes for this client id$/.test(text),
      `an error from the catalogue: ${reply.value}`,
    )
  } else if (reply.kind === 'array') {
    // A SCAN page: `*1 [keys]` or `*2 [keys] <token>`.
    const [page, token, ...rest] = reply.value
    assert.ok(
      page?.kind === 'array' && page.value.every((k) => k.kind === 'bulk'),
      'a SCAN page holds an array of keys',
    )
    assert.ok(token === undefined || token.kind === 'bulk', 'and then a token')
    assert.equal(rest.length, 0)
  } else {
    assert.ok(
      reply.kind === 'simple' || reply.kind === 'integer' || reply.kind === 'bulk' || reply.kind === 'null',
      `a reply shape of the protocol: ${reply.kind}`,
    )
  }
}

/** fast-check prints the whole counterexample; with 65 KB strings in it, only the start is useful. */
function short(run: () => void): void {
  try {
    run()
  } catch (err) {
    const e = err as Error
    e.message = e.message.replace(
      /(.{200})(.{1000,}?)(.{0,200})(?=["'\]}])/gs,
      (_m, a: string, b: string, c: string) => `${a}…(${b.length} chars)…${c}`,
    )
    if (e.message.length > 6000) e.message = `${e.message.slice(0, 6000)}…`
    throw e
  }
}

// ---- in-process: the service's request handler --------------------------------------------------

interface Harness {
  broker: EmbeddedBroker
  service: StateStoreService
  store: Keyspace
  registrations: Registrations
  dedup: DedupCache
  published: Published[]
  logs: Map<LogLevel, number>
  /** Keyspace changes so far (each SET applied, each deletion): executions that changed something. */
  changes: number
  handle(packet: IPublishPacket): void
  stop(): Promise<void>
}

async function harness(): Promise<Harness> {
  const logs = new Map<LogLevel, number>()
  const log = makeLogger('info', (level) => logs.set(level, (logs.get(level) ?? 0) + 1))
  const broker = await startBroker({ port: 0, log })
  const clock = new HybridLogicalClock({ nodeId: 'fuzz-service' })
  const store = new Keyspace({ clock })
  const registrations = new Registrations()
  // Small, so that the run reaches its bound many times over: the cache must stay bounded, not just big.
  const dedup = new DedupCache({ maxEntries: 2000 })
  const service = await StateStoreService.start({
    brokerUrl: broker.url,
    executor: new Executor({ store, clock, registrations }),
    dedup,
    journal: null,
    log,
  })
  let changes = 0
  store.setListener((change) => {
    changes += 1
    for (const n of registrations.notificationsFor(change)) service.notify(n)
  })
  const published: Published[] = []
  const internals = service as unknown as {
    client: { publish: (topic: string, payload: Buffer, options: { properties?: Properties }) => void }
    onPublish(packet: IPublishPacket): void
  }
  internals.client.publish = (topic, payload, options) => {
    published.push({ topic, payload, properties: options.properties ?? {} })
  }
  return {
    broker,
    service,
    store,
    registrations,
    dedup,
    published,
    logs,
    get changes() {
      return changes
    },
    handle: (packet) => internals.onPublish(packet),
    async stop() {
      await service.stop()
      store.close()
      await broker.stop()
    },
  }
}

function stringBytes(text: string): number {
  return /^[^\u0100-\uffff]*$/.test(text) ? text.length : 2 * text.length
}

/**
 * Roughly what the store and the registrations hold (the registrations' private index is read here
 * only to tell state from a leak): key and client id strings, values, and some overhead per entry.
 */
function retainedBytes(h: Harness): number {
  let n = 0
  // The huge client ids are shared constants here, so each distinct id is counted once.
  const byKey = (h.registrations as unknown as { byKey?: Map<string, Map<string, string>> }).byKey
  if (!(byKey instanceof Map))
    throw new Error('Registrations no longer keeps byKey: update retainedBytes to its new shape')
  const ids = new Set<string>()
  for (const [k, clients] of byKey) {
    n += 2 * (k.length + 64)
    for (const [client, topic] of clients) {
      if (typeof topic !== 'string')
        throw new Error('Registrations no longer keeps a topic per registration: update retainedBytes to its new shape')
      n += 64 + stringBytes(topic)
      ids.add(client)
    }
  }
  for (const id of ids) n += 2 * stringBytes(id)
  for (const [k, r] of h.store.entries()) n += k.length + r.value.length + 200
  return n
}

describe('reliability: fuzzed requests to the emulator', function () {
  this.timeout(120_000)

  describe('in-process (the service request handler)', function () {
    let h: Harness
    before(async () => {
      h = await harness()
    })
    after(async () => {
      await h?.stop()
    })

    it('answers or drops 100,000 bad requests as specified, never throws, and does not grow', () => {
      let answered = 0
      let dropped = 0
      let refused = 0
      const run = (numRuns: number, seed: number) =>
        short(() =>
          fc.assert(
            fc.property(request, (r) => {
              const before = h.published.length
              h.handle(packetOf(r))
              const answers = h.published.filter((p, i) => i >= before && p.topic === r.responseTopic)
              h.published.length = 0
              if (!answerable(r)) {
                assert.equal(answers.length, 0, 'dropped')
                dropped += 1
                return
              }
              assert.equal(answers.length, 1, 'exactly one answer')
              checkAnswer(r, answers[0]!)
              answered += 1
              if (answers[0]!.payload[0] === 0x2d) refused += 1
            }),
            { numRuns, seed, endOnFailure: true },
          ),
        )
      run(10_000, 1)
      const warm = heapAfterGc()
      const stateWarm = retainedBytes(h)
      run(100_000, 2)
      const end = heapAfterGc()

      assert.equal(h.logs.get('error') ?? 0, 0, 'no internal error logged')
      assert.ok(h.dedup.size <= 2000, `dedup cache bounded: ${h.dedup.size}`)
      // Requests that happen to be valid create keys and KEYNOTIFY registrations (some under 65 KB
      // client ids), which the service must keep: that is state, not a leak. Anything beyond it is.
      const state = retainedBytes(h) - stateWarm
      const growth = end - warm
      const leak = growth - state
      assert.ok(
        leak < 3 * 1024 * 1024,
        `heap grew ${growth} bytes over 100,000 requests, ${state} of them keys and registrations`,
      )
      console.log(
        `      ${JSON.stringify({ requests: 110_000, answered, refusedWithErr: refused, dropped, keys: h.store.size, registrations: h.registrations.size, dedupEntries: h.dedup.size, heapGrowthBytes: growth, ofWhichStoreState: state })}`,
      )
    })

    it('answers a request re-sent with the same correlation data from the cache, byte for byte, without executing it again', () => {
      short(() =>
        fc.assert(
          fc.property(fc.oneof(wellFormed, payload), fc.nat(3), (p, extra) => {
            const r: FuzzRequest = {
              payload: p,
              responseTopic: RESPONSE_TOPIC,
              correlation: randomBytes(16),
              expiry: 10,
              user: { [Prop.timestamp]: new Hlc(Date.now(), 0, 'fuzzer').toString(), [Prop.sourceId]: FUZZ_CLIENT },
            }
            h.handle(packetOf(r))
            const first = h.published.filter((x) => x.topic === RESPONSE_TOPIC)
            h.published.length = 0
            const changesOnce = h.changes
            for (let i = 0; i <= extra; i++) h.handle(packetOf(r))
            const again = h.published.filter((x) => x.topic === RESPONSE_TOPIC)
            h.published.length = 0
            assert.equal(first.length, 1)
            assert.equal(again.length, extra + 1, 'every re-send is answered')
            for (const a of again) {
              assert.ok(a.payload.equals(first[0]!.payload), 'the same payload')
              assert.equal(
                a.properties.userProperties?.[Prop.timestamp],
                first[0]!.properties.userProperties?.[Prop.timestamp],
                'the same __ts',
              )
            }
            assert.equal(h.changes, changesOnce, 'not executed again')
          }),
          { numRuns: 2000, seed: 3 },
        ),
      )
    })
  })

  describe('end to end through mosquitto', function () {
    // A broker of its own: on a shared one, another suite's emulator could answer too.
    let broker: Mosquitto
    let emulator: Emulator
    let url: string
    const errors: string[] = []
    before(async function () {
      requireMosquitto(this)
      broker = await Mosquitto.start()
      url = broker.url
      emulator = await startEmulator({
        brokerUrl: url,
        logLevel: 'error',
        logger: (level, message) => level === 'error' && errors.push(message),
      })
    })
    after(async () => {
      await emulator?.stop()
      await broker?.stop()
    })

    it('answers or drops 2,000 bad requests over MQTT, then serves a good one', async () => {
      // A client id of its own, so answers from another suite's run cannot be mistaken for ours.
      const fuzzId = `fuzz-${process.pid}-${randomBytes(3).toString('hex')}`
      const own = (r: FuzzRequest): FuzzRequest => ({
        ...r,
        responseTopic: r.responseTopic?.replace(`clients/${FUZZ_CLIENT}/`, `clients/${fuzzId}/`),
        // mqtt.js cannot send an empty or absent correlation as a distinct case from our side; unique ids keep answers apart.
        correlation:
          r.correlation && r.correlation.length > 0
            ? Buffer.concat([r.correlation.subarray(0, 200), randomBytes(16)])
            : r.correlation,
        expiry: r.expiry === 0xffffffff ? 10 : r.expiry,
      })
      const samples = fc.sample(request, { numRuns: 2000, seed: 4 }).map(own).map(sendable)
      const sender = mqtt.connect(url, { protocolVersion: 5, clientId: fuzzId, reconnectPeriod: 0 })
      sender.on('error', () => {})
      await new Promise<void>((resolve, reject) => {
        sender.once('connect', () => resolve())
        sender.once('error', reject)
      })
      ;(sender.stream as { setNoDelay?: (on: boolean) => void }).setNoDelay?.(true)
      const answers = new Map<string, Published[]>()
      let stray = 0
      sender.on('message', (topic, body, packet) => {
        const id = packet.properties?.correlationData?.toString('hex')
        if (id === undefined) {
          stray += 1
          return
        }
        const list = answers.get(id) ?? []
        list.push({ topic, payload: body, properties: packet.properties ?? {} })
        answers.set(id, list)
      })
      await sender.subscribeAsync(`clients/${fuzzId}/#`, { qos: 1 })
      for (const r of samples) {
        const p = packetOf(r)
        await sender.publishAsync(REQUEST_TOPIC, r.payload, { qos: 1, properties: p.properties! })
      }
      const expected = samples.filter(answerable)
      await until(
        () => expected.every((r) => answers.has(r.correlation!.toString('hex'))),
        `answers to ${expected.length} answerable requests (have ${answers.size})`,
        20_000,
      )
      await sleep(300)
      for (const r of samples) {
        const got = r.correlation && r.correlation.length ? (answers.get(r.correlation.toString('hex')) ?? []) : []
        if (!answerable(r)) {
          assert.equal(got.length, 0, `dropped: ${JSON.stringify({ topic: r.responseTopic, expiry: r.expiry })}`)
          continue
        }
        assert.equal(got.length, 1, 'exactly one answer')
        checkAnswer(r, got[0]!)
      }
      assert.equal(stray, 0)
      assert.deepEqual(errors, [], 'no internal error logged')
      await sender.endAsync(true)

      const good = mqtt.connect(url, { protocolVersion: 5, clientId: `${fuzzId}-good`, reconnectPeriod: 0 })
      await new Promise<void>((resolve) => good.once('connect', () => resolve()))
      const topic = `clients/${fuzzId}-good/r`
      await good.subscribeAsync(topic, { qos: 1 })
      const reply = new Promise<Buffer>((resolve) => good.once('message', (_t, body) => resolve(body)))
      await good.publishAsync(REQUEST_TOPIC, Request.get('after-fuzz'), {
        qos: 1,
        properties: {
          responseTopic: topic,
          correlationData: randomBytes(16),
          messageExpiryInterval: 5,
          userProperties: { [Prop.timestamp]: new Hlc(Date.now(), 0, 'g').toString() },
        },
      })
      assert.equal((await reply).toString(), '$-1\r\n')
      await good.endAsync(true)
      console.log(
        `      ${JSON.stringify({ requests: samples.length, answered: expected.length, dropped: samples.length - expected.length })}`,
      )
    })
  })
})

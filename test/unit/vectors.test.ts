/**
 * Every vector of test/fixtures/vectors.json (taken from the unit tests of the official Go, Rust
 * and .NET clients in github.com/Azure/iot-operations-sdks; each names its file there) runs here as its own test, or is listed in
 * NOT_APPLICABLE with the reason. Where the SDKs disagree among themselves and we follow one of
 * them on purpose, the vector still runs, but against OUR behaviour, listed in DEVIATIONS with the
 * reason. A vector that no rule understands fails; none is skipped silently.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ArgumentError, ProtocolError, ServiceError, StateStoreError } from '../../src/diagnostics/errors'
import { Hlc, HlcError, HybridLogicalClock, MAX_HLC_COUNTER } from '../../src/hlc'
import {
  notificationTopic,
  parseDeleteResponse,
  parseGetResponse,
  parseKeyNotifyResponse,
  parseNotification,
  parseNotificationTopic,
  parseScanResponse,
  parseSetResponse,
  Request,
  type SetRequestOptions,
} from '../../src/protocol'
import {
  decode,
  decodeExact,
  encodeBulk,
  encodeCommand,
  RespProtocolError,
  type RespKind,
  type RespValue,
} from '../../src/resp'

interface Vector {
  source: string
  kind: string
  input: unknown
  input_b64?: string
  expected: unknown
  expected_b64?: string
  note: string
  context?: Record<string, unknown>
}

type Json = Record<string, unknown>

const VECTORS: Vector[] = JSON.parse(readFileSync(join(__dirname, '..', 'fixtures', 'vectors.json'), 'utf8'))
const TOTAL = 240

/** Vectors that test something outside the RESP3/HLC/protocol layer, or a feature we do not have. */
const NOT_APPLICABLE: Record<number, string> = {
  47: 'Content Type checking is a transport concern (the client checks the MQTT property); the payload parsers never see it',
  67: 'a SET reply without __ts is refused by the client, which sees the MQTT user properties; parseSetResponse sees only the payload',
  68: 'a SET reply without __ts is refused by the client, which sees the MQTT user properties; parseSetResponse sees only the payload',
  131: '.NET generic array builder refusing zero elements: our encodeCommand is a plain RESP3 encoder (`*0` is valid RESP3) and every Request.* builder always has a verb',
  170: 'SDK command-executor answer (400 with __propName) for a malformed request __ts; the state store (and our emulator) answers `-ERR malformed timestamp` instead (spec 12); Hlc.parse rejecting "NotValid" is vector 169',
}

/**
 * Vectors whose SDK disagrees with the others; we run them against what we do and say why
 * (spec README: follow the official clients; where they differ, the stricter Go/Rust reading).
 */
const DEVIATIONS: Record<number, { reason: string; check: (v: Vector) => void }> = {
  69: {
    reason:
      '.NET-only leniency (any simple string other than OK = not set); Go and Rust reject it (vector 43), and so do we',
    check: (v) => throwsTyped(() => parseSetResponse(payloadOf(v)), ProtocolError),
  },
  70: {
    reason:
      '.NET-only leniency ($-1 on SET = not set); Go and Rust reject it (spec 6.1, 11), and so do we: only :-1 means not applied',
    check: (v) => throwsTyped(() => parseSetResponse(payloadOf(v)), ProtocolError),
  },
  117: {
    reason:
      '.NET does not see "-ERR" without a space as an error and Rust fails to parse it (vector 36); we report a ServiceError with the text kept verbatim, as Go does (it trims only "ERR ")',
    check: (v) => {
      for (const parse of ALL_PARSERS) {
        const err = throwsTyped(() => parse(payloadOf(v)), ServiceError)
        eq(err.code, 'Unknown')
        eq(err.text, 'ERR')
      }
    },
  },
  133: {
    reason:
      '.NET refuses to build a bulk string from null; our encodeBulk(null) is the null bulk string `$-1` on purpose (Reply.nil, a GET miss)',
    check: () => eq(encodeBulk(null).toString('latin1'), '$-1\r\n'),
  },
  162: {
    reason:
      '.NET formats TotalMilliseconds as a double (fractional for DateTime.MaxValue); HLC times are whole milliseconds here as in Go and Rust, so the same reading formats as integers',
    check: () => {
      const h = new Hlc(MAX_VALUE_MS, 12, GUID)
      eq(h.toString(), `${MAX_VALUE_MS}:00012:${GUID}`)
      assert.ok(Hlc.parse(h.toString()).equals(h))
      count()
    },
  },
  163: {
    reason:
      '.NET parses the time with double.TryParse; Go (ParseInt) and Rust (u64) reject fractions, and so do we (spec 3.2)',
    check: (v) => hlcMalformed(String(v.input).replaceAll('<guid>', GUID)),
  },
}

// ---- assertion helpers that count, so that a vector which asserts nothing fails ----

let assertions = 0
function count(): void {
  assertions++
}
function eq(actual: unknown, expected: unknown, message?: string): void {
  assert.deepStrictEqual(actual, expected, message)
  count()
}
function throwsTyped<E extends Error>(fn: () => unknown, type: abstract new (...args: never[]) => E): E {
  let thrown: unknown
  try {
    fn()
  } catch (err) {
    thrown = err
  }
  assert.ok(thrown !== undefined, `expected a ${type.name}, nothing was thrown`)
  assert.ok(thrown instanceof type, `expected a ${type.name}, got ${String(thrown)}`)
  count()
  return thrown
}
function unhandled(v: Vector): never {
  throw new Error(
    `no rule in the runner for this ${v.kind} vector: ${JSON.stringify(v.input)} -> ${JSON.stringify(v.expected)}`,
  )
}

// ---- inputs ----

function payloadOf(v: Vector): Buffer {
  if (v.input_b64 !== undefined) return Buffer.from(v.input_b64, 'base64')
  if (typeof v.input !== 'string') return unhandled(v)
  return Buffer.from(v.input, 'latin1')
}
const bytes = (text: string): Buffer => Buffer.from(text, 'latin1')

type Parser = (payload: Buffer) => unknown
const ALL_PARSERS: Parser[] = [
  parseSetResponse,
  parseGetResponse,
  (p) => parseDeleteResponse(p, 'DEL'),
  (p) => parseDeleteResponse(p, 'VDEL'),
  parseKeyNotifyResponse,
]

/** A payload every typed parser refuses with a typed error; invalid RESP3 surfaces as RespProtocolError underneath. */
function refusedByParsers(payload: Buffer, parsers: Parser[] = ALL_PARSERS): void {
  let respError: unknown
  try {
    decodeExact(payload)
  } catch (err) {
    respError = err
  }
  if (respError !== undefined) {
    assert.ok(respError instanceof RespProtocolError, `decodeExact threw ${String(respError)}`)
    count()
  }
  for (const parse of parsers) {
    const err = throwsTyped(() => parse(payload), StateStoreError)
    if (respError !== undefined) {
      assert.ok(err instanceof ProtocolError, `expected a ProtocolError, got ${err.name}`)
      assert.ok(err.cause instanceof RespProtocolError, 'the ProtocolError carries the RespProtocolError as its cause')
      count()
    }
  }
}

/** What the generic per-type parsers of the SDKs refuse: not valid RESP3 (typed error), or valid but not that type. */
function notA(payload: Buffer, kinds: RespKind[], accept?: (value: RespValue) => boolean): void {
  let value: RespValue
  try {
    value = decodeExact(payload)
  } catch (err) {
    assert.ok(err instanceof RespProtocolError, `decodeExact threw ${String(err)}`)
    count()
    return
  }
  assert.ok(
    !kinds.includes(value.kind) || (accept !== undefined && !accept(value)),
    `decoded as an acceptable ${value.kind}`,
  )
  count()
}

function text(value: RespValue): string {
  if (value.kind === 'bulk') return value.value.toString('latin1')
  if (value.kind === 'simple') return value.value
  throw new Error(`not text: ${value.kind}`)
}

// ---- request-encode ----

function setOptions(options: unknown): SetRequestOptions {
  const o = (options ?? {}) as Json
  const out: SetRequestOptions = {}
  if (o.condition !== undefined) out.condition = o.condition as 'NX' | 'NEX'
  if (o.expiry_ms !== undefined) out.expiryMs = o.expiry_ms as number
  // `persist` is the aio-persistence user property, never part of the payload (vector 93).
  return out
}

function requestEncode(v: Vector): void {
  const input = v.input as Json
  if (Array.isArray(input.array_of_bulk_strings) && typeof v.expected === 'string') {
    eq(encodeCommand(input.array_of_bulk_strings as string[]).toString('latin1'), v.expected)
    return
  }
  if (typeof input.bulk_string === 'string' && typeof v.expected === 'string') {
    eq(encodeBulk(bytes(input.bulk_string)).toString('latin1'), v.expected)
    return
  }
  if (input.op === 'SCAN') return scanEncode(v, input)
  if (typeof input.op !== 'string' || typeof v.expected !== 'string') unhandled(v)
  const key = input.key as string
  const value = input.value as string
  const options = setOptions(input.options)
  let words: string[]
  let build: () => Buffer
  switch (input.op) {
    case 'GET':
      words = ['GET', key]
      build = () => Request.get(key)
      break
    case 'DEL':
      words = ['DEL', key]
      build = () => Request.del(key)
      break
    case 'VDEL':
      words = ['VDEL', key, value]
      build = () => Request.vdel(key, value)
      break
    case 'KEYNOTIFY':
      words = input.stop ? ['KEYNOTIFY', key, 'STOP'] : ['KEYNOTIFY', key]
      build = () => (input.stop ? Request.keyNotifyStop(key) : Request.keyNotify(key))
      break
    case 'SET':
      words = ['SET', key, value]
      if (options.condition) words.push(options.condition)
      if (options.expiryMs !== undefined) words.push('PX', String(options.expiryMs))
      build = () => Request.set(key, value, options)
      break
    default:
      return unhandled(v)
  }
  eq(encodeCommand(words).toString('latin1'), v.expected, 'encodeCommand')
  if (key === '') {
    // The serializer encodes an empty key; the builders refuse it before anything is sent, as Go and Rust do.
    throwsTyped(build, ArgumentError)
  } else {
    eq(build().toString('latin1'), v.expected, `Request.${input.op}`)
  }
}

/** SCAN (the Rust branch ok/scan-impl): the pattern, and the opaque token of the previous page. */
function scanEncode(v: Vector, input: Json): void {
  const expected =
    v.expected_b64 !== undefined
      ? Buffer.from(v.expected_b64, 'base64')
      : typeof v.expected === 'string'
        ? bytes(v.expected)
        : unhandled(v)
  const token =
    typeof input.continuation_token_b64 === 'string'
      ? Buffer.from(input.continuation_token_b64, 'base64')
      : input.continuation_token === null
        ? null
        : unhandled(v)
  eq(Request.scan(input.pattern as string, token), expected)
}

// ---- response-parse ----

function responseParse(v: Vector): void {
  const payload = payloadOf(v)
  const expected = v.expected as Json
  const ctx = v.context ?? {}
  const fn = typeof ctx.function === 'string' ? ctx.function : undefined

  if (typeof ctx.request === 'string') {
    // .NET client tests: an empty payload fails whichever request it answers.
    const parser: Record<string, Parser> = {
      GET: parseGetResponse,
      SET: parseSetResponse,
      DEL: parseDeleteResponse,
      KEYNOTIFY: parseKeyNotifyResponse,
      'KEYNOTIFY STOP': parseKeyNotifyResponse,
    }
    const parse = parser[ctx.request] ?? unhandled(v)
    assert.equal(expected.ok, false)
    throwsTyped(() => parse(payload), ProtocolError)
    return
  }

  if (fn !== undefined) {
    switch (fn) {
      case 'resp.String':
      case 'ParseSimpleString':
        if (expected.ok === false) return notA(payload, ['simple'])
        eq(decodeExact(payload), { kind: 'simple', value: expected.value })
        if (expected.value === 'OK') eq(parseSetResponse(payload), true)
        return
      case 'resp.Number':
      case 'parse_numeric':
      case 'ParseNumber':
        if (expected.ok === false) {
          notA(payload, ['integer'])
          return refusedByParsers(payload, [parseDeleteResponse])
        }
        eq(decodeExact(payload), { kind: 'integer', value: expected.value })
        eq(parseDeleteResponse(payload), expected.value)
        return
      case 'resp.Blob':
      case 'ParseBlobString':
      case 'ParseBlobString(start=0)':
      case 'ParseBlobString(start=3)': {
        if (expected.ok === false) {
          notA(payload, ['bulk', 'null'])
          return refusedByParsers(payload, [parseGetResponse])
        }
        const offset = fn.endsWith('(start=3)') ? 3 : 0
        const decoded = decode(payload, { offset })
        const want = expected.value === null ? null : bytes(expected.value as string)
        eq(
          decoded.value.kind === 'bulk' ? decoded.value.value : decoded.value.kind === 'null' ? null : decoded.value,
          want,
        )
        eq(decoded.bytesConsumed + decoded.bytesLeftOver, payload.length - offset)
        if (expected.next_index !== undefined) eq(offset + decoded.bytesConsumed, expected.next_index)
        if (offset === 0 && decoded.bytesLeftOver === 0) eq(parseGetResponse(payload), want)
        return
      }
      case 'ParseSetResponse':
        if (ctx.version_present === false) return unhandled(v)
        if (expected.ok === false) return refusedByParsers(payload, [parseSetResponse])
        eq(parseSetResponse(payload), expected.success)
        return
      case 'ParseGetResponse':
        if (expected.ok === false) return refusedByParsers(payload, [parseGetResponse])
        eq(parseGetResponse(payload), expected.value === null ? null : bytes(expected.value as string))
        return
      case 'ParseDelResponse':
        if (expected.ok === false) return refusedByParsers(payload, [parseDeleteResponse])
        eq(parseDeleteResponse(payload), expected.value)
        return
      default:
        return unhandled(v)
    }
  }

  // Rust Response::deserialize: one reply shape, whichever request it answers.
  if (ctx.sdk === 'rust') {
    if (expected.ok === false) return refusedByParsers(payload, [...ALL_PARSERS, parseScanResponse])
    switch (expected.variant) {
      case 'KeysScanned': {
        const token =
          typeof expected.continuation_token_b64 === 'string'
            ? Buffer.from(expected.continuation_token_b64, 'base64')
            : null
        eq(parseScanResponse(payload), { keys: expected.keys, token })
        return
      }
      case 'Ok':
        eq(parseSetResponse(payload), true)
        eq(parseKeyNotifyResponse(payload), true)
        return
      case 'NotApplied':
        eq(parseSetResponse(payload), false)
        eq(parseDeleteResponse(payload, 'VDEL'), -1)
        return
      case 'Value':
        eq(parseGetResponse(payload), bytes(expected.value as string))
        return
      case 'NotFound':
        if (payload.toString('latin1') === '$-1\r\n') {
          eq(parseGetResponse(payload), null)
        } else {
          eq(parseDeleteResponse(payload, 'DEL'), 0)
          eq(parseDeleteResponse(payload, 'VDEL'), 0)
          eq(parseKeyNotifyResponse(payload), false)
        }
        return
      case 'ValuesDeleted':
        eq(parseDeleteResponse(payload, 'DEL'), expected.count)
        eq(parseDeleteResponse(payload, 'VDEL'), expected.count)
        return
      case 'Error':
        for (const parse of [...ALL_PARSERS, parseScanResponse])
          eq(throwsTyped(() => parse(payload), ServiceError).text, expected.message)
        return
    }
  }
  unhandled(v)
}

// ---- notification-parse ----

function notificationParse(v: Vector): void {
  const expected = v.expected as Json
  if (typeof v.input === 'object' && v.input !== null && 'topic' in v.input) {
    const topic = (v.input as Json).topic as string
    const parsed = parseNotificationTopic(topic)
    assert.ok(parsed, 'a notification topic')
    eq(parsed.clientId, expected.client_id)
    eq(parsed.key, bytes(expected.key as string))
    eq(notificationTopic(expected.client_id as string, bytes(expected.key as string)), topic)
    return
  }
  const payload = payloadOf(v)
  const blobArray = v.context?.function === 'ParseBlobArray'
  if (expected.ok === false) {
    if (blobArray)
      notA(payload, ['array'], (value) => (value as { value: RespValue[] }).value.every((w) => w.kind === 'bulk'))
    throwsTyped(() => parseNotification(payload), ProtocolError)
    return
  }
  let asserted = false
  if (Array.isArray(expected.elements)) {
    const value = decodeExact(payload)
    assert.equal(value.kind, 'array')
    eq((value as { value: RespValue[] }).value.map(text), expected.elements)
    asserted = true
  }
  const operation = expected.operation ?? { Updated: 'SET', Deleted: 'DELETE' }[expected.key_state as string]
  if (operation === 'SET') {
    eq(parseNotification(payload), { operation: 'SET', value: bytes(expected.value as string) })
    asserted = true
  } else if (operation === 'DELETE') {
    eq(parseNotification(payload), { operation: 'DELETE' })
    asserted = true
  }
  if (!asserted) unhandled(v)
}

// ---- error ----

function serviceErrorVector(v: Vector): void {
  const payload = payloadOf(v)
  const expected = v.expected as Json
  if (typeof expected.go === 'string' || typeof (expected.go as Json | undefined)?.service_message === 'string') {
    // Go names the catalogue entries as we do; errors.Service("...") is text outside the catalogue.
    let code: string | undefined
    let message: string
    if (typeof expected.go === 'string') {
      const unknown = /^errors\.Service\("(.*)"\)$/.exec(expected.go)
      code = unknown ? 'Unknown' : expected.go.replace(/^errors\./, '')
      message = unknown
        ? unknown[1]!
        : payload
            .toString('utf8')
            .replace(/^-ERR /, '')
            .replace(/\r\n$/, '')
    } else {
      message = (expected.go as Json).service_message as string
    }
    for (const parse of [...ALL_PARSERS, parseNotification]) {
      const err = throwsTyped(() => parse(payload), ServiceError)
      if (code !== undefined) eq(err.code, code)
      eq(err.text, message)
      eq(err.kind, 'service')
    }
    return
  }
  const dotnet = expected.dotnet as Json | undefined
  if (dotnet && 'throws' in dotnet) {
    if (dotnet.throws === 'Resp3SimpleErrorException') {
      for (const parse of ALL_PARSERS) eq(throwsTyped(() => parse(payload), ServiceError).text, dotnet.description)
    } else if (dotnet.throws === null) {
      // Not a service error: malformed, so a ProtocolError (never a ServiceError).
      refusedByParsers(payload)
      for (const parse of ALL_PARSERS) throwsTyped(() => parse(payload), ProtocolError)
    } else {
      unhandled(v)
    }
    return
  }
  unhandled(v)
}

function errorVector(v: Vector): void {
  if (typeof v.input === 'string') return serviceErrorVector(v)
  const input = v.input as Json
  if (input.op === 'SET' && (input.options as Json | undefined)?.expiry === '1 microsecond') {
    // Refused before anything is sent.
    throwsTyped(() => Request.set(input.key as string, input.value as string, { expiryMs: 0.001 }), ArgumentError)
    return
  }
  if (input.op === 'validate' && input.counter === 'u64::MAX') return counterAtMaximum(v)
  unhandled(v)
}

// ---- HLC ----

/** "now" in the .NET tests; any fixed wall-clock time does. */
const NOW = 1_750_000_000_000
/** DateTime.MaxValue floored to whole milliseconds since the Unix epoch (9999-12-31T23:59:59.999Z). */
const MAX_VALUE_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999)
const GUID = '0b1e5d1c-8a4f-4c39-9d7e-3f2a6b5c4d21'
const HOUR = 3_600_000

/** Symbolic times: DateTime.MinValue is before the epoch, which an HLC (ms since the epoch, unsigned) cannot hold: 0. */
function time(symbol: unknown): number {
  if (typeof symbol === 'number') return symbol
  if (symbol === 'MinValue' || symbol === 'T0') return 0
  if (symbol === 'MaxValue') return MAX_VALUE_MS
  if (symbol === 'T1' || symbol === 'now') return NOW
  const m = /^now([+-])(\d+)h$/.exec(String(symbol))
  if (m) return NOW + (m[1] === '+' ? 1 : -1) * Number(m[2]) * HOUR
  throw new Error(`unknown symbolic time ${JSON.stringify(symbol)}`)
}

function counterOf(symbol: unknown): number {
  if (typeof symbol === 'number') return symbol
  // u64::MAX is beyond exact JavaScript numbers; the vectors are about overflow, so our maximum stands in.
  if (symbol === 'u64::MAX') return MAX_HLC_COUNTER
  if (symbol === 'u64::MAX - 1') return MAX_HLC_COUNTER - 1
  throw new Error(`unknown counter ${JSON.stringify(symbol)}`)
}

/** "31536000s", "5ms", "max_drift - 5s", "0" → ms. */
function duration(text: string, maxDriftMs = 0): number {
  const m = /^(?:(max_drift)\s*([+-])\s*)?(\d+)(ms|s)?$/.exec(text.trim())
  if (!m) throw new Error(`unknown duration ${JSON.stringify(text)}`)
  const n = Number(m[3]) * (m[4] === 'ms' ? 1 : m[4] === 's' ? 1000 : 1)
  if (!m[1]) return n
  return m[2] === '+' ? maxDriftMs + n : maxDriftMs - n
}

function maxDrift(spec: unknown, seconds?: unknown): number | undefined {
  if (typeof seconds === 'number') return seconds * 1000
  if (spec === undefined || String(spec).startsWith('default')) return undefined
  if (String(spec).startsWith('TimeSpan.MaxValue')) return Number.POSITIVE_INFINITY
  return duration(String(spec))
}

class Wall {
  constructor(public ms: number) {}
  readonly now = (): number => this.ms
}

/** A clock whose reading is (ts, counter), reached through the public API only. */
function clockAt(
  wall: Wall,
  ts: number,
  counter: number,
  options: { nodeId?: string; maxDriftMs?: number } = {},
): HybridLogicalClock {
  const nodeId = options.nodeId ?? 'self-node'
  const saved = wall.ms
  wall.ms = ts
  const clock = new HybridLogicalClock({ nodeId, maxDriftMs: options.maxDriftMs, now: wall.now })
  if (counter > 0) clock.update(new Hlc(ts, counter - 1, `${nodeId}-seed`))
  wall.ms = saved
  assert.ok(clock.current.equals(new Hlc(ts, counter, nodeId)), `seeded ${clock.current}`)
  return clock
}

function hlcMalformed(textValue: string): void {
  const err = throwsTyped(() => Hlc.parse(textValue), HlcError)
  eq(err.reason, 'malformed')
}

function hlcFormat(v: Vector): void {
  const input = v.input as Json
  if (typeof v.expected === 'string' && typeof input.timestamp_ms === 'number') {
    eq(new Hlc(input.timestamp_ms, input.counter as number, input.node_id as string).toString(), v.expected)
    return
  }
  if (input.new === true) {
    const clock = new HybridLogicalClock({ now: () => NOW + 0.75 })
    eq(clock.current.counter, (v.expected as Json).counter)
    eq(clock.current.timestamp, NOW, 'truncated to whole milliseconds')
    return
  }
  unhandled(v)
}

function hlcParse(v: Vector): void {
  const expected = v.expected as Json
  if (typeof v.input === 'string' && expected.ok === false) return hlcMalformed(v.input.replaceAll('<guid>', GUID))
  if ((v.input as Json).roundtrip_of === 'HybridLogicalClock::new()') {
    const h = new HybridLogicalClock().current
    const back = Hlc.parse(h.toString())
    eq(back.equals(h), expected.equals_original)
    eq([back.timestamp, back.counter, back.nodeId], [h.timestamp, h.counter, h.nodeId])
    return
  }
  unhandled(v)
}

function hlcCompare(v: Vector): void {
  const input = v.input as { a: Json; b: Json }
  const expected = v.expected as Json
  const a = new Hlc(time(input.a.ts), input.a.counter as number, input.a.node as string)
  const b = new Hlc(time(input.b.ts), input.b.counter as number, input.b.node as string)
  eq(Math.sign(Hlc.compare(a, b)), expected.sign)
  eq(Math.sign(Hlc.compare(b, a)), expected.reverse_sign)
  eq(a.equals(b), expected.equal)
}

function expectHlcError(fn: () => unknown, error: unknown): void {
  const reason = { ClockDrift: 'clockDrift', OverflowWarning: 'counterOverflow' }[String(error)]
  if (!reason) throw new Error(`unknown HLC error ${JSON.stringify(error)}`)
  eq(throwsTyped(fn, HlcError).reason, reason)
}

/** A counter at the maximum cannot be incremented; one below can. Checked with the operation that increments. */
function counterAtMaximum(v: Vector): void {
  const input = v.input as Json
  const wall = new Wall(NOW)
  const clock = clockAt(wall, NOW, counterOf(input.counter))
  const before = clock.current
  const expected = v.expected as Json
  if (expected.ok === true) {
    eq(clock.tick().counter, counterOf(input.counter) + 1)
  } else {
    expectHlcError(() => clock.tick(), 'OverflowWarning')
    eq(clock.current, before, 'unchanged after the error')
  }
}

function hlcUpdate(v: Vector): void {
  const input = v.input as Json
  const expected = v.expected as Json
  const drift = maxDrift(input.max_drift, input.max_drift_s)
  const wall = new Wall(NOW)

  if (input.op === 'validate') {
    if (typeof input.counter === 'string') return counterAtMaximum(v)
    const clock = new HybridLogicalClock({ nodeId: 'self-node', maxDriftMs: drift, now: wall.now })
    const offsets: number[] = Array.isArray(input.hlc_offsets)
      ? (input.hlc_offsets as string[]).map((o) => duration(o, drift))
      : [(input.hlc_offset_s as number) * 1000]
    const results: boolean[] = Array.isArray(expected.results)
      ? (expected.results as boolean[])
      : [expected.ok as boolean]
    assert.equal(offsets.length, results.length)
    offsets.forEach((offset, i) => {
      const reading = new Hlc(NOW + offset, 0, 'other-node')
      if (results[i]) {
        clock.validate(reading)
        count()
      } else {
        expectHlcError(() => clock.validate(reading), 'ClockDrift')
      }
    })
    return
  }

  if (input.op === 'update_now') {
    const clock =
      input.self === 'HybridLogicalClock::new()'
        ? new HybridLogicalClock({ now: wall.now })
        : clockAt(wall, NOW + (input.hlc_offset_s as number) * 1000, 0, { maxDriftMs: drift })
    const before = clock.current
    if (expected.ok === false) {
      expectHlcError(() => clock.tick(), expected.error)
      eq(clock.current, before, 'unchanged after the error')
      return
    }
    const after = clock.tick()
    if (Array.isArray(expected.counter_in))
      assert.ok((expected.counter_in as number[]).includes(after.counter), `counter ${after.counter}`)
    if (typeof expected.counter === 'number') eq(after.counter, expected.counter)
    assert.ok(Hlc.compare(after, before) > 0, 'tick moves forward')
    count()
    return
  }

  if (input.op !== 'update') unhandled(v)
  const self = input.self as Json
  const dotnetStyle = 'ts' in self
  // .NET tests take "now" before the update runs, so the wall clock at the update is later.
  if (dotnetStyle) wall.ms = NOW + 1
  const selfTs = dotnetStyle ? time(self.ts) : NOW + (self.offset_s as number) * 1000
  const nodeId = dotnetStyle ? (self.node as string) : 'self-node'
  const clock = clockAt(wall, selfTs, counterOf(self.counter), { nodeId, maxDriftMs: drift })
  const before = clock.current

  let other: Hlc
  if (input.other === 'clone of self (same node id)') {
    other = before
  } else {
    const o = input.other as Json
    const ts = 'ts' in o ? time(o.ts) : NOW + (o.offset_s as number) * 1000
    other = new Hlc(ts, counterOf(o.counter), 'ts' in o ? (o.node as string) : 'other-node')
  }

  if (expected.ok === false) {
    expectHlcError(() => clock.update(other), expected.error)
    eq(clock.current, before, 'unchanged after the error')
    return
  }
  const after = clock.update(other)
  eq(clock.current, after)
  if (expected.unchanged === true || other.nodeId === nodeId) {
    eq(after, before, 'same node id: no update')
  } else {
    assert.ok(Hlc.compare(after, before) > 0 && Hlc.compare(after, other) > 0, `${after} after ${before} and ${other}`)
    count()
  }
  if (typeof expected.ts === 'string')
    eq(after.timestamp, expected.ts.startsWith('wall clock') ? wall.ms : time(expected.ts))
  if (typeof expected.counter === 'number') eq(after.counter, expected.counter)
  if (Array.isArray(expected.counter_in)) {
    assert.ok(
      (expected.counter_in as number[]).includes(after.counter),
      `counter ${after.counter} not in ${expected.counter_in}`,
    )
    count()
  }
}

const RUNNERS: Record<string, (v: Vector) => void> = {
  'request-encode': requestEncode,
  'response-parse': responseParse,
  'notification-parse': notificationParse,
  error: errorVector,
  'hlc-format': hlcFormat,
  'hlc-parse': hlcParse,
  'hlc-compare': hlcCompare,
  'hlc-update': hlcUpdate,
}

/** Many Rust HLC vectors share one note; their inputs tell them apart. */
function inputSummary(v: Vector): string {
  if (typeof v.input === 'string' && v.kind === 'error') {
    const payload = JSON.stringify(v.input)
    return ` ${payload.length > 50 ? `${payload.slice(0, 47)}..."` : payload}`
  }
  const input = v.input as Json | null
  if (v.kind !== 'hlc-update' || input === null || typeof input !== 'object') return ''
  const side = (s: unknown): string => {
    if (typeof s !== 'object' || s === null) return String(s)
    const o = s as Json
    return 'offset_s' in o ? `${o.offset_s}s/c${o.counter}` : `${o.ts}/c${o.counter}/${o.node}`
  }
  if ('other' in input) return ` (self ${side(input.self)}, other ${side(input.other)})`
  if ('hlc_offset_s' in input) return ` (offset ${input.hlc_offset_s}s, max ${input.max_drift_s}s)`
  if ('max_drift' in input && Array.isArray(input.hlc_offsets)) return ` (max ${input.max_drift})`
  if ('counter' in input) return ` (counter ${input.counter})`
  return ''
}

function title(v: Vector, i: number): string {
  const note = v.note.replace(/\s+/g, ' ')
  const sentence = (/^(.*?)\.(\s|$)/.exec(note)?.[1] ?? note).trim()
  const short = sentence.length > 90 ? `${sentence.slice(0, 87)}...` : sentence
  return `#${i} ${v.kind}: ${short}${inputSummary(v)}`
}

describe('vectors from the official clients (test/fixtures/vectors.json)', () => {
  const registered: number[] = []

  VECTORS.forEach((v, i) => {
    if (i in NOT_APPLICABLE) return
    const deviation = DEVIATIONS[i]
    registered.push(i)
    const name = deviation ? `${title(v, i)} [ours: ${deviation.reason.slice(0, 60)}...]` : title(v, i)
    it(name, () => {
      const before = assertions
      if (deviation) deviation.check(v)
      else (RUNNERS[v.kind] ?? unhandled)(v)
      assert.ok(assertions > before, 'the vector asserted nothing')
    })
  })

  it('accounts for every vector: applicable + not applicable = 240, none ignored', () => {
    assert.equal(VECTORS.length, TOTAL)
    const notApplicable = Object.keys(NOT_APPLICABLE).map(Number)
    for (const i of notApplicable) {
      assert.ok(i >= 0 && i < TOTAL, `not-applicable index ${i} exists`)
      assert.ok(NOT_APPLICABLE[i]!.length > 20, `not-applicable #${i} has a reason`)
    }
    for (const i of Object.keys(DEVIATIONS).map(Number)) {
      assert.ok(!(i in NOT_APPLICABLE), `#${i} is either a deviation or not applicable`)
      assert.ok(registered.includes(i), `deviation #${i} runs`)
    }
    assert.equal(registered.length + notApplicable.length, TOTAL)
    const all = new Set([...registered, ...notApplicable])
    assert.equal(all.size, TOTAL)
    for (let i = 0; i < TOTAL; i++) assert.ok(all.has(i), `vector #${i} is accounted for`)
    for (const v of VECTORS) assert.ok(v.kind in RUNNERS, `a runner for kind ${v.kind}`)
  })
})

import assert from 'node:assert/strict'
import {
  decode,
  decodeExact,
  DEFAULT_MAX_DEPTH,
  encodeBulk,
  encodeCommand,
  encodeError,
  encodeInteger,
  encodeSimple,
  encodeValue,
  RespProtocolError,
  type RespErrorReason,
  type RespValue,
} from '../../src/resp'

const b = (text: string): Buffer => Buffer.from(text, 'latin1')
const bulk = (text: string): RespValue => ({ kind: 'bulk', value: b(text) })

/** Decodes exactly and checks that encodeValue writes the very same bytes back. */
function roundTrip(wire: string, expected: RespValue): void {
  assert.deepStrictEqual(decodeExact(b(wire)), expected)
  assert.equal(encodeValue(expected).toString('latin1'), wire)
}

function refused(
  wire: Buffer | string,
  reason: RespErrorReason,
  offset: number,
  detail?: RegExp,
  at = 0,
): RespProtocolError {
  const buf = typeof wire === 'string' ? b(wire) : wire
  let thrown: unknown
  try {
    decode(buf, { offset: at })
  } catch (err) {
    thrown = err
  }
  assert.ok(thrown instanceof RespProtocolError, `expected a RespProtocolError, got ${String(thrown)}`)
  assert.equal(thrown.reason, reason, thrown.message)
  assert.equal(thrown.offset, offset, thrown.message)
  assert.match(thrown.message, new RegExp(`^RESP3 [a-z ]+ at offset ${offset}: `), thrown.message)
  if (detail) assert.match(thrown.message, detail)
  assert.equal(thrown.name, 'RespProtocolError')
  return thrown
}

describe('RESP3 decode: every type from hand-written bytes', () => {
  it('simple strings, including an empty one and UTF-8 text', () => {
    roundTrip('+OK\r\n', { kind: 'simple', value: 'OK' })
    roundTrip('+\r\n', { kind: 'simple', value: '' })
    assert.deepStrictEqual(decodeExact(Buffer.from('+größe\r\n', 'utf8')), { kind: 'simple', value: 'größe' })
  })

  it('simple errors', () => {
    roundTrip('-ERR syntax error\r\n', { kind: 'error', value: 'ERR syntax error' })
    roundTrip('-WRONGTYPE x\r\n', { kind: 'error', value: 'WRONGTYPE x' })
  })

  it('integers: zero, positive, negative, an explicit plus sign, and beyond 2^53 as bigint', () => {
    roundTrip(':0\r\n', { kind: 'integer', value: 0 })
    roundTrip(':1234\r\n', { kind: 'integer', value: 1234 })
    roundTrip(':-1\r\n', { kind: 'integer', value: -1 })
    roundTrip(':9007199254740991\r\n', { kind: 'integer', value: Number.MAX_SAFE_INTEGER })
    roundTrip(':-9007199254740991\r\n', { kind: 'integer', value: -Number.MAX_SAFE_INTEGER })
    roundTrip(':9007199254740992\r\n', { kind: 'integer', value: 9007199254740992n })
    roundTrip(':-9223372036854775808\r\n', { kind: 'integer', value: -9223372036854775808n })
    roundTrip(':18446744073709551615\r\n', { kind: 'integer', value: 18446744073709551615n })
    // RESP3: `:[<+|->]<value>`; refused before the fix.
    assert.deepStrictEqual(decodeExact(b(':+5\r\n')), { kind: 'integer', value: 5 })
  })

  it('bulk strings, the empty bulk string and the null bulk string $-1', () => {
    roundTrip('$5\r\nhello\r\n', bulk('hello'))
    roundTrip('$0\r\n\r\n', bulk(''))
    roundTrip('$-1\r\n', { kind: 'null', from: '$' })
  })

  it('the null array *-1', () => {
    roundTrip('*-1\r\n', { kind: 'null', from: '*' })
  })

  it('arrays, empty, mixed and nested', () => {
    roundTrip('*0\r\n', { kind: 'array', value: [] })
    roundTrip('*3\r\n:1\r\n+two\r\n$5\r\nthree\r\n', {
      kind: 'array',
      value: [{ kind: 'integer', value: 1 }, { kind: 'simple', value: 'two' }, bulk('three')],
    })
    roundTrip('*2\r\n*1\r\n*1\r\n$-1\r\n*0\r\n', {
      kind: 'array',
      value: [
        { kind: 'array', value: [{ kind: 'array', value: [{ kind: 'null', from: '$' }] }] },
        { kind: 'array', value: [] },
      ],
    })
  })

  it('the RESP3 kinds the protocol does not use are malformed, at their type byte, also inside an array', () => {
    const unused = [
      '_\r\n',
      ',1.5\r\n',
      '#t\r\n',
      '(12345678901234567890\r\n',
      '=15\r\ntxt:Some string\r\n',
      '!4\r\nfail\r\n',
      '~1\r\n+a\r\n',
      '>1\r\n+a\r\n',
      '%1\r\n+k\r\n:1\r\n',
      '|1\r\n+k\r\n:1\r\n:2\r\n',
    ]
    for (const wire of unused) {
      refused(wire, 'malformed', 0, /not one the state store protocol uses/)
      refused(`*2\r\n:1\r\n${wire}`, 'malformed', 8, /not one the state store protocol uses/)
    }
  })
})

describe('RESP3 decode: bytes consumed and left over', () => {
  it('reports the value length and what follows it', () => {
    const buf = b('+OK\r\n:1\r\nrest')
    assert.deepStrictEqual(decode(buf), { value: { kind: 'simple', value: 'OK' }, bytesConsumed: 5, bytesLeftOver: 8 })
    assert.deepStrictEqual(decode(buf, { offset: 5 }), {
      value: { kind: 'integer', value: 1 },
      bytesConsumed: 4,
      bytesLeftOver: 4,
    })
  })

  it('decodes pipelined values one after the other', () => {
    const buf = Buffer.concat([encodeCommand(['GET', 'k']), b('$1\r\nv\r\n'), b('$-1\r\n')])
    const kinds: string[] = []
    let offset = 0
    while (offset < buf.length) {
      const { value, bytesConsumed, bytesLeftOver } = decode(buf, { offset })
      kinds.push(value.kind)
      offset += bytesConsumed
      assert.equal(bytesLeftOver, buf.length - offset)
    }
    assert.deepStrictEqual(kinds, ['array', 'bulk', 'null'])
  })

  it('decodeExact refuses trailing bytes, naming the offset after the value', () => {
    let thrown: unknown
    try {
      decodeExact(b('+OK\r\nX'))
    } catch (err) {
      thrown = err
    }
    assert.ok(thrown instanceof RespProtocolError)
    assert.equal(thrown.reason, 'trailingBytes')
    assert.equal(thrown.offset, 5)
    assert.equal(thrown.message, 'RESP3 trailing bytes at offset 5: 1 byte(s) after the value')
  })

  it('bulk values are views of the input, not copies', () => {
    const buf = b('$3\r\nabc\r\n')
    const value = decodeExact(buf)
    assert.ok(value.kind === 'bulk')
    assert.ok(Buffer.isBuffer(value.value))
    assert.equal(value.value.buffer, buf.buffer)
  })

  it('the protocol words (NOTIFY, SET, VALUE, DELETE, GET, DEL) and their look-alikes in arrays are bulk strings', () => {
    const notification = '*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$3\r\nabc\r\n'
    const expected: RespValue = { kind: 'array', value: [bulk('NOTIFY'), bulk('SET'), bulk('VALUE'), bulk('abc')] }
    roundTrip(notification, expected)
    for (const w of ['DELETE', 'GET', 'DEL'])
      roundTrip(`*1\r\n$${w.length}\r\n${w}\r\n`, { kind: 'array', value: [bulk(w)] })
    for (const w of ['SEX', 'GEM', 'DEX', 'VALUF', 'NOTIFX', 'DELETF', 'XYZ', 'set'])
      roundTrip(`*1\r\n$${w.length}\r\n${w}\r\n`, { kind: 'array', value: [bulk(w)] })
    refused('*2\r\n$3\r\nSET\r\n$3\r\nSE', 'incomplete', 19)
    refused('*1\r\n$3\r\nSETX\r\n', 'malformed', 11)
  })
})

describe('RESP3 decode: malformed input, with the exact offset', () => {
  it('an empty buffer or a missing CRLF is incomplete', () => {
    refused('', 'incomplete', 0, /expected a type byte/)
    refused('+OK', 'incomplete', 3, /line without CRLF/)
    refused('+OK\r', 'incomplete', 4, /expected LF after CR/)
    refused(':12', 'incomplete', 3)
    refused('$5\r\nhel', 'incomplete', 7, /declared 5 bytes, 3 present/)
    refused('$3\r\nabc', 'incomplete', 7, /expected CRLF/)
    refused('$3\r\nabc\r', 'incomplete', 8, /expected CRLF/)
    refused('$', 'incomplete', 1, /length without CRLF/)
    refused('$12', 'incomplete', 3, /length without CRLF/)
    refused('$-1', 'incomplete', 3, /length without CRLF/)
    refused('*2\r\n', 'incomplete', 4, /declared 2 elements, only 0 bytes left/)
    refused('*3\r\n+a\r\n', 'incomplete', 8, /declared 3 elements, only 4 bytes left/)
    refused('*2\r\n:1\r\n:2', 'incomplete', 10, /line without CRLF/)
  })

  it('an unknown type byte', () => {
    refused('?x\r\n', 'malformed', 0, /type byte 0x3f is not one the state store protocol uses/)
    refused('OK\r\n', 'malformed', 0, /type byte 0x4f/)
    refused('*1\r\nX\r\n', 'malformed', 4, /type byte 0x58/)
  })

  it('CR or LF alone inside a line', () => {
    refused('+a\nb\r\n', 'malformed', 2, /LF without CR/)
    refused('+a\rb\r\n', 'malformed', 3, /expected LF after CR/)
  })

  it('numbers that are not numbers', () => {
    refused(':12a\r\n', 'malformed', 1, /integer expected, got "12a"/)
    refused(':\r\n', 'malformed', 1, /integer expected/)
    refused(':1.5\r\n', 'malformed', 1)
  })

  it('declared lengths: not a number, negative, too large, or no CRLF after the bytes', () => {
    refused('$x\r\n', 'malformed', 1, /length is not a number/)
    refused('$not an integer\r\nhello world', 'malformed', 1)
    refused('$-2\r\n', 'malformed', 1, /negative length -2/)
    refused('$-0\r\n', 'malformed', 1)
    refused('$+1\r\n', 'malformed', 1, /length is not a number/)
    refused('$99999999999999999999\r\n', 'malformed', 1, /length too large/)
    refused('$3x\r\n', 'malformed', 2, /expected CRLF/)
    refused('$11hello world\r\n', 'malformed', 3, /expected CRLF/)
    refused('$3\r\nabcX\r\n', 'malformed', 7, /expected CRLF/)
    refused('$11\r\nthis string is longer than 11 characters\r\n', 'malformed', 16)
  })

  it('offsets are absolute when decoding from an offset', () => {
    refused('___+OK', 'incomplete', 6, undefined, 3)
    refused('xx:1x\r\n', 'malformed', 3, /integer expected/, 2)
    refused('+OK\r\n', 'malformed', 6, /offset outside the buffer/, 6)
    refused('+OK\r\n', 'malformed', -1, /offset outside the buffer/, -1)
    // Decoding at the very end is an incomplete value, not an error of the offset.
    refused('+OK\r\n', 'incomplete', 5, /expected a type byte/, 5)
  })
})

describe('RESP3 decode: bounded depth, bounded work, no allocation from declared lengths', () => {
  const nested = (depth: number, open = '*1\r\n'): Buffer => b(`${open.repeat(depth - 1)}:1\r\n`)

  it(`accepts nesting up to maxDepth (${DEFAULT_MAX_DEPTH} by default) and refuses one more with too-deep`, () => {
    assert.equal(decodeExact(nested(DEFAULT_MAX_DEPTH)).kind, 'array')
    const err = refused(nested(DEFAULT_MAX_DEPTH + 1), 'tooDeep', 4 * DEFAULT_MAX_DEPTH, /nesting deeper than 32/)
    assert.equal(err.offset, 128)
    assert.equal(decode(nested(3), { maxDepth: 3 }).value.kind, 'array')
    // Every item of an array is one level down: the second item of the third array is the fourth level.
    let thrown: unknown
    try {
      decode(nested(4, '*2\r\n:0\r\n'), { maxDepth: 3 })
    } catch (err) {
      thrown = err
    }
    assert.ok(
      thrown instanceof RespProtocolError && thrown.reason === 'tooDeep' && thrown.offset === 20,
      String(thrown),
    )
  })

  it('a custom maxDepth of 1 takes scalars only', () => {
    assert.equal(decode(b(':1\r\n'), { maxDepth: 1 }).value.kind, 'integer')
    let thrown: unknown
    try {
      decode(b('*1\r\n:1\r\n'), { maxDepth: 1 })
    } catch (err) {
      thrown = err
    }
    assert.ok(thrown instanceof RespProtocolError && thrown.reason === 'tooDeep' && thrown.offset === 4)
  })

  it('huge declared lengths with few bytes are incomplete and allocate nothing', () => {
    const before = process.memoryUsage().arrayBuffers
    for (const wire of [
      '$1000000000\r\nab',
      '$4294967296\r\n',
      '*9007199254740991\r\n:1\r\n',
      '$9007199254740991\r\n',
    ]) {
      refused(wire, 'incomplete', b(wire).length, /declared/)
    }
    refused('*4294967296\r\n:0\r\n', 'incomplete', 17, /declared 4294967296 elements/)
    refused('*1000000000\r\n', 'incomplete', 13)
    assert.ok(
      process.memoryUsage().arrayBuffers - before < 16 * 1024 * 1024,
      'no buffer of the declared size was allocated',
    )
  })
})

describe('RESP3 encode', () => {
  it('a request is an array of bulk strings with byte lengths', () => {
    assert.equal(
      encodeCommand(['SET', 'key', 'value']).toString('latin1'),
      '*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n',
    )
    assert.equal(encodeCommand([]).toString('latin1'), '*0\r\n')
    assert.equal(encodeCommand(['']).toString('latin1'), '*1\r\n$0\r\n\r\n')
  })

  it('multi-byte UTF-8 strings are counted in bytes, not characters', () => {
    const cases: Array<[string, number]> = [
      ['é', 2],
      ['€', 3],
      ['😀', 4],
      ['größe', 7],
      ['日本語キー', 15],
    ]
    for (const [text, bytes] of cases) {
      const wire = encodeCommand(['GET', text])
      assert.deepStrictEqual(
        wire,
        Buffer.concat([b(`*2\r\n$3\r\nGET\r\n$${bytes}\r\n`), Buffer.from(text, 'utf8'), b('\r\n')]),
      )
      const value = decodeExact(wire)
      const key = value.kind === 'array' ? value.value[1] : undefined
      assert.ok(key?.kind === 'bulk')
      assert.equal(key.value.toString('utf8'), text)
    }
  })

  it('is binary-safe: CRLF, NUL and every byte value inside bulk strings', () => {
    const tricky = Buffer.from([0x0d, 0x0a, 0x00, 0x24, 0x2a, 0x0d, 0x0a, 0xff])
    const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i))
    const wire = encodeCommand(['SET', tricky, all])
    assert.equal(wire.subarray(0, 22).toString('latin1'), '*3\r\n$3\r\nSET\r\n$8\r\n\r\n\0$*')
    const value = decodeExact(wire)
    assert.deepStrictEqual(value, {
      kind: 'array',
      value: [bulk('SET'), { kind: 'bulk', value: tricky }, { kind: 'bulk', value: all }],
    })
  })

  it('writes the request into one buffer of exactly the right size', () => {
    const wire = encodeCommand(['SET', Buffer.alloc(70_000, 1), 'x'.repeat(10)])
    assert.equal(wire.length, 4 + 4 + 5 + 8 + 70_000 + 2 + 5 + 10 + 2)
    assert.equal(decode(wire).bytesLeftOver, 0)
  })

  it('scalar helpers', () => {
    assert.equal(encodeSimple('OK').toString(), '+OK\r\n')
    assert.equal(encodeError('ERR syntax error').toString(), '-ERR syntax error\r\n')
    assert.equal(encodeInteger(-1).toString(), ':-1\r\n')
    assert.equal(encodeInteger(18446744073709551615n).toString(), ':18446744073709551615\r\n')
    assert.equal(encodeBulk(null).toString(), '$-1\r\n')
    assert.equal(encodeBulk(b('a\r\nb')).toString('latin1'), '$4\r\na\r\nb\r\n')
    assert.equal(encodeBulk(Buffer.alloc(0)).toString(), '$0\r\n\r\n')
  })
})

describe('RESP3 decode: the fixed replies are shared, frozen values', () => {
  it('decodes +OK, $-1, *-1, :-1 and small integers to one frozen object each, equal to the general form', () => {
    for (const [wire, expected] of [
      ['+OK\r\n', { kind: 'simple', value: 'OK' }],
      ['$-1\r\n', { kind: 'null', from: '$' }],
      ['*-1\r\n', { kind: 'null', from: '*' }],
      [':-1\r\n', { kind: 'integer', value: -1 }],
      [':0\r\n', { kind: 'integer', value: 0 }],
      [':1\r\n', { kind: 'integer', value: 1 }],
      [':255\r\n', { kind: 'integer', value: 255 }],
    ] as Array<[string, RespValue]>) {
      const first = decodeExact(b(wire))
      assert.deepStrictEqual(first, expected, wire)
      assert.ok(Object.isFrozen(first), `${JSON.stringify(wire)} is frozen, so sharing it is safe`)
      assert.equal(decodeExact(b(wire)), first, `${JSON.stringify(wire)} decodes to the same object every time`)
    }
  })
})

import assert from 'node:assert/strict'
import fc from 'fast-check'
import { decode, decodeExact, encodeCommand, encodeValue, RespProtocolError, type RespValue } from '../../src/resp'

/** Text of simple strings and errors: any Unicode (no lone surrogates), without CR or LF. */
const lineText = fc.string({ unit: 'binary', maxLength: 16 }).filter((s) => !/[\r\n]/.test(s))
const bytes = fc.uint8Array({ maxLength: 32 }).map((u) => Buffer.from(u))
const SAFE = BigInt(Number.MAX_SAFE_INTEGER)
/** Integers as decode returns them: numbers when exact, bigints only beyond 2^53. */
const integer = fc.oneof(
  fc.maxSafeInteger(),
  fc.integer({ min: -1000, max: 1000 }),
  fc.bigInt({ min: SAFE + 1n, max: 2n ** 70n }),
  fc.bigInt({ min: -(2n ** 70n), max: -SAFE - 1n }),
)

const scalar: fc.Arbitrary<RespValue> = fc.oneof(
  lineText.map((value): RespValue => ({ kind: 'simple', value })),
  lineText.map((value): RespValue => ({ kind: 'error', value })),
  integer.map((value): RespValue => ({ kind: 'integer', value })),
  bytes.map((value): RespValue => ({ kind: 'bulk', value })),
  fc.constantFrom('$', '*').map((from): RespValue => ({ kind: 'null', from })),
)

/** Any value tree of the protocol's RESP3 kinds; depth stays far below the decoder's bound. */
const { value: respValue } = fc.letrec<{ value: RespValue }>((tie) => ({
  value: fc.oneof(
    { maxDepth: 4, depthIdentifier: 'resp' },
    scalar,
    fc.array(tie('value'), { maxLength: 4 }).map((value): RespValue => ({ kind: 'array', value })),
  ),
}))

const encoded = respValue.map((value) => ({ value, wire: encodeValue(value) }))

/**
 * Decodes and classifies the outcome: a value (with consistent counts) or a RespProtocolError,
 * nothing else. From offset 0 it also holds decodeExact to the same answer: the value, the same
 * error, or trailing-bytes.
 */
function decodeOrTypedError(buf: Buffer, offset = 0): RespValue | RespProtocolError {
  let outcome: RespValue | RespProtocolError
  let leftOver = 0
  try {
    const { value, bytesConsumed, bytesLeftOver } = decode(buf, { offset })
    assert.ok(bytesConsumed > 0)
    assert.equal(bytesConsumed + bytesLeftOver, buf.length - offset)
    outcome = value
    leftOver = bytesLeftOver
  } catch (err) {
    if (!(err instanceof RespProtocolError)) throw err
    assert.ok(err.offset >= 0 && err.offset <= buf.length, `offset ${err.offset} inside the buffer`)
    outcome = err
  }
  if (offset === 0) {
    let exact: RespValue | RespProtocolError
    try {
      exact = decodeExact(buf)
    } catch (err) {
      if (!(err instanceof RespProtocolError)) throw err
      exact = err
    }
    if (outcome instanceof RespProtocolError) {
      assert.ok(exact instanceof RespProtocolError, 'decodeExact refuses what decode refuses')
      assert.deepStrictEqual(
        [exact.reason, exact.offset, exact.message],
        [outcome.reason, outcome.offset, outcome.message],
      )
    } else if (leftOver > 0) {
      assert.ok(exact instanceof RespProtocolError && exact.reason === 'trailingBytes', String(exact))
      assert.equal(exact.offset, buf.length - leftOver)
    } else {
      assert.deepStrictEqual(exact, outcome)
    }
  }
  return outcome
}

/** Bytes that look like RESP3 often enough to reach deep into the decoder. */
const respish = fc
  .array(
    fc.constantFrom(
      '*',
      '$',
      '%',
      '|',
      '~',
      '>',
      '!',
      '=',
      '(',
      ',',
      '#',
      '_',
      ':',
      '+',
      '-',
      '\r\n',
      '\r',
      '\n',
      '0',
      '1',
      '2',
      '3',
      '9',
      '-1',
      't',
      'f',
      'inf',
      'nan',
      '.',
      'e',
      'x',
      'txt:',
      '\0',
      '\xff',
      '$1\r\nx\r\n',
      '*2\r\n',
      ':-1\r\n',
      '$-1\r\n',
    ),
    { maxLength: 60 },
  )
  .map((tokens) => Buffer.from(tokens.join(''), 'latin1'))

type Mutation = { op: 'flip' | 'insert' | 'delete' | 'truncate' | 'set'; at: number; byte: number }
const mutation: fc.Arbitrary<Mutation> = fc.record({
  op: fc.constantFrom('flip', 'insert', 'delete', 'truncate', 'set'),
  at: fc.nat(),
  byte: fc.oneof(
    fc.integer({ min: 0, max: 255 }),
    fc.constantFrom(13, 10, 0x2a, 0x24, 0x3a, 0x2d, 0x30, 0x39, 0x7c, 0x25),
  ),
})

function mutate(wire: Buffer, mutations: Mutation[]): Buffer {
  let buf = Buffer.from(wire)
  for (const { op, at, byte } of mutations) {
    const i = buf.length === 0 ? 0 : at % (op === 'insert' ? buf.length + 1 : buf.length)
    if (op === 'insert') buf = Buffer.concat([buf.subarray(0, i), Buffer.from([byte]), buf.subarray(i)])
    else if (buf.length === 0) continue
    else if (op === 'flip') buf[i] = buf[i]! ^ (1 << (byte % 8))
    else if (op === 'set') buf[i] = byte
    else if (op === 'delete') buf = Buffer.concat([buf.subarray(0, i), buf.subarray(i + 1)])
    else buf = buf.subarray(0, i)
  }
  return buf
}

describe('RESP3 properties', function () {
  // A hang fails here instead of stalling the run; no timing is asserted.
  this.timeout(10_000)

  it('decode(encodeCommand(args)) gives back the same bytes, for binary Buffers and UTF-8 strings', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            bytes,
            fc.uint8Array({ maxLength: 300 }).map((u) => Buffer.from(u)),
            fc.string({ unit: 'binary' }),
          ),
          { maxLength: 8 },
        ),
        (args) => {
          const wire = encodeCommand(args)
          const { value, bytesConsumed, bytesLeftOver } = decode(wire)
          assert.deepStrictEqual(value, {
            kind: 'array',
            value: args.map((a) => ({ kind: 'bulk', value: typeof a === 'string' ? Buffer.from(a, 'utf8') : a })),
          })
          assert.equal(bytesConsumed, wire.length)
          assert.equal(bytesLeftOver, 0)
        },
      ),
      { numRuns: 300 },
    )
  })

  it('decode(encodeValue(v)) deep-equals v for every kind of value', () => {
    fc.assert(
      fc.property(encoded, ({ value, wire }) => {
        assert.deepStrictEqual(decodeExact(wire), value)
      }),
      { numRuns: 400 },
    )
  })

  it('the arbitrary reaches every kind and nesting (so the round trip above means something)', () => {
    const seen = new Set<string>()
    const visit = (v: RespValue, depth: number): void => {
      seen.add(v.kind)
      if (depth > 1) seen.add('nested')
      if (v.kind === 'integer' && typeof v.value === 'bigint') seen.add('bigint integer')
      if (v.kind === 'integer' && typeof v.value === 'number' && v.value < 0) seen.add('negative integer')
      if (v.kind === 'null') seen.add(`null ${v.from}`)
      for (const c of v.kind === 'array' ? v.value : []) visit(c, depth + 1)
    }
    for (const v of fc.sample(respValue, { numRuns: 600, seed: 42 })) visit(v, 1)
    for (const kind of ['simple', 'error', 'integer', 'bulk', 'null', 'array']) {
      assert.ok(seen.has(kind), kind)
    }
    for (const extra of ['nested', 'bigint integer', 'negative integer', 'null $', 'null *']) {
      assert.ok(seen.has(extra), extra)
    }
  })

  it('bytesConsumed + bytesLeftOver = length - offset, with anything before and after the value', () => {
    fc.assert(
      fc.property(bytes, encoded, bytes, (before, { value, wire }, after) => {
        const buf = Buffer.concat([before, wire, after])
        const decoded = decode(buf, { offset: before.length })
        assert.deepStrictEqual(decoded.value, value)
        assert.equal(decoded.bytesConsumed, wire.length)
        assert.equal(decoded.bytesLeftOver, after.length)
      }),
      { numRuns: 200 },
    )
  })

  it('every strict prefix of a valid encoding is incomplete, even when the bytes after it are in memory', () => {
    fc.assert(
      fc.property(encoded, fc.nat(), ({ wire }, cut) => {
        const length = cut % wire.length
        // A view of the same memory: reading past its end would find the rest of the value.
        const view = wire.subarray(0, length)
        let thrown: unknown
        try {
          decode(view)
        } catch (err) {
          thrown = err
        }
        assert.ok(thrown instanceof RespProtocolError, `prefix of ${length}/${wire.length} bytes: ${String(thrown)}`)
        assert.equal(thrown.reason, 'incomplete', thrown.message)
        assert.ok(thrown.offset <= length)
      }),
      { numRuns: 400 },
    )
  })

  it('reads any integer line as its text says: sign, leading zeros, -0, beyond 2^53, or refused', () => {
    // The rule written plainly: `:[+|-]<digits>\r\n`, a number when exact, else a bigint.
    const expected = (text: string): RespValue | 'refused' => {
      if (!/^[+-]?[0-9]+$/.test(text)) return 'refused'
      const n = Number(text)
      return { kind: 'integer', value: Number.isSafeInteger(n) ? n : BigInt(text) }
    }
    fc.assert(
      fc.property(fc.stringMatching(/^[+-]?[0-9+-]{0,20}$/), (text) => {
        const want = expected(text)
        let got: RespValue | 'refused'
        try {
          got = decodeExact(Buffer.from(`:${text}\r\n`))
        } catch (err) {
          assert.ok(err instanceof RespProtocolError)
          got = 'refused'
        }
        // deepEqual does not tell -0 from 0
        if (want !== 'refused' && want.kind === 'integer' && got !== 'refused' && got.kind === 'integer')
          assert.ok(Object.is(got.value, want.value), text)
        assert.deepEqual(got, want, text)
      }),
      { numRuns: 5000 },
    )
  })

  it('random bytes never throw anything but RespProtocolError', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.nat(), (raw, at) => {
        const buf = Buffer.from(raw)
        decodeOrTypedError(buf, buf.length === 0 ? 0 : at % (buf.length + 1))
      }),
      { numRuns: 1000 },
    )
  })

  it('RESP-like random bytes never throw anything but RespProtocolError', () => {
    fc.assert(
      fc.property(respish, (buf) => {
        decodeOrTypedError(buf)
      }),
      { numRuns: 2000 },
    )
  })

  it('mutated valid encodings (flip, set, insert, delete, truncate) never throw anything but RespProtocolError', () => {
    fc.assert(
      fc.property(encoded, fc.array(mutation, { minLength: 1, maxLength: 4 }), ({ wire }, mutations) => {
        decodeOrTypedError(mutate(wire, mutations))
      }),
      { numRuns: 1000 },
    )
  })

  it('mutated requests and common replies fail typed, and decodeExact agrees with decode', () => {
    const common = fc.oneof(
      fc.array(fc.oneof(bytes, fc.string({ maxLength: 12 })), { maxLength: 5 }).map((args) => encodeCommand(args)),
      bytes.map((value) => encodeValue({ kind: 'bulk', value })),
      fc.integer({ min: -2, max: 1_000_000 }).map((value) => encodeValue({ kind: 'integer', value })),
      fc.constant(encodeValue({ kind: 'null', from: '$' })),
    )
    fc.assert(
      fc.property(common, fc.array(mutation, { maxLength: 3 }), (wire, mutations) => {
        decodeOrTypedError(mutate(wire, mutations))
      }),
      { numRuns: 1000 },
    )
  })

  it('nesting deeper than maxDepth is too-deep, at the offset of the first value too deep', () => {
    const opener = fc.constantFrom('*1\r\n', '*2\r\n$-1\r\n', '*2\r\n:0\r\n')
    fc.assert(
      fc.property(
        fc.array(opener, { minLength: 0, maxLength: 45 }),
        fc.integer({ min: 1, max: 40 }),
        (openers, maxDepth) => {
          const depth = openers.length + 1
          const buf = Buffer.from(`${openers.join('')}:1\r\n`, 'latin1')
          let thrown: unknown
          try {
            decode(buf, { maxDepth })
          } catch (err) {
            thrown = err
          }
          if (depth <= maxDepth) {
            assert.equal(thrown, undefined, String(thrown))
          } else {
            assert.ok(thrown instanceof RespProtocolError && thrown.reason === 'tooDeep', String(thrown))
            const prefix = Buffer.from(openers.slice(0, maxDepth).join(''), 'latin1').length
            // An array's earlier items sit at its level too, so the offset is at or before the prefix.
            assert.ok(thrown.offset <= prefix, `${thrown.offset} <= ${prefix}`)
          }
        },
      ),
      { numRuns: 300 },
    )
  })

  it('a huge declared length with few bytes is incomplete and never allocated', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('$', '*'),
        fc.oneof(fc.integer({ min: 1000, max: Number.MAX_SAFE_INTEGER }), fc.constant(Number.MAX_SAFE_INTEGER)),
        fc.integer({ min: 0, max: 40 }),
        (prefix, declared, present) => {
          const body = prefix === '$' ? 'txt:'.padEnd(present, 'x') : ':0\r\n'.repeat(present)
          const buf = Buffer.from(`${prefix}${declared}\r\n${body}`, 'latin1')
          let thrown: unknown
          try {
            decode(buf)
          } catch (err) {
            thrown = err
          }
          assert.ok(thrown instanceof RespProtocolError, String(thrown))
          assert.equal(thrown.reason, 'incomplete', thrown.message)
          assert.ok(thrown.offset <= buf.length)
          decodeOrTypedError(buf)
        },
      ),
      { numRuns: 300 },
    )
  })

  it('a megabyte of random bytes decodes (or fails typed) in one pass', () => {
    const big = Buffer.alloc(1 << 20)
    let x = 0x9e3779b9
    for (let i = 0; i < big.length; i++) {
      x ^= x << 13
      x ^= x >>> 17
      x ^= x << 5
      big[i] = x & 0xff
    }
    for (let offset = 0; offset < 64; offset++) decodeOrTypedError(big, offset)
    const repeated = Buffer.from('*3\r\n|1\r\n_\r\n_\r\n~1\r\n'.repeat(40_000), 'latin1')
    decodeOrTypedError(repeated)
  })
})

import assert from 'node:assert/strict'
import { streamKeyRecords } from '../../src/formats/key-record-stream'
import {
  encodeKeyRecord,
  KeyRecordError,
  MAX_RECORD_DEPTH,
  parseKeyRecords,
  type KeyRecord,
} from '../../src/formats/key-records'

function failure(text: string): KeyRecordError {
  return failureOf(text)
}

function failureOf(content: string | Buffer): KeyRecordError {
  try {
    parseKeyRecords(content)
  } catch (err) {
    assert.ok(err instanceof KeyRecordError)
    return err
  }
  assert.fail('parsed')
}

describe('key records: the export, import and --seed format', function () {
  it('round-trips any bytes: text where they are UTF-8, base64 where they are not', function () {
    const records = [
      { key: Buffer.from('a/é'), value: Buffer.from('line 1\nline 2'), version: 'v1' },
      {
        key: Buffer.from([0xff, 0x00, 0x41]),
        value: Buffer.from([0, 0xfe, 0x80]),
        expiresAt: 1_800_000_000_000,
        persist: true,
      },
      { key: Buffer.from('empty'), value: Buffer.alloc(0) },
    ]
    const text = records.map(encodeKeyRecord).join('')
    assert.equal(text.split('\n').length, 4, 'one line a record')
    assert.match(text, /"valueBase64":"AP6A"/)
    assert.deepEqual(parseKeyRecords(text), records)
  })

  it("reads a WASM graph development environment's statestore.json: strings as text, the rest as JSON", function () {
    const records = parseKeyRecords('\uFEFF[\n  {"factoryId": "factoryA"},\n  {"limits": {"max": 3}, "on": true}\n]')
    assert.deepEqual(
      records.map((r) => [r.key.toString(), r.value.toString()]),
      [
        ['factoryId', 'factoryA'],
        ['limits', '{"max":3}'],
        ['on', 'true'],
      ],
    )
  })

  it('names the line of a bad record', function () {
    assert.deepEqual(pick(failure('[\n  {"a": 1},\n  [1]\n]')), {
      line: 3,
      reason: 'entry 2 is not an object of key → value',
    })
    assert.equal(failure('[\n  {"a": 1},\n  {"b": \n]').line, 3, 'the line where the entry that is not JSON starts')
    assert.deepEqual(pick(failure('{"key":"a","value":"1"}\n\n{"key":"b","value":2}\n')), {
      line: 3,
      reason: 'value is text; bytes go in valueBase64',
    })
    assert.equal(
      failure('{"key":"a","value":"1","expiresAt":"soon"}').reason,
      'expiresAt is wall-clock milliseconds, a whole number',
    )
    assert.equal(failure('{"key":"","value":"1"}').reason, 'the key is empty')
    assert.equal(failure('not json').line, 1)
  })
})

function pick(err: KeyRecordError): { line: number; reason: string } {
  return { line: err.line, reason: err.reason }
}

/** The records of `bytes` through the stream reader, fed in chunks of `size` bytes. */
async function streamed(bytes: Buffer, size: number): Promise<KeyRecord[]> {
  async function* chunks() {
    for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size)
  }
  const out: KeyRecord[] = []
  for await (const r of streamKeyRecords(chunks())) out.push(r)
  return out
}

async function streamFailure(bytes: Buffer, size: number): Promise<{ line: number; reason: string }> {
  try {
    await streamed(bytes, size)
  } catch (err) {
    assert.ok(err instanceof KeyRecordError)
    return { line: err.line, reason: err.reason }
  }
  assert.fail('parsed')
}

describe('key records read as a stream (import reads a file of any size this way)', function () {
  const files: Record<string, Buffer> = {
    'an export with a BOM, blank and CRLF lines, no final newline': Buffer.from(
      '\uFEFF{"key":"a","value":"1"}\r\n\n  {"key":"é/b","valueBase64":"AP6A","expiresAt":1800000000000,"persist":true}\n{"key":"c","value":"x\\ny"}',
    ),
    'a statestore.json after blank lines': Buffer.from(
      '\n \n[\n  {"factoryId": "factoryA"},\n  {"limits": {"max": 3}}\n]\n',
    ),
    'nothing but blank space': Buffer.from(' \n\n'),
  }
  for (const [what, bytes] of Object.entries(files)) {
    it(`gives the records parseKeyRecords gives, however the bytes are cut: ${what}`, async () => {
      const whole = parseKeyRecords(bytes)
      for (const size of [1, 2, 3, 7, bytes.length])
        assert.deepEqual(await streamed(bytes, size), whole, `chunks of ${size}`)
    })
  }

  it('names the line of a bad record past the first chunks, and of a line that is not UTF-8', async () => {
    const good = Array.from({ length: 5000 }, (_, i) => `{"key":"k${i}","value":"${'v'.repeat(40)}"}\n`).join('')
    const bad = Buffer.from(`${good}{"key":"x","valueBase64":"%%"}\n{"key":"y","value":"1"}\n`)
    assert.deepEqual(await streamFailure(bad, 65536), { line: 5001, reason: 'valueBase64 is not base64' })
    const latin1 = Buffer.concat([
      Buffer.from('{"key":"a","value":"1"}\n{"key":"b","value":"'),
      Buffer.from([0xe9]),
      Buffer.from('"}\n'),
    ])
    for (const size of [1, 5, latin1.length])
      assert.deepEqual(await streamFailure(latin1, size), pick(failureOf(latin1)), `chunks of ${size}`)
  })

  it('refuses a line nested deeper than the bound, naming it', async () => {
    const deep = Buffer.from(`{"key":"a","value":"1"}\n${'['.repeat(MAX_RECORD_DEPTH + 1)}\n`)
    assert.deepEqual(await streamFailure(deep, 100), {
      line: 2,
      reason: `JSON nested deeper than ${MAX_RECORD_DEPTH} levels`,
    })
  })
})

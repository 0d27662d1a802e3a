import assert from 'node:assert/strict'
import { encodeKeyRecord, KeyRecordError, parseKeyRecords } from '../../src/formats/key-records'

function failure(text: string): KeyRecordError {
  try {
    parseKeyRecords(text)
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
      { key: Buffer.from([0xff, 0x00, 0x41]), value: Buffer.from([0, 0xfe, 0x80]), expiresAt: 1_800_000_000_000, persist: true },
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
    assert.deepEqual(pick(failure('[\n  {"a": 1},\n  [1]\n]')), { line: 3, reason: 'entry 2 is not an object of key → value' })
    assert.equal(failure('[\n  {"a": 1},\n  {"b": \n]').line, 3, 'the line where the entry that is not JSON starts')
    assert.deepEqual(pick(failure('{"key":"a","value":"1"}\n\n{"key":"b","value":2}\n')), { line: 3, reason: 'value is text; bytes go in valueBase64' })
    assert.equal(failure('{"key":"a","value":"1","expiresAt":"soon"}').reason, 'expiresAt is wall-clock milliseconds, a whole number')
    assert.equal(failure('{"key":"","value":"1"}').reason, 'the key is empty')
    assert.equal(failure('not json').line, 1)
  })
})

function pick(err: KeyRecordError): { line: number; reason: string } {
  return { line: err.line, reason: err.reason }
}

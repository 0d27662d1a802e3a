import assert from 'node:assert/strict'
import fc from 'fast-check'
import { decodeNdjson, encodeNdjson, NdjsonError } from '../../src/formats/ndjson'

describe('NDJSON datasets', () => {
  it('writes one JSON object per line, each ended by a newline', () => {
    const bytes = encodeNdjson([
      { deviceId: 'a', site: 'Line 1' },
      { deviceId: 'b', note: 'two\nlines' },
    ])
    assert.equal(bytes.toString('utf8'), '{"deviceId":"a","site":"Line 1"}\n{"deviceId":"b","note":"two\\nlines"}\n')
    assert.deepEqual(encodeNdjson([]), Buffer.alloc(0))
  })

  it('reads back any array of JSON objects it wrote', () => {
    const record = fc.dictionary(fc.string(), fc.jsonValue())
    fc.assert(
      fc.property(fc.array(record, { maxLength: 20 }), (records) => {
        // JSON drops -0's sign; compare what JSON itself gives back.
        assert.deepEqual(decodeNdjson(encodeNdjson(records)), JSON.parse(JSON.stringify(records)))
      }),
    )
  })

  it('reads what other writers produce: CRLF, blank lines, no final newline', () => {
    assert.deepEqual(decodeNdjson(Buffer.from('{"a":1}\r\n\r\n  {"b":2}  \n{"c":3}')), [{ a: 1 }, { b: 2 }, { c: 3 }])
  })

  it('refuses what is not a dataset, naming the line or the record', () => {
    const refused = (fn: () => unknown, reason: string, line?: number) =>
      assert.throws(fn, (err: unknown) => err instanceof NdjsonError && err.reason === reason && err.line === line)
    refused(() => encodeNdjson({ a: 1 }), 'notAnArray')
    refused(() => encodeNdjson([{ a: 1 }, [1, 2]]), 'notAnObject', 2)
    refused(() => encodeNdjson([null]), 'notAnObject', 1)
    refused(() => decodeNdjson(Buffer.from('{"a":1}\n{broken\n')), 'notJson', 2)
    refused(() => decodeNdjson(Buffer.from('{"a":1}\n\n42\n')), 'notAnObject', 3)
  })
})

import assert from 'node:assert/strict'
import { InputError } from '../../nodes/lib/errors'
import { KeyFailures } from '../../nodes/msg/key-failures'
import { parseKeyList, parseKeyValues } from '../../nodes/msg/key-list'
import { ServiceError, TimeoutError } from '../../src/diagnostics/errors'

/** A translator that shows the catalogue key and its substitutions. */
const t = (key: string, substitutions?: Record<string, string | number>) =>
  `${key} ${JSON.stringify(substitutions ?? {})}`

function thrown(fn: () => unknown): InputError {
  try {
    fn()
  } catch (err) {
    assert.ok(err instanceof InputError)
    return err
  }
  assert.fail('nothing thrown')
}

describe('several keys in one msg: the key list and its failures', function () {
  it('takes each key once, in order, and names the entry that is not a key', function () {
    assert.deepEqual(parseKeyList(['b', 'a', 'b'], 10, t), ['b', 'a'])
    const bad = thrown(() => parseKeyList(['a', ''], 10, t))
    assert.equal(bad.code, 'KeyEmpty')
    assert.match(bad.message, /^errors\.keyInList .*"index":1/)
    const many = thrown(() => parseKeyList(['a', 'b', 'c'], 2, t))
    assert.equal(many.code, 'TooManyKeys')
    assert.match(many.message, /"count":3,"max":2/)
  })

  it('takes key → value pairs only from a plain object', function () {
    assert.deepEqual(parseKeyValues({ a: 1, b: 'x' }, 10, t), [
      ['a', 1],
      ['b', 'x'],
    ])
    for (const value of ['text', [1], Buffer.from('x'), null])
      assert.equal(thrown(() => parseKeyValues(value, 10, t)).code, 'KeyValuesInvalid')
  })

  it('fails a msg with the first failed key’s code, naming it and counting the failures', function () {
    const failures = new KeyFailures((err) => err)
    assert.equal(failures.failure(3, t), null)
    failures.add('x/1', new TimeoutError(100, 'GET'))
    failures.add(
      'x/2',
      new ServiceError('the request fencing token is a lower version than the fencing token protecting the resource'),
    )
    const failure = failures.failure(5, t)!
    assert.equal(failure.code, 'Timeout')
    assert.equal(failure.cause.kind, 'timeout')
    assert.match(failure.message, /^errors\.keyFailed .*"key":"\\"x\/1\\"".*"failed":2,"total":5/)
    assert.deepEqual(Object.keys(failures.byKey()), ['x/1', 'x/2'])
    assert.equal(failures.byKey()['x/2']!.code, 'FencingTokenLowerVersion')
  })
})

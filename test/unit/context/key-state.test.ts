import assert from 'node:assert/strict'
import { Hlc } from '../../../src/hlc'
import { afterService, afterWrite, DOUBT, UNKNOWN, type Knowledge } from '../../../src/context/key-state'

const v = (n: number) => new Hlc(1_700_000_000_000 + n, 0, 'service')
const known = (n: number, exists: boolean | null): Knowledge => ({ kind: 'known', version: v(n), exists })
const bytes = Buffer.from('"x"')

describe('context: what the cache knows of a key', () => {
  it('takes whatever the service says while it knows nothing or is in doubt', () => {
    for (const k of [UNKNOWN, DOUBT]) {
      assert.deepEqual(afterService(k, bytes, v(1)), known(1, true))
      assert.deepEqual(afterService(k, null, v(1)), known(1, false))
      assert.deepEqual(afterService(k, bytes, null), UNKNOWN, 'without a version nothing can be ordered after it')
    }
  })

  it('drops what is older than it holds, and a value at the version it holds (its own write coming back)', () => {
    assert.equal(afterService(known(5, true), bytes, v(4)), null)
    assert.equal(afterService(known(5, true), bytes, v(5)), null)
    assert.deepEqual(
      afterService(known(5, true), null, v(5)),
      known(5, false),
      'a deletion at the same version is taken',
    )
    assert.deepEqual(afterService(known(5, true), bytes, v(6)), known(6, true))
    assert.deepEqual(afterService(known(5, true), bytes, null), UNKNOWN)
  })

  it('after our write: the answer’s version when newer; a delete of nothing keeps the version, existence unknown', () => {
    assert.deepEqual(afterWrite(UNKNOWN, true, v(3)), known(3, true))
    assert.deepEqual(afterWrite(DOUBT, false, v(3)), known(3, false))
    assert.deepEqual(afterWrite(known(5, true), true, v(6)), known(6, true))
    assert.deepEqual(afterWrite(known(5, true), false, null), known(5, null))
    assert.deepEqual(
      afterWrite(known(5, true), true, v(4)),
      known(5, null),
      'an answer older than what the cache holds says nothing of now',
    )
    assert.deepEqual(afterWrite(UNKNOWN, false, null), UNKNOWN)
  })
})

/**
 * The checks of the context store and Node-RED lock workloads reject planted bad histories and
 * accept good ones, so a clean chaos run means something.
 */
import assert from 'node:assert/strict'
import { contextMismatches } from './context'
import { fencingViolations, type Accepted } from './node-red-locks'

const write = (by: string, token: string, version: string): Accepted => ({ runtime: by, by, token, seq: 1, version })

describe('chaos: the context and Node-RED lock checks', function () {
  it('fencing: tokens rising in version order pass, whatever order the writes were reported in', function () {
    assert.deepEqual(fencingViolations([write('b', '3000:0:b', '3100:0:s'), write('a', '1000:0:a', '1100:0:s'), write('a', '1000:0:a', '1200:0:s')]), [])
  })

  it('fencing: an old holder\'s write executed after the new holder\'s first is a violation', function () {
    const found = fencingViolations([write('a', '1000:0:a', '1100:0:s'), write('b', '3000:0:b', '3100:0:s'), write('a', '1000:0:a', '3200:0:s')])
    assert.equal(found.length, 1)
    assert.match(found[0]!, /older holder's write landed after a newer holder's/)
  })

  const store = { values: new Map<string, unknown>([['a', { n: 1 }], ['b', undefined]]), keys: ['a'] }

  it('context: caches equal to the store pass', function () {
    assert.deepEqual(contextMismatches(store, [{ values: new Map([['a', { n: 1 }]]), keys: ['a'] }, { values: new Map<string, unknown>([['a', { n: 1 }], ['b', undefined]]), keys: ['a'] }]), [])
  })

  it('context: a stale cache value, a key keys() misses and an index out of step with the values are each reported', function () {
    const found = contextMismatches({ values: store.values, keys: ['a', 'b'] }, [{ values: new Map([['a', { n: 0 }]]), keys: [] }])
    assert.equal(found.length, 3, found.join('\n'))
    assert.match(found[0]!, /key index lists \["a","b"\], its values are under \["a"\]/)
    assert.match(found[1]!, /store c0, key a: its cache holds \{"n":0\}/)
    assert.match(found[2]!, /store c0: keys\(\) is \[\]/)
  })
})

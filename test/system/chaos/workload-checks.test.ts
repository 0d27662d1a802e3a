/**
 * The checks of the context store and Node-RED lock workloads reject planted bad histories and
 * accept good ones, so a clean chaos run means something.
 */
import assert from 'node:assert/strict'
import { contextMismatches } from './context'
import { counterViolations, fencingViolations, type Accepted, type Counted } from './node-red-locks'

const write = (by: string, token: string, version: string): Accepted => ({ runtime: by, by, token, seq: 1, version })

describe('chaos: the context and Node-RED lock checks', function () {
  it('fencing: tokens rising in version order pass, whatever order the writes were reported in', function () {
    assert.deepEqual(
      fencingViolations([
        write('b', '3000:0:b', '3100:0:s'),
        write('a', '1000:0:a', '1100:0:s'),
        write('a', '1000:0:a', '1200:0:s'),
      ]),
      [],
    )
  })

  it("fencing: an old holder's write executed after the new holder's first is a violation", function () {
    const found = fencingViolations([
      write('a', '1000:0:a', '1100:0:s'),
      write('b', '3000:0:b', '3100:0:s'),
      write('a', '1000:0:a', '3200:0:s'),
    ])
    assert.equal(found.length, 1)
    assert.match(found[0]!, /older holder's write landed after a newer holder's/)
  })

  const counted = (value: number, token: string, version: string): Counted => ({ runtime: 'r0', value, token, version })

  it('counters: values rising in version order pass, with a gap for a write of unknown outcome', function () {
    assert.deepEqual(
      counterViolations('c', [
        counted(3, '2000:0:b', '2100:0:s'),
        counted(1, '1000:0:a', '1100:0:s'),
        counted(2, '1000:0:a', '1200:0:s'),
      ]),
      [],
    )
  })

  it('counters without tokens (update key keeps its own): a value written twice is still a lost increment', function () {
    const untokened = (value: number, version: string): Counted => ({ runtime: 'r0', value, version })
    assert.deepEqual(counterViolations('u', [untokened(2, '1200:0:s'), untokened(1, '1100:0:s')]), [])
    const lost = counterViolations('u', [untokened(1, '1100:0:s'), untokened(1, '1200:0:s')])
    assert.equal(lost.length, 1)
    assert.match(lost[0]!, /an increment lost/)
  })

  it('counters: one value written twice is a lost increment; a token going down is a fencing violation', function () {
    const lost = counterViolations('c', [counted(1, '1000:0:a', '1100:0:s'), counted(1, '2000:0:b', '2100:0:s')])
    assert.equal(lost.length, 1)
    assert.match(lost[0]!, /an increment lost/)
    const fenced = counterViolations('c', [counted(1, '2000:0:b', '2100:0:s'), counted(2, '1000:0:a', '2200:0:s')])
    assert.equal(fenced.length, 1)
    assert.match(fenced[0]!, /older hold's write landed/)
  })

  const store = {
    values: new Map<string, unknown>([
      ['a', { n: 1 }],
      ['b', undefined],
    ]),
    keys: ['a'],
  }

  it('context: caches equal to the store pass', function () {
    assert.deepEqual(
      contextMismatches(store, [
        { values: new Map([['a', { n: 1 }]]), keys: ['a'] },
        {
          values: new Map<string, unknown>([
            ['a', { n: 1 }],
            ['b', undefined],
          ]),
          keys: ['a'],
        },
      ]),
      [],
    )
  })

  it('context: a stale cache value, a key keys() misses and an index out of step with the values are each reported', function () {
    const found = contextMismatches({ values: store.values, keys: ['a', 'b'] }, [
      { values: new Map([['a', { n: 0 }]]), keys: [] },
    ])
    assert.equal(found.length, 3, found.join('\n'))
    assert.match(found[0]!, /key index lists \["a","b"\], its values are under \["a"\]/)
    assert.match(found[1]!, /store c0, key a: its cache holds \{"n":0\}/)
    assert.match(found[2]!, /store c0: keys\(\) is \[\]/)
  })
})

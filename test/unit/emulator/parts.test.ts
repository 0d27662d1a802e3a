import assert from 'node:assert/strict'
import fc from 'fast-check'
import { encodeCommand } from '../../../src/resp'
import { parseCommand } from '../../../src/emulator/core/commands'
import { DedupCache } from '../../../src/emulator/core/dedup'
import { RequestPrint } from '../../../src/emulator/core/request-print'
import { Registrations } from '../../../src/emulator/core/registrations'
import {
  PREVIEW_REQUEST_TOPIC,
  REQUEST_TOPIC,
  responseTopicRefusal,
  SERVICE_CLIENTS_PREFIX,
} from '../../../src/protocol'
import { Hlc, HybridLogicalClock } from '../../../src/hlc'
import { Executor, type RequestContext } from '../../../src/emulator/core/execute'
import { Keyspace } from '../../../src/emulator/core/keyspace'
import { Request } from '../../../src/protocol'

describe('emulator parts', () => {
  describe('parseCommand', () => {
    it('reads every verb and SET option order into a typed command', () => {
      assert.deepEqual(parseCommand(encodeCommand(['GET', 'k'])), {
        ok: true,
        command: { verb: 'GET', key: Buffer.from('k') },
      })
      assert.deepEqual(parseCommand(encodeCommand(['KEYNOTIFY', 'k', 'STOP'])), {
        ok: true,
        command: { verb: 'KEYNOTIFY', key: Buffer.from('k'), stop: true },
      })
      const set = parseCommand(encodeCommand(['SET', 'k', 'v', 'PX', '250', 'NEX']))
      assert.ok(set.ok && set.command.verb === 'SET')
      assert.equal(set.command.condition, 'NEX')
      assert.equal(set.command.expiryMs, 250)
    })

    it('never mistakes object properties for verbs', () => {
      for (const verb of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
        const r = parseCommand(encodeCommand([verb, 'k']))
        assert.ok(!r.ok && r.code === 'UnknownCommand', verb)
      }
    })
  })

  describe('DedupCache', () => {
    const REQ = RequestPrint.of(Buffer.from('*2\r\n$3\r\nGET\r\n$1\r\nk\r\n'), undefined)
    it('remembers answers until the request expires', () => {
      const cache = new DedupCache()
      const entry = cache.begin('a', REQ, 1000, 0)
      assert.equal(cache.lookup('a', REQ, 10).state, 'pending')
      cache.complete(entry, { payload: Buffer.from('+OK\r\n'), timestamp: 'v' })
      const seen = cache.lookup('a', REQ, 999)
      assert.equal(seen.state, 'done')
      assert.equal(cache.lookup('a', REQ, 1000).state, 'new')
    })

    it('stays within its entry and byte budgets, oldest first, and evicts expired entries as new ones come', () => {
      const cache = new DedupCache({ maxEntries: 100, maxBytes: 50_000 })
      for (let i = 0; i < 1000; i++)
        cache.complete(cache.begin(`r${i}`, REQ, 10_000_000, 0), { payload: Buffer.alloc(100), timestamp: undefined })
      assert.ok(cache.size <= 100)
      assert.equal(cache.lookup('r999', REQ, 1).state, 'done')
      assert.equal(cache.lookup('r0', REQ, 1).state, 'new')
      const big = new DedupCache({ maxBytes: 10_000 })
      for (let i = 0; i < 10; i++)
        big.complete(big.begin(`b${i}`, REQ, 10_000_000, 0), { payload: Buffer.alloc(4000), timestamp: undefined })
      big.begin('next', REQ, 10_000_000, 0)
      assert.ok(big.size <= 3)
      const short = new DedupCache()
      for (let i = 0; i < 100; i++)
        short.complete(short.begin(`s${i}`, REQ, 100, 0), { payload: Buffer.alloc(1), timestamp: undefined })
      short.begin('later', REQ, 10_000, 200)
      assert.equal(short.size, 1, 'expired entries left as the new one came')
    })

    it('keeps exactly the entries the insertion-order rule keeps, through any mix of requests, answers and expiries', () => {
      // The rule, written plainly: entries in insertion order; a new one drops, from the oldest on,
      // whatever has expired or exceeds the entry budget, up to the first that may stay.
      const MAX = 8
      const op = fc.oneof(
        fc.record({
          kind: fc.constant('begin' as const),
          id: fc.integer({ min: 0, max: 11 }),
          ttl: fc.integer({ min: 1, max: 50 }),
        }),
        fc.record({ kind: fc.constant('answer' as const), id: fc.integer({ min: 0, max: 11 }), none: fc.boolean() }),
        fc.record({ kind: fc.constant('lookup' as const), id: fc.integer({ min: 0, max: 11 }) }),
        fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 1, max: 30 }) }),
      )
      const check = (ops: Array<typeof op extends fc.Arbitrary<infer T> ? T : never>): void => {
        const cache = new DedupCache({ maxEntries: MAX })
        const handles = new Map<string, ReturnType<DedupCache['begin']>>()
        const model = new Map<string, number>()
        let now = 0
        /** A lookup, in the cache and the model alike: true when the id is new (an expired entry goes). */
        const seen = (id: string): boolean => {
          const at = model.get(id)
          if (at !== undefined && at <= now) model.delete(id)
          const isNew = cache.lookup(id, REQ, now).state === 'new'
          assert.equal(isNew, !model.has(id), id)
          return isNew
        }
        for (const o of ops) {
          if (o.kind === 'wait') now += o.ms
          else if (o.kind === 'begin') {
            const id = `r${o.id}`
            if (!seen(id)) continue
            handles.set(id, cache.begin(id, REQ, now + o.ttl, now))
            model.set(id, now + o.ttl)
            for (const [k, expiresAt] of model) {
              if (model.size <= MAX && expiresAt > now) break
              model.delete(k)
            }
          } else if (o.kind === 'answer') {
            const id = `r${o.id}`
            const entry = handles.get(id)
            if (!entry || entry.done) continue
            cache.complete(entry, o.none ? null : { payload: Buffer.from('+OK\r\n'), timestamp: undefined })
            // An answer of none leaves nothing to replay: the entry goes.
            if (o.none) model.delete(id)
          } else seen(`r${o.id}`)
          assert.equal(cache.size, model.size)
        }
      }
      fc.assert(fc.property(fc.array(op, { maxLength: 300 }), check), { numRuns: 300 })
      // Long enough for the order it evicts from to be compacted several times.
      fc.assert(fc.property(fc.array(op, { minLength: 8000, maxLength: 8000 }), check), { numRuns: 5 })
    })

    it('forgets requests answered with nothing behind an entry that stays, and still evicts in order after them', () => {
      const cache = new DedupCache({ maxEntries: 3 })
      cache.begin('long', REQ, 1_000_000, 0)
      for (let i = 0; i < 5000; i++) cache.complete(cache.begin(`none${i}`, REQ, 1_000_000, 0), null)
      assert.equal(cache.size, 1)
      for (const id of ['a', 'b', 'c']) cache.begin(id, REQ, 1_000_000, 1)
      assert.equal(cache.lookup('long', REQ, 2).state, 'new', 'the oldest went first when the fourth came')
      assert.deepEqual(
        ['a', 'b', 'c'].map((id) => cache.lookup(id, REQ, 2).state),
        ['pending', 'pending', 'pending'],
      )
    })

    it('counts a restored entry once, so restoring it again evicts nothing else', () => {
      const cache = new DedupCache({ maxBytes: 10_000 })
      cache.begin('keep', REQ, 10_000, 0)
      for (let i = 0; i < 20; i++)
        cache.restore('same', REQ, 10_000, { payload: Buffer.alloc(4000), timestamp: undefined }, 0)
      assert.equal(cache.lookup('keep', REQ, 1).state, 'pending')
      assert.equal(cache.size, 2)
    })

    it('hands the answer to re-sends that arrived while the original ran', () => {
      const cache = new DedupCache()
      const entry = cache.begin('x', REQ, 1000, 0)
      const got: Array<string | null> = []
      const seen = cache.lookup('x', REQ, 1)
      assert.equal(seen.state, 'pending')
      if (seen.state === 'pending') cache.whenAnswered(seen.entry, (a) => got.push(a?.payload.toString() ?? null))
      cache.complete(entry, { payload: Buffer.from(':1\r\n'), timestamp: undefined })
      assert.deepEqual(got, [':1\r\n'])
    })

    it('tells a re-send (same payload and user properties) from another request under the same correlation data', () => {
      const set = (value: string | Buffer, props: Record<string, string | string[]>) =>
        RequestPrint.of(encodeCommand(['SET', 'k', value]), props)
      const first = set('first', { __ts: '1:0:c', __srcId: 'me' })
      assert.ok(
        set('first', { __srcId: 'me', __ts: '1:0:c' }).equals(first),
        'the order of user properties does not matter',
      )
      for (const other of [
        set('second', { __ts: '1:0:c', __srcId: 'me' }),
        set('first', { __ts: '2:0:c', __srcId: 'me' }),
        set('first', { __ts: '1:0:c', __srcId: 'me', __ft: '1:0:l' }),
        set('first', { __ts: ['1:0:c', 'x'], __srcId: 'me' }),
        set('first', { __ts: '1:0:c' }),
      ]) {
        assert.ok(!other.equals(first) && !first.equals(other))
      }
      // Large payloads are compared by digest.
      const big = Buffer.alloc(100_000, 7)
      assert.ok(set(big, {}).equals(set(Buffer.from(big), {})))
      assert.ok(!set(big, {}).equals(set(Buffer.concat([big.subarray(1), Buffer.from([8])]), {})))
      const cache = new DedupCache()
      const entry = cache.begin('x', first, 1000, 0)
      assert.equal(cache.lookup('x', set('second', {}), 1).state, 'conflict')
      cache.complete(entry, { payload: Buffer.from('+OK\r\n'), timestamp: 'v' })
      assert.equal(cache.lookup('x', set('second', {}), 1).state, 'conflict')
      assert.equal(
        cache.lookup('x', set('first', { __srcId: 'me', __ts: '1:0:c' }), 1).state,
        'done',
        'the entry of the first request is kept for its re-sends',
      )
    })

    it('prints the same properties alike whether their names come sorted or not, odd names too, and reads a journal of the earlier print', () => {
      const payload = encodeCommand(['SET', 'k', 'v'])
      const print = (props: Record<string, string | string[]>) => RequestPrint.of(payload, props)
      const plain = (entries: Array<[string, string | string[]]>) => {
        const o = Object.create(null) as Record<string, string | string[]>
        for (const [k, v] of entries) o[k] = v
        return o
      }
      const entries: Array<[string, string | string[]]> = [
        ['$high_priority', ''],
        ['10', 'ten'],
        ['9', 'nine'],
        ['__proto__', 'p'],
        ['__ts', ['1:0:c', '2:0:c']],
      ]
      const sorted = print(plain([...entries].sort(([a], [b]) => (a < b ? -1 : 1))))
      for (const order of [
        entries,
        [...entries].reverse(),
        [entries[3]!, entries[0]!, entries[4]!, entries[2]!, entries[1]!],
      ])
        assert.ok(print(plain(order)).equals(sorted), JSON.stringify(order))
      assert.ok(!print(plain([...entries.slice(0, 3), ['__proto__', 'q'], entries[4]!])).equals(sorted))
      assert.ok(RequestPrint.parse(sorted.serialize()).equals(sorted))
      // The earlier print: the (name, value) pairs sorted by name, in JSON.
      const pairs = [...entries].sort(([a], [b]) => (a < b ? -1 : 1)).flat()
      const earlier = JSON.stringify([payload.toString('latin1'), false, JSON.stringify(pairs)])
      assert.ok(RequestPrint.parse(earlier).equals(sorted), 'a re-send after an upgrade is still one')
    })
  })

  describe('responseTopicRefusal', () => {
    it("refuses the request topics, the service's space and wildcards, each with its reason", () => {
      const refused: Array<[string, RegExp]> = [
        ['', /empty/],
        [REQUEST_TOPIC, /request topic/],
        [PREVIEW_REQUEST_TOPIC, /request topic/],
        [SERVICE_CLIENTS_PREFIX, /belongs to the state store/],
        [`${SERVICE_CLIENTS_PREFIX}/x/response`, /belongs to the state store/],
        ['replies/+/x', /wildcard/],
        ['replies/#', /wildcard/],
      ]
      for (const [topic, reason] of refused) assert.match(responseTopicRefusal(topic) ?? 'allowed', reason, topic)
      for (const topic of [
        'clients/c1/services/statestore/_any_/command/invoke/response',
        `clients/c1/${REQUEST_TOPIC}`,
        'replies/for/me',
      ]) {
        assert.equal(responseTopicRefusal(topic), null, topic)
      }
    })
  })

  describe('Registrations', () => {
    it('fans a change out to every registered client and forgets a client at once', () => {
      const r = new Registrations()
      r.register('a', Buffer.from('k'))
      r.register('b', Buffer.from('k'))
      r.register('a', Buffer.from('k'))
      const change = {
        kind: 'delete' as const,
        key: Buffer.from('k'),
        version: new Hlc(1, 0, 'n'),
        cause: 'del' as const,
        wasPersisted: false,
      }
      assert.deepEqual(
        r.notificationsFor(change).map((n) => n.clientId),
        ['a', 'b'],
      )
      assert.equal(r.dropClient('a'), 1)
      assert.deepEqual(
        r.notificationsFor(change).map((n) => n.clientId),
        ['b'],
      )
      assert.equal(r.unregister('b', Buffer.from('k')), true)
      assert.equal(r.unregister('b', Buffer.from('k')), false)
      assert.equal(r.size, 0)
    })
  })
  describe('Executor', () => {
    it('says in its answer whether a request wrote what persistence keeps, and only then', () => {
      const clock = new HybridLogicalClock({ nodeId: 'parts' })
      const executor = new Executor({
        store: new Keyspace({ clock }),
        clock,
        registrations: new Registrations(),
        persistence: true,
      })
      const run = (payload: Buffer, props: Record<string, string> = {}) => {
        const all: Record<string, string> = { __ts: new Hlc(Date.now(), 0, 'caller').toString(), ...props }
        const ctx: RequestContext = { prop: (name) => all[name], clientId: 'caller' }
        return executor.execute(payload, ctx).wrote === true
      }
      assert.equal(run(Request.set('volatile', 'v')), false, 'a key persistence does not keep')
      assert.equal(run(Request.set('kept', 'v'), { 'aio-persistence': 'true' }), true)
      assert.equal(
        run(Request.set('kept', 'v', { condition: 'NX' }), { 'aio-persistence': 'true' }),
        false,
        'not applied',
      )
      assert.equal(run(Request.get('kept')), false)
      assert.equal(run(Request.set('kept', 'now volatile')), true, 'a persisted key made volatile leaves the journal')
      assert.equal(run(Request.del('kept')), false, 'no longer persisted')
      assert.equal(run(Request.set('kept', 'v'), { 'aio-persistence': 'true' }), true)
      assert.equal(run(Request.del('kept')), true)
      assert.equal(run(Request.del('kept')), false, 'missing')
      assert.equal(run(Request.keyNotify('kept')), true, 'a registration is kept')
      assert.equal(run(Request.keyNotifyStop('kept')), true)
      assert.equal(run(Request.keyNotifyStop('kept')), false, 'not registered')
    })
  })
})

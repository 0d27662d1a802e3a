/**
 * The request layer against a scripted responder on a real broker: the envelope every request
 * carries, typed results, typed errors, timeouts, late and duplicate answers, the in-flight bound,
 * cancellation and close.
 */
import assert from 'node:assert/strict'
import {
  ArgumentError,
  CancelledError,
  ConnectionError,
  OverloadedError,
  ProtocolError,
  ServiceError,
  TimeoutError,
} from '../../../src/diagnostics/errors'
import { Hlc } from '../../../src/hlc'
import { updateKey } from '../../../src/locks'
import { notificationFilter, Prop, Reply, responseTopicFor } from '../../../src/protocol'
import { mqttBrokerUrl } from '../../support/broker'
import { ClientPool } from '../../support/clients'
import { eventually } from '../../support/wait'
import { Responder, type Answer, type SeenRequest } from './support/responder'

/** Answers like a well-behaved state store that always has `value` for any key. */
function standard(request: SeenRequest, responder: Responder): Answer {
  switch (request.words[0]) {
    case 'GET':
      return responder.answer(Reply.value(Buffer.from(`value-of-${request.words[1]}`)))
    case 'SET':
      return responder.answer(Reply.ok)
    case 'DEL':
    case 'VDEL':
      return responder.answer(Reply.integer(1))
    default:
      return responder.answer(Reply.ok)
  }
}

describe('client requests (scripted responder)', function () {
  let url: string
  let responder: Responder
  const pool = new ClientPool()

  before(async function () {
    url = await mqttBrokerUrl(this)
    responder = await Responder.start(url, (r) => standard(r, responder))
  })

  beforeEach(() => {
    responder.handler = (r) => standard(r, responder)
    responder.requests.length = 0
  })

  afterEach(() => pool.closeAll())
  after(() => responder?.stop())

  it('sends every request with the full envelope and returns the typed result', async function () {
    const client = await pool.ready(url, { requestTimeoutMs: 2500 })
    const result = await client.get('k1')
    assert.equal(result.value?.toString(), 'value-of-k1')
    assert.ok(result.version instanceof Hlc)
    assert.equal(result.version.nodeId, 'responder')

    const [req] = responder.requests
    assert.ok(req)
    assert.deepEqual(req.words, ['GET', 'k1'])
    assert.equal(req.qos, 1)
    assert.equal(req.responseTopic, responseTopicFor(client.clientId))
    assert.equal(req.correlation?.length, 16)
    assert.equal(req.properties.messageExpiryInterval, 3, 'ceil(2.5 s)')
    assert.equal(req.properties.contentType, 'application/octet-stream')
    assert.equal(req.user[Prop.sourceId], client.clientId)
    assert.equal(req.user[Prop.protocolVersion], '1.0')
    assert.equal(req.user[Prop.partition], client.clientId)
    assert.equal(req.user[Prop.highPriority], '')
    assert.equal(Hlc.parse(req.user[Prop.timestamp]!).nodeId, client.clock.nodeId)
    assert.equal(req.user[Prop.fencingToken], undefined)
    assert.equal(req.user[Prop.persist], undefined)
    // The clock merged the response's __ts: it is now at least that reading.
    assert.ok(Hlc.compare(client.clock.current, result.version) > 0)
  })

  it('uses fresh correlation data and a later __ts for every request', async function () {
    const client = await pool.ready(url)
    await Promise.all([client.get('a'), client.get('b'), client.get('c')])
    const ids = new Set(responder.requests.map((r) => r.correlation!.toString('hex')))
    assert.equal(ids.size, 3)
    const stamps = responder.requests.map((r) => Hlc.parse(r.user[Prop.timestamp]!)).sort(Hlc.compare)
    assert.ok(Hlc.compare(stamps[0]!, stamps[1]!) < 0 && Hlc.compare(stamps[1]!, stamps[2]!) < 0)
  })

  it('encodes SET options, fencing token and persistence', async function () {
    const client = await pool.ready(url)
    const token = new Hlc(1700000000000, 7, 'lock-node')
    const result = await client.set('k', 'v', { condition: 'NEX', expiryMs: 1500, fencingToken: token, persist: true })
    assert.equal(result.applied, true)
    const [req] = responder.requests
    assert.deepEqual(req!.words, ['SET', 'k', 'v', 'NEX', 'PX', '1500'])
    assert.equal(req!.user[Prop.fencingToken], token.toString())
    assert.equal(req!.user[Prop.persist], 'true')

    responder.handler = () => responder.answer(Reply.notApplied)
    const skipped = await client.set(Buffer.from([0, 1, 2]), Buffer.from([3]), {
      condition: 'NX',
      fencingToken: token.toString(),
    })
    assert.equal(skipped.applied, false)
    assert.ok(skipped.version instanceof Hlc)
    assert.deepEqual(responder.requests[1]!.payload.subarray(-8), Buffer.from('$2\r\nNX\r\n'))
  })

  it('returns deleted counts for DEL and VDEL, and nulls for a missing key', async function () {
    const client = await pool.ready(url)
    responder.handler = (r) => responder.answer(r.words[0] === 'VDEL' ? Reply.integer(-1) : Reply.integer(0))
    assert.deepEqual((await client.vdel('k', 'other')).deleted, -1)
    assert.deepEqual((await client.del('k', { fencingToken: new Hlc(1, 0, 'n') })).deleted, 0)
    responder.handler = () => ({ payload: Reply.nil, user: { [Prop.status]: '200' } })
    assert.deepEqual(await client.get('missing'), { value: null, version: null })
    assert.deepEqual(
      responder.requests.map((r) => r.words[0]),
      ['VDEL', 'DEL', 'GET'],
    )
    assert.ok(responder.requests[1]!.user[Prop.fencingToken])
  })

  it('refuses bad arguments before sending anything', async function () {
    const client = await pool.ready(url)
    await assert.rejects(client.get(''), ArgumentError)
    await assert.rejects(client.set('', 'v'), ArgumentError)
    await assert.rejects(client.set('k', 'v', { expiryMs: -5 }), ArgumentError)
    await assert.rejects(client.set('k', 'v', { expiryMs: 1.5 }), ArgumentError)
    await assert.rejects(client.set('k', 'v', { fencingToken: 'not-an-hlc' }), ArgumentError)
    await assert.rejects(client.set('k', 'v', { condition: 'XX' as 'NX' }), ArgumentError)
    await assert.rejects(client.del('k', { fencingToken: '1:2' }), ArgumentError)
    await assert.rejects(client.vdel('', 'v'), ArgumentError)
    await assert.rejects(client.get('k', { timeoutMs: 0 }), ArgumentError)
    await assert.rejects(client.set('k', undefined as unknown as string), ArgumentError)
    await assert.rejects(client.get(42 as unknown as string), ArgumentError)
    await assert.rejects(client.del(null as unknown as string), ArgumentError)
    await assert.rejects(client.vdel('k', {} as unknown as string), ArgumentError)
    await assert.rejects(client.set('k', 'v', { persist: 'yes' as unknown as boolean }), ArgumentError)
    await assert.rejects(client.get('k', null as unknown as undefined), ArgumentError)
    await assert.rejects(client.set('k', 'v', 5 as unknown as undefined), ArgumentError)
    await assert.rejects(client.del('k', null as unknown as undefined), ArgumentError)
    await assert.rejects(client.vdel('k', 'v', null as unknown as undefined), ArgumentError)
    await assert.rejects(
      client.observe('', () => {}),
      ArgumentError,
    )
    await client.get('sentinel')
    assert.deepEqual(
      responder.requests.map((r) => r.words.join(' ')),
      ['GET sentinel'],
    )
  })

  it('sends string keys and values as their UTF-8 bytes, as it sends Buffers', async function () {
    const client = await pool.ready(url)
    const key = 'ключ/✓'
    const value = 'é'.repeat(40) + 'x'.repeat(70)
    await client.set(key, value)
    await client.set(Buffer.from(key), Buffer.from(value))
    await client.get(key)
    await client.get(Buffer.from(key))
    const [s1, s2, g1, g2] = responder.requests.map((r) => r.payload)
    assert.deepEqual(s1, s2)
    assert.deepEqual(g1, g2)
    const k = Buffer.from(key)
    const v = Buffer.from(value)
    assert.deepEqual(
      s1,
      Buffer.concat([
        Buffer.from(`*3\r\n$3\r\nSET\r\n$${k.length}\r\n`),
        k,
        Buffer.from(`\r\n$${v.length}\r\n`),
        v,
        Buffer.from('\r\n'),
      ]),
    )
  })

  it('counts an answered request as succeeded in its metrics even when the answer is -ERR, and a timeout as failed', async function () {
    const recorded: Array<{ verb: string; error?: Error }> = []
    const client = await pool.ready(url, { metrics: { record: (verb, _ms, error) => recorded.push({ verb, error }) } })
    responder.handler = () => responder.answer(Reply.error('something new'))
    await assert.rejects(client.get('k'), ServiceError)
    responder.handler = () => ({ payload: Reply.ok, user: { [Prop.status]: '503' } })
    await assert.rejects(client.set('k', 'v'), ProtocolError)
    responder.handler = () => null
    await assert.rejects(client.get('k', { timeoutMs: 50 }), TimeoutError)
    await eventually(() => (recorded.length === 3 ? true : undefined), 'recorded.length === 3')
    assert.deepEqual(
      recorded.map((r) => r.verb),
      ['GET', 'SET', 'GET'],
    )
    assert.equal(recorded[0]!.error, undefined)
    assert.ok(recorded[1]!.error instanceof ProtocolError)
    assert.ok(recorded[2]!.error instanceof TimeoutError)
  })

  it('counts a request refused before it is sent as failed, and a service check not at all', async function () {
    const recorded: Array<{ verb: string; error?: Error }> = []
    const client = await pool.ready(url, { metrics: { record: (verb, _ms, error) => recorded.push({ verb, error }) } })
    assert.equal(await client.checkService(), 'answered')
    const cancelled = new AbortController()
    cancelled.abort()
    await assert.rejects(client.get('k', { signal: cancelled.signal }), CancelledError)
    await client.get('k')
    assert.deepEqual(
      recorded.map((r) => [r.verb, r.error?.constructor.name]),
      [
        ['GET', 'CancelledError'],
        ['GET', undefined],
      ],
    )
  })

  it('turns -ERR into a ServiceError with its catalogue code, unknown text kept', async function () {
    const client = await pool.ready(url)
    responder.handler = () =>
      responder.answer(
        Reply.error('the request fencing token is a lower version than the fencing token protecting the resource'),
      )
    const err = await client.set('k', 'v').catch((e: unknown) => e)
    assert.ok(err instanceof ServiceError)
    assert.equal(err.code, 'FencingTokenLowerVersion')
    responder.handler = () => responder.answer(Reply.error('something new'))
    const unknown = await client.get('k').catch((e: unknown) => e)
    assert.ok(unknown instanceof ServiceError)
    assert.equal(unknown.code, 'Unknown')
    assert.equal(unknown.text, 'something new')
  })

  describe('protocol violations fail the call with a ProtocolError', function () {
    const cases: Array<[string, (r: Responder) => Answer]> = [
      [
        'a missing __stat',
        () => ({ payload: Reply.ok, user: { [Prop.timestamp]: new Hlc(Date.now(), 0, 'x').toString() } }),
      ],
      [
        'a __stat of 400 or more (with __stMsg)',
        () => ({ payload: Reply.ok, user: { [Prop.status]: '503', [Prop.statusMessage]: 'busy' } }),
      ],
      ['an unsupported __protVer major', (r) => r.answer(Reply.ok, { [Prop.protocolVersion]: '2.0' })],
      ['a malformed __ts', (r) => r.answer(Reply.ok, { [Prop.timestamp]: 'yesterday' })],
      [
        'a __ts far in the future (clock drift)',
        (r) => r.answer(Reply.ok, { [Prop.timestamp]: new Hlc(Date.now() + 3_600_000, 0, 'x').toString() }),
      ],
      ['an unparseable payload', (r) => r.answer(Buffer.from('not resp'))],
      ['a payload of the wrong type', (r) => r.answer(Reply.integer(5))],
      ['an empty payload', (r) => r.answer(Buffer.alloc(0))],
    ]
    for (const [what, answer] of cases) {
      it(what, async function () {
        const client = await pool.ready(url)
        responder.handler = () => answer(responder)
        const before = client.clock.current
        await assert.rejects(client.set('k', 'v'), (err: unknown) => {
          assert.ok(err instanceof ProtocolError, `got ${String(err)}`)
          if (what.includes('__stMsg')) assert.match(err.message, /503: busy/)
          return true
        })
        if (what.includes('drift'))
          assert.ok(client.clock.current.timestamp < Date.now() + 60_000, 'a drifted __ts is not merged')
        assert.ok(Hlc.compare(client.clock.current, before) >= 0)
      })
    }

    it('a SET answer without __ts', async function () {
      const client = await pool.ready(url)
      responder.handler = () => ({ payload: Reply.ok, user: { [Prop.status]: '200' } })
      await assert.rejects(client.set('k', 'v'), ProtocolError)
    })
  })

  it('times out when nobody answers, then drops the late answer quietly', async function () {
    const client = await pool.ready(url)
    const held: SeenRequest[] = []
    responder.handler = (r) => {
      held.push(r)
      return null
    }
    const err = await client.get('slow', { timeoutMs: 150 }).catch((e: unknown) => e)
    assert.ok(err instanceof TimeoutError)
    assert.equal(err.kind, 'timeout')
    assert.deepEqual(client.load, { inFlight: 0, queued: 0 })
    // The late answer arrives for a request nobody waits for any more.
    await responder.send(held[0]!, responder.answer(Reply.value(Buffer.from('late'))))
    responder.handler = (r) => standard(r, responder)
    assert.equal((await client.get('next')).value?.toString(), 'value-of-next')
  })

  it('settles once on duplicate answers and ignores foreign correlation data', async function () {
    const client = await pool.ready(url)
    let n = 0
    responder.handler = (r) => [
      { payload: Reply.value(Buffer.from('foreign')), correlation: Buffer.alloc(16, 9) },
      responder.answer(Reply.value(Buffer.from(`first-${r.words[1]}`))),
      responder.answer(Reply.value(Buffer.from(`second-${(n += 1)}`))),
    ]
    const results = await Promise.all([client.get('a'), client.get('b')])
    assert.deepEqual(
      results.map((r) => r.value?.toString()),
      ['first-a', 'first-b'],
    )
    responder.handler = (r) => standard(r, responder)
    assert.equal((await client.get('c')).value?.toString(), 'value-of-c', 'the duplicates left nothing behind')
    assert.deepEqual(client.load, { inFlight: 0, queued: 0 })
  })

  it('keeps many requests in flight over one connection, each with its own answer', async function () {
    const client = await pool.ready(url)
    const keys = Array.from({ length: 300 }, (_, i) => `key-${i}`)
    const results = await Promise.all(keys.map((k) => client.get(k)))
    assert.deepEqual(
      results.map((r) => r.value?.toString()),
      keys.map((k) => `value-of-${k}`),
    )
  })

  it('bounds requests in flight, queues a bounded number behind them, and refuses the rest', async function () {
    const client = await pool.ready(url, { maxInFlight: 2, maxQueued: 2 })
    const held: SeenRequest[] = []
    responder.handler = (r) => {
      held.push(r)
      return null
    }
    const admitted = [client.get('a'), client.get('b')]
    const queued = [client.get('c'), client.get('d')]
    await assert.rejects(client.get('e'), OverloadedError)
    await responder.waitForRequests(2)
    assert.deepEqual(client.load, { inFlight: 2, queued: 2 })
    // Only the admitted two reached the wire.
    assert.deepEqual(
      held.map((r) => r.words[1]),
      ['a', 'b'],
    )
    responder.handler = (r) => standard(r, responder)
    for (const r of held.splice(0)) await responder.send(r, standard(r, responder))
    const values = await Promise.all([...admitted, ...queued])
    assert.deepEqual(
      values.map((v) => v.value?.toString()),
      ['value-of-a', 'value-of-b', 'value-of-c', 'value-of-d'],
    )
    assert.deepEqual(client.load, { inFlight: 0, queued: 0 })
  })

  describe('a failed SET says whether it was written', function () {
    /** A store behind the responder that executes SETs without answering them, and answers GETs. */
    function silentWrites(execute: boolean): Map<string, Buffer> {
      const held = new Map<string, Buffer>()
      responder.handler = (r) => {
        if (r.words[0] === 'SET') {
          if (execute) held.set(r.words[1]!, Buffer.from(r.words[2]!))
          return null
        }
        if (r.words[0] === 'GET') {
          const v = held.get(r.words[1]!)
          return responder.answer(v ? Reply.value(v) : Reply.nil)
        }
        return standard(r, responder)
      }
      return held
    }

    it('a SET executed whose answer never came: TimeoutError with written true, read back after its expiry', async function () {
      const client = await pool.ready(url)
      silentWrites(true)
      const err = await client.set('w/landed', 'mine', { timeoutMs: 300 }).catch((e: unknown) => e)
      assert.ok(err instanceof TimeoutError, String(err))
      assert.equal(err.written, true)
      assert.deepEqual(
        responder.requests.map((r) => r.words.slice(0, 2).join(' ')),
        ['SET w/landed', 'GET w/landed'],
      )
    })

    it('a SET never executed: TimeoutError with written false; another value written since: "unknown"', async function () {
      const client = await pool.ready(url)
      const held = silentWrites(false)
      const lost = await client.set('w/lost', 'mine', { timeoutMs: 300 }).catch((e: unknown) => e)
      assert.ok(lost instanceof TimeoutError, String(lost))
      assert.equal(lost.written, false)
      held.set('w/other', Buffer.from('theirs'))
      const other = await client.set('w/other', 'mine', { timeoutMs: 300 }).catch((e: unknown) => e)
      assert.ok(other instanceof TimeoutError, String(other))
      assert.equal(other.written, 'unknown')
    })

    it('refused before sending (Overloaded) or answered -ERR: written false without a read; a GET has no written', async function () {
      const client = await pool.ready(url, { maxInFlight: 1, maxQueuedBytes: 0 })
      const answers: SeenRequest[] = []
      responder.handler = (r) => {
        answers.push(r)
        return null
      }
      const first = client.set('w/a', 'x').catch((e: unknown) => e)
      const refused = await client.set('w/b', 'y').catch((e: unknown) => e)
      assert.ok(refused instanceof OverloadedError, String(refused))
      assert.equal(refused.written, false)
      await responder.waitForRequests(1)
      await responder.send(answers[0]!, responder.answer(Reply.error('quota exceeded')))
      const err = await first
      assert.ok(err instanceof ServiceError, String(err))
      assert.equal(err.written, false)
      const read = await client.get('w/c', { timeoutMs: 100 }).catch((e: unknown) => e)
      assert.ok(read instanceof TimeoutError)
      assert.equal(read.written, undefined)
      assert.deepEqual(
        responder.requests.map((r) => r.words.slice(0, 2).join(' ')),
        ['SET w/a', 'GET w/c'],
      )
    })
  })

  describe('a failed DEL or VDEL says whether it took effect', function () {
    /** A store behind the responder that executes deletes (when `execute`) without answering them, and answers GETs. */
    function silentDeletes(execute: boolean, held: Map<string, Buffer>): void {
      responder.handler = (r) => {
        const [verb, key = '', value] = r.words
        if (verb === 'DEL' || verb === 'VDEL') {
          if (execute && (verb === 'DEL' || held.get(key)?.toString() === value)) held.delete(key)
          return null
        }
        if (verb === 'GET') {
          const v = held.get(key)
          // Held since before the delete was sent: a version from an hour ago.
          return responder.answer(
            v ? Reply.value(v) : Reply.nil,
            v ? { [Prop.timestamp]: new Hlc(Date.now() - 3_600_000, 0, 'old').toString() } : {},
          )
        }
        return standard(r, responder)
      }
    }

    it('a DEL and a VDEL executed whose answers never came: TimeoutError with written true, read back after expiry', async function () {
      const client = await pool.ready(url)
      silentDeletes(
        true,
        new Map([
          ['d/a', Buffer.from('x')],
          ['d/b', Buffer.from('mine')],
        ]),
      )
      const del = await client.del('d/a', { timeoutMs: 300 }).catch((e: unknown) => e)
      assert.ok(del instanceof TimeoutError, String(del))
      assert.equal(del.written, true)
      const vdel = await client.vdel('d/b', 'mine', { timeoutMs: 300 }).catch((e: unknown) => e)
      assert.ok(vdel instanceof TimeoutError, String(vdel))
      assert.equal(vdel.written, true)
      assert.deepEqual(
        responder.requests.map((r) => r.words.slice(0, 2).join(' ')),
        ['DEL d/a', 'GET d/a', 'VDEL d/b', 'GET d/b'],
      )
    })

    it('a DEL never executed: written false; a VDEL of another value: false; a key written since: "unknown"', async function () {
      const client = await pool.ready(url)
      const held = new Map([
        ['d/kept', Buffer.from('x')],
        ['d/other', Buffer.from('theirs')],
      ])
      silentDeletes(false, held)
      const lost = await client.del('d/kept', { timeoutMs: 300 }).catch((e: unknown) => e)
      assert.ok(lost instanceof TimeoutError, String(lost))
      assert.equal(lost.written, false)
      const mismatch = await client.vdel('d/other', 'mine', { timeoutMs: 300 }).catch((e: unknown) => e)
      assert.ok(mismatch instanceof TimeoutError, String(mismatch))
      assert.equal(mismatch.written, false)
      // The responder's own version, from now: written since the delete was made, by someone.
      responder.handler = (r) => (r.words[0] === 'GET' ? responder.answer(Reply.value(Buffer.from('new'))) : null)
      const since = await client.del('d/since', { timeoutMs: 300 }).catch((e: unknown) => e)
      assert.ok(since instanceof TimeoutError, String(since))
      assert.equal(since.written, 'unknown')
    })

    it('a DEL answered -ERR or refused before sending: written false without a read', async function () {
      const client = await pool.ready(url)
      responder.handler = (r) => (r.words[0] === 'DEL' ? responder.answer(Reply.error('quota exceeded')) : null)
      const err = await client.del('d/err', { timeoutMs: 300 }).catch((e: unknown) => e)
      assert.ok(err instanceof ServiceError, String(err))
      assert.equal(err.written, false)
      assert.deepEqual(
        responder.requests.map((r) => r.words.slice(0, 2).join(' ')),
        ['DEL d/err'],
      )
    })
  })

  it('updateKey whose fenced write landed but whose answer was lost fails saying written, and never applies its function twice', async function () {
    const client = await pool.ready(url)
    const store = new Map<string, Buffer>()
    let dropped = 0
    responder.handler = (r) => {
      const [verb, key = '', value = ''] = r.words
      if (verb === 'SET') {
        store.set(key, Buffer.from(value))
        // The update's own write (fenced, on the key itself): executed, its answer lost once.
        if (key === 'u/counter' && r.user[Prop.fencingToken] !== undefined && dropped++ === 0) return null
        return responder.answer(Reply.ok)
      }
      if (verb === 'GET') {
        const held = store.get(key)
        return responder.answer(held ? Reply.value(held) : Reply.nil)
      }
      if (verb === 'DEL' || verb === 'VDEL') return responder.answer(Reply.integer(store.delete(key) ? 1 : 0))
      return standard(r, responder)
    }
    let applied = 0
    const err = await updateKey(
      client,
      'u/counter',
      (current) => {
        applied++
        return String(Number(current?.toString() ?? '0') + 1)
      },
      { holdValue: () => `h:${Math.random()}`, leaseMs: 500, timeoutMs: 5000 },
    ).catch((e: unknown) => e)
    assert.ok(err instanceof TimeoutError, String(err))
    assert.equal(err.written, true)
    assert.equal(applied, 1, 'the function ran once')
    assert.equal(store.get('u/counter')?.toString(), '1')
  })

  it('times out a request still waiting in the queue', async function () {
    const client = await pool.ready(url, { maxInFlight: 1, maxQueued: 5 })
    responder.handler = () => null
    const first = client.get('a', { timeoutMs: 400 })
    const queued = await client.get('b', { timeoutMs: 100 }).catch((e: unknown) => e)
    assert.ok(queued instanceof TimeoutError)
    assert.match(queued.message, /free slot/)
    await assert.rejects(first, TimeoutError)
  })

  it('cancels with an AbortSignal, before sending and in flight', async function () {
    const client = await pool.ready(url)
    responder.handler = () => null
    const aborted = new AbortController()
    aborted.abort()
    await assert.rejects(client.get('x', { signal: aborted.signal }), CancelledError)
    const controller = new AbortController()
    const pending = client.get('y', { signal: controller.signal })
    await responder.waitForRequests(1)
    controller.abort()
    await assert.rejects(pending, CancelledError)
    assert.deepEqual(
      responder.requests.map((r) => r.words[1]),
      ['y'],
    )
    assert.deepEqual(client.load, { inFlight: 0, queued: 0 })
  })

  it('fails pending requests with ConnectionError on close; close is idempotent', async function () {
    const client = await pool.ready(url)
    responder.handler = () => null
    const pending = client.get('x')
    await responder.waitForRequests(1)
    const closing = Promise.all([client.close(), client.close()])
    await assert.rejects(pending, ConnectionError)
    await closing
    assert.equal(client.status.state, 'closed')
    await assert.rejects(client.get('y'), ConnectionError)
    await assert.rejects(client.ready(), ConnectionError)
    await client.close()
  })

  it('subscribes to its response topic and notification filter before reporting ready', async function () {
    responder.handler = (r) => standard(r, responder)
    const client = pool.create(url)
    assert.equal(client.status.state, 'connecting')
    await client.ready({ timeoutMs: 5000 })
    assert.equal(client.status.state, 'connected')
    // An answer teaches the client the responder's node id: notifications from an unknown one are not taken.
    await client.get('x')
    // A notification published right away arrives: the SUBACK for the filter came first.
    const received: string[] = []
    client.on('notification', (n) => received.push(`${n.operation} ${n.key.toString()} ${n.value?.toString()}`))
    await responder.notify(
      client.clientId,
      'k',
      Buffer.from('*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$1\r\nv\r\n'),
    )
    await eventually(() => (received.length ? true : undefined), 'received.length')
    assert.deepEqual(received, ['SET k v'])
    assert.ok(notificationFilter(client.clientId).endsWith('/command/notify/+'))
  })
})

import assert from 'node:assert/strict'
import { StateStoreClient } from '../../../src/client'
import { startEmulator } from '../../../src/emulator'
import { Hlc } from '../../../src/hlc'
import type { StoreActivity } from '../../../src/observe'
import {
  ALL,
  COMMON,
  flowWith,
  helper,
  lastStatus,
  nextMessage,
  noMessage,
  onTab,
  useStore,
  withClient,
} from './support'
import { until } from '../../support/wait'

/** ss-set → ss-get on one key, with the get's decoding. */
function roundTripFlow(url: string, decode: string, key = 'rt') {
  return [
    ...flowWith(url, { id: 'set', type: 'ss-set', key, keyType: 'str' }),
    onTab({ id: 'get', type: 'ss-get', store: 'cfg', key, keyType: 'str', decode, wires: [['got']] }),
    onTab({ id: 'got', type: 'helper' }),
  ]
}

async function writeThenRead(value: unknown): Promise<Record<string, unknown>> {
  const written = nextMessage(helper.getNode('out1'))
  helper.getNode('set').receive({ payload: value })
  assert.equal((await written).applied, true)
  const read = nextMessage(helper.getNode('got'))
  helper.getNode('get').receive({ payload: 'ignored' })
  return read
}

describe('nodes: ss-set and ss-get', function () {
  const store = useStore()

  it('writes a value and reads it back with its version, keeping the rest of the msg', async () => {
    await helper.load(ALL, roundTripFlow(store.url, 'auto', 'greeting'))
    const written = nextMessage(helper.getNode('out1'))
    helper.getNode('set').receive({ payload: 'hello', extra: 7 })
    const w = await written
    assert.equal(w.applied, true)
    assert.equal(w.extra, 7)
    assert.equal(w.payload, 'hello')
    assert.match(String(w.version), /^\d{15}:\d{5}:.+$/)
    assert.equal(lastStatus(helper.getNode('set')).text, `${COMMON}status.applied`)
    assert.equal(lastStatus(helper.getNode('set')).fill, 'green')

    const read = nextMessage(helper.getNode('got'))
    helper.getNode('get').receive({ topic: 'other', extra: 8 })
    const r = await read
    assert.equal(r.payload, 'hello')
    assert.equal(r.found, true)
    assert.equal(r.version, w.version)
    assert.equal(r.extra, 8)
    assert.equal(r.topic, 'other')
    assert.equal(lastStatus(helper.getNode('get')).text, `${COMMON}status.found`)
  })

  const cases: Array<[string, unknown, string, unknown]> = [
    ['a string (utf8)', 'héllo wörld ✓', 'utf8', 'héllo wörld ✓'],
    ['a string that is not JSON (auto)', 'plain text', 'auto', 'plain text'],
    ['an empty string (utf8)', '', 'utf8', ''],
    [
      'a Buffer of arbitrary bytes (buffer)',
      Buffer.from([0, 255, 1, 254, 0x80, 10]),
      'buffer',
      Buffer.from([0, 255, 1, 254, 0x80, 10]),
    ],
    ['a Buffer that is not UTF-8 (auto)', Buffer.from([0xff, 0xfe, 0xfd]), 'auto', Buffer.from([0xff, 0xfe, 0xfd])],
    [
      'an object (json)',
      { a: 1, b: [true, null, 'x'], c: { d: 1.5 } },
      'json',
      { a: 1, b: [true, null, 'x'], c: { d: 1.5 } },
    ],
    ['an object (auto)', { nested: { deep: [1, 2, 3] } }, 'auto', { nested: { deep: [1, 2, 3] } }],
    ['an array (auto)', [1, 'two', { three: 3 }], 'auto', [1, 'two', { three: 3 }]],
    ['a number (auto)', 42.5, 'auto', 42.5],
    ['zero (json)', 0, 'json', 0],
    ['a negative number (json)', -17, 'json', -17],
    ['true (auto)', true, 'auto', true],
    ['false (json)', false, 'json', false],
    ['an object read as text (utf8)', { a: 1 }, 'utf8', '{"a":1}'],
    ['a string read as bytes (buffer)', 'abc', 'buffer', Buffer.from('abc')],
  ]
  for (const [what, value, decode, expected] of cases) {
    it(`round-trips ${what}`, async () => {
      await helper.load(ALL, roundTripFlow(store.url, decode))
      const r = await writeThenRead(value)
      assert.deepEqual(r.payload, expected)
      if (Buffer.isBuffer(expected)) assert.ok(Buffer.isBuffer(r.payload), 'a Buffer comes back as a Buffer')
    })
  }

  it('leaves the key it wrote in msg.key; a get reads msg.topic with its default Key, and msg.key when its Key names it', async () => {
    // inject (topic "the-topic") → set with a fixed key → get with its editor defaults, and a get whose Key is msg.key
    await withClient(store.url, (c) => c.set('the-topic', Buffer.from('"what the topic names"')))
    await helper.load(ALL, [
      ...flowWith(store.url, {
        id: 'set',
        type: 'ss-set',
        key: 'fixed-key',
        keyType: 'str',
        wires: [['get', 'getNamed']],
      }),
      onTab({ id: 'get', type: 'ss-get', store: 'cfg', key: 'topic', keyType: 'msg', wires: [['got']] }),
      onTab({ id: 'getNamed', type: 'ss-get', store: 'cfg', key: 'key', keyType: 'msg', wires: [['gotNamed']] }),
      onTab({ id: 'got', type: 'helper' }),
      onTab({ id: 'gotNamed', type: 'helper' }),
    ])
    const read = nextMessage(helper.getNode('got'))
    const named = nextMessage(helper.getNode('gotNamed'))
    helper.getNode('set').receive({ topic: 'the-topic', payload: 41 })
    const r = await read
    assert.equal(r.key, 'the-topic')
    assert.equal(r.payload, 'what the topic names', 'the default Key reads msg.topic, not the msg.key the set left')
    const n = await named
    assert.equal(n.key, 'fixed-key')
    assert.equal(n.payload, 41, 'a Key of msg.key reads the key the set wrote')
    assert.equal(n.topic, 'the-topic', 'the msg is otherwise unchanged')
  })

  it('reports a missing key as msg.found = false on the same output by default', async () => {
    await helper.load(ALL, flowWith(store.url, { id: 'get', type: 'ss-get', key: 'never-written', keyType: 'str' }))
    const read = nextMessage(helper.getNode('out1'))
    helper.getNode('get').receive({ payload: 'x' })
    const r = await read
    assert.equal(r.found, false)
    assert.equal(r.payload, undefined)
    assert.equal(lastStatus(helper.getNode('get')).text, `${COMMON}status.notFound`)
  })

  it('sends a missing key to the second output when configured, and hits to the first', async () => {
    const flow = [
      ...flowWith(
        store.url,
        { id: 'get', type: 'ss-get', key: 'topic', keyType: 'msg', notFound: 'output', outputs: 2 },
        2,
      ),
      onTab({ id: 'set', type: 'ss-set', store: 'cfg', key: 'present', keyType: 'str', wires: [['setOut']] }),
      onTab({ id: 'setOut', type: 'helper' }),
    ]
    await helper.load(ALL, flow)
    const missing = nextMessage(helper.getNode('out2'))
    const none = noMessage(helper.getNode('out1'))
    helper.getNode('get').receive({ topic: 'absent' })
    assert.equal((await missing).found, false)
    await none
    const written = nextMessage(helper.getNode('setOut'))
    helper.getNode('set').receive({ payload: 1 })
    await written
    const hit = nextMessage(helper.getNode('out1'))
    helper.getNode('get').receive({ topic: 'present' })
    assert.equal((await hit).payload, 1)
  })

  it('fails a JSON read of a value that is not JSON, with the msg intact, then keeps working', async () => {
    await failedRead('json', 'not json', 'ValueNotJson')
    const again = nextMessage(helper.getNode('out1'))
    helper.getNode('set').receive({ payload: { ok: true } })
    await again
    const read = nextMessage(helper.getNode('got'))
    helper.getNode('get').receive({})
    assert.deepEqual((await read).payload, { ok: true })
  })

  it("lists each failed msg among its connection's last errors (the sidebar's), by the node's name and id and the msg's key", async () => {
    await helper.load(ALL, roundTripFlow(store.url, 'json'))
    const metrics = (helper.getNode('cfg') as unknown as { activity: StoreActivity }).activity.metrics
    const written = nextMessage(helper.getNode('out1'))
    helper.getNode('set').receive({ payload: 'not json' })
    const key = ((await written) as { key?: string }).key
    assert.ok(key, 'the set node said which key it wrote')
    const caught = nextMessage(helper.getNode('caught'))
    helper.getNode('get').receive({ payload: 'read' })
    await caught
    const errors = metrics.figures().lastErrors
    assert.equal(errors.length, 1)
    assert.equal(errors[0]!.node, 'ss-get', 'a node without a name is listed by its type')
    assert.equal(errors[0]!.nodeId, 'get', 'and by its id, for the editor to show its label')
    assert.equal(errors[0]!.key, key, 'with the key it failed on')
    // The test helper has no catalogue: the message is the decodeJson key, the JSON text in a runtime.
    assert.match(errors[0]!.message, /decodeJson|JSON/)
  })

  it('takes the key from msg, flow, global, env and JSONata', async () => {
    process.env.SS_TEST_KEY = 'from-env'
    const flow = [
      ...flowWith(store.url, { id: 'set', type: 'ss-set', key: 'topic', keyType: 'msg' }),
      onTab({ id: 'gFlow', type: 'ss-get', store: 'cfg', key: 'k', keyType: 'flow', wires: [['got']] }),
      onTab({ id: 'gGlobal', type: 'ss-get', store: 'cfg', key: 'k', keyType: 'global', wires: [['got']] }),
      onTab({ id: 'gEnv', type: 'ss-get', store: 'cfg', key: 'SS_TEST_KEY', keyType: 'env', wires: [['got']] }),
      onTab({
        id: 'gJsonata',
        type: 'ss-get',
        store: 'cfg',
        key: '"from-" & payload',
        keyType: 'jsonata',
        wires: [['got']],
      }),
      onTab({ id: 'got', type: 'helper' }),
    ]
    try {
      await helper.load(ALL, flow)
      for (const key of ['from-flow', 'from-global', 'from-env', 'from-jsonata']) {
        const w = nextMessage(helper.getNode('out1'))
        helper.getNode('set').receive({ topic: key, payload: key.toUpperCase() })
        await w
      }
      const setNode = helper.getNode('set') as unknown as {
        context(): { flow: { set(k: string, v: string): void }; global: { set(k: string, v: string): void } }
      }
      setNode.context().flow.set('k', 'from-flow')
      setNode.context().global.set('k', 'from-global')
      const expectations: Array<[string, Record<string, unknown>, string]> = [
        ['gFlow', {}, 'FROM-FLOW'],
        ['gGlobal', {}, 'FROM-GLOBAL'],
        ['gEnv', {}, 'FROM-ENV'],
        ['gJsonata', { payload: 'jsonata' }, 'FROM-JSONATA'],
      ]
      for (const [id, msg, expected] of expectations) {
        const r = nextMessage(helper.getNode('got'))
        helper.getNode(id).receive(msg)
        assert.equal((await r).payload, expected, id)
      }
    } finally {
      delete process.env.SS_TEST_KEY
    }
  })

  it('overrides replace options, never the key: msg.key moves no Key; refused overrides are ignored', async () => {
    const flow = [
      ...flowWith(store.url, { id: 'set', type: 'ss-set', key: 'topic', keyType: 'msg' }),
      onTab({
        id: 'refusing',
        type: 'ss-set',
        store: 'cfg',
        key: 'topic',
        keyType: 'msg',
        overrides: false,
        wires: [['refOut']],
      }),
      onTab({ id: 'fixed', type: 'ss-set', store: 'cfg', key: 'fixed', keyType: 'str', wires: [['refOut']] }),
      onTab({ id: 'refOut', type: 'helper' }),
      onTab({ id: 'get', type: 'ss-get', store: 'cfg', key: 'topic', keyType: 'msg', wires: [['got']] }),
      onTab({ id: 'got', type: 'helper' }),
    ]
    await helper.load(ALL, flow)
    let w = nextMessage(helper.getNode('out1'))
    helper.getNode('set').receive({ topic: 'configured', key: 'overridden', payload: 'via msg.topic', condition: 'NX' })
    assert.equal((await w).key, 'configured')
    w = nextMessage(helper.getNode('refOut'))
    // NX honoured: the key exists, so an override to NX would not write; refused, it writes.
    helper
      .getNode('refusing')
      .receive({ topic: 'configured', key: 'overridden', payload: 'refused override', condition: 'NX', expiry: -5 })
    assert.equal((await w).applied, true, 'refused overrides are ignored, not errors')
    w = nextMessage(helper.getNode('refOut'))
    // What a lock node or another set node upstream leaves in msg.key does not move a node with a key of its own.
    helper.getNode('fixed').receive({ key: 'examples/counter/lock', payload: 'fixed wins' })
    assert.equal((await w).key, 'fixed')
    const read = async (key: string) => {
      const r = nextMessage(helper.getNode('got'))
      helper.getNode('get').receive({ topic: key })
      return (await r).payload
    }
    assert.equal(await read('overridden'), undefined, 'msg.key wrote nothing')
    assert.equal(await read('configured'), 'refused override')
    assert.equal(await read('fixed'), 'fixed wins')
    assert.equal(await read('examples/counter/lock'), undefined)
  })

  it('applies NX and NEX conditions from the node and from msg.condition', async () => {
    const flow = [
      ...flowWith(
        store.url,
        { id: 'nx', type: 'ss-set', key: 'topic', keyType: 'msg', condition: 'NX', notApplied: 'output', outputs: 2 },
        2,
      ),
      onTab({ id: 'plain', type: 'ss-set', store: 'cfg', key: 'topic', keyType: 'msg', wires: [['plainOut']] }),
      onTab({ id: 'plainOut', type: 'helper' }),
    ]
    await helper.load(ALL, flow)
    const nx = helper.getNode('nx')
    let ok = nextMessage(helper.getNode('out1'))
    nx.receive({ topic: 'cond', payload: 'first' })
    assert.equal((await ok).applied, true)
    const notApplied = nextMessage(helper.getNode('out2'))
    nx.receive({ topic: 'cond', payload: 'second' })
    const n = await notApplied
    assert.equal(n.applied, false)
    assert.match(String(n.version), /^\d{15}:/)
    assert.equal(lastStatus(nx).text, `${COMMON}status.notApplied`)

    // NEX: applies when the stored value is equal, not when it differs
    const plain = helper.getNode('plain')
    ok = nextMessage(helper.getNode('plainOut'))
    plain.receive({ topic: 'cond', payload: 'first', condition: 'NEX' })
    assert.equal((await ok).applied, true)
    ok = nextMessage(helper.getNode('plainOut'))
    plain.receive({ topic: 'cond', payload: 'different', condition: 'NEX' })
    assert.equal((await ok).applied, false, 'not-applied goes to the only output when not split')
    ok = nextMessage(helper.getNode('plainOut'))
    plain.receive({ topic: 'cond', payload: 'different' })
    assert.equal((await ok).applied, true)
  })

  it('expires keys after the configured expiry and after msg.expiry', async () => {
    const flow = [
      ...flowWith(store.url, { id: 'set', type: 'ss-set', key: 'topic', keyType: 'msg', expiry: '150' }),
      onTab({ id: 'get', type: 'ss-get', store: 'cfg', key: 'topic', keyType: 'msg', wires: [['got']] }),
      onTab({ id: 'got', type: 'helper' }),
    ]
    await helper.load(ALL, flow)
    for (const msg of [
      { topic: 'exp-config', payload: 1 },
      { topic: 'exp-msg', payload: 2, expiry: 100 },
      { topic: 'exp-never', payload: 3, expiry: 0 },
    ]) {
      const w = nextMessage(helper.getNode('out1'))
      helper.getNode('set').receive(msg)
      await w
    }
    const found = async (key: string) => {
      const r = nextMessage(helper.getNode('got'))
      helper.getNode('get').receive({ topic: key })
      return (await r).found
    }
    await until(() => true, 'start')
    let expired = false
    for (let i = 0; i < 100 && !expired; i++) {
      expired = !(await found('exp-config')) && !(await found('exp-msg'))
      if (!expired) await new Promise((r) => setTimeout(r, 50))
    }
    assert.ok(expired, 'both keys expired')
    assert.equal(await found('exp-never'), true, 'expiry 0 means never')
  })

  it('passes a persist request through', async () => {
    await helper.load(
      ALL,
      flowWith(store.url, { id: 'set', type: 'ss-set', key: 'persisted', keyType: 'str', persist: true }),
    )
    const w = nextMessage(helper.getNode('out1'))
    helper.getNode('set').receive({ payload: 'kept' })
    assert.equal((await w).applied, true)
  })

  it('protects a key with fencing tokens: a newer token wins, an older one is refused with the service error', async () => {
    await helper.load(ALL, flowWith(store.url, { id: 'set', type: 'ss-set', key: 'fenced', keyType: 'str' }))
    const now = Date.now()
    const newer = new Hlc(now, 5, 'holder-b').toString()
    const older = new Hlc(now - 1000, 0, 'holder-a').toString()
    const set = helper.getNode('set')
    const w = nextMessage(helper.getNode('out1'))
    set.receive({ payload: 'by b', fencingToken: newer })
    assert.equal((await w).applied, true)
    const caught = nextMessage(helper.getNode('caught'))
    set.receive({ payload: 'by a', fencingToken: older })
    const c = await caught
    assert.equal(c.payload, 'by a', 'the msg reaches Catch intact')
    const error = c.error as {
      message: string
      code: string
      cause: { kind: string; code: string; message: string }
      source: { id: string }
    }
    assert.equal(error.code, 'FencingTokenLowerVersion')
    assert.deepEqual(
      { kind: error.cause.kind, code: error.cause.code },
      { kind: 'service', code: 'FencingTokenLowerVersion' },
    )
    assert.match(error.message, /fencing token is a lower version/)
    assert.equal(error.source.id, 'set')
    assert.equal(lastStatus(set).text, `node-red:common.status.error: ${COMMON}failure.FencingTokenLowerVersion`)
    assert.equal(lastStatus(set).fill, 'red')
  })

  it('takes the fencing token from another property type, or sends none', async () => {
    const flow = [
      ...flowWith(store.url, {
        id: 'set',
        type: 'ss-set',
        key: 'fenced-2',
        keyType: 'str',
        fencingToken: 'token',
        fencingTokenType: 'flow',
      }),
      onTab({
        id: 'unfenced',
        type: 'ss-set',
        store: 'cfg',
        key: 'fenced-2',
        keyType: 'str',
        fencingTokenType: 'none',
        wires: [['out1']],
      }),
    ]
    await helper.load(ALL, flow)
    const set = helper.getNode('set') as unknown as { context(): { flow: { set(k: string, v: string): void } } }
    set.context().flow.set('token', new Hlc(Date.now(), 0, 'x').toString())
    let w = nextMessage(helper.getNode('out1'))
    helper.getNode('set').receive({ payload: 'fenced' })
    assert.equal((await w).applied, true)
    // the key is now protected: a write without a token is refused by the service
    const caught = nextMessage(helper.getNode('caught'))
    helper.getNode('unfenced').receive({ payload: 'unfenced', fencingToken: 'ignored' })
    assert.equal(((await caught).error as { code: string }).code, 'MissingFencingToken')
    w = nextMessage(helper.getNode('out1'))
    helper.getNode('set').receive({ payload: 'still works' })
    assert.equal((await w).applied, true)
  })

  it('lists the keys matching a pattern (SCAN) as one sorted array', async () => {
    await helper.load(
      ALL,
      flowWith(store.url, { id: 'get', type: 'ss-get', key: 'topic', keyType: 'msg', mode: 'keys' }),
    )
    const client = new StateStoreClient({ brokerUrl: store.url, clientId: 'list-writer' })
    try {
      await client.ready({ timeoutMs: 5000 })
      for (const k of ['fleet/b/state', 'fleet/a/state', 'fleet/a/config', 'other/a/state']) await client.set(k, 'x')
    } finally {
      await client.close()
    }
    const read = nextMessage(helper.getNode('out1'))
    helper.getNode('get').receive({ topic: 'fleet/*/state', payload: 'x' })
    const r = await read
    assert.deepEqual(r.payload, ['fleet/a/state', 'fleet/b/state'])
    assert.equal(r.found, true)
    assert.equal(lastStatus(helper.getNode('get')).text, `${COMMON}status.listed 2`)

    const none = nextMessage(helper.getNode('out1'))
    helper.getNode('get').receive({ topic: 'nothing/[0-9]' })
    const n = await none
    assert.deepEqual(n.payload, [])
    assert.equal(n.found, false)
  })

  it('fails a key listing with NotSupported where the store has no SCAN, and keeps working', async () => {
    const released = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, logLevel: 'error', scan: false })
    try {
      await helper.load(
        ALL,
        flowWith(released.brokerUrl, { id: 'get', type: 'ss-get', key: '*', keyType: 'str', mode: 'keys' }),
      )
      const caught = nextMessage(helper.getNode('caught'))
      helper.getNode('get').receive({ payload: 'keep me' })
      const c = await caught
      assert.equal(c.payload, 'keep me')
      assert.equal((c.error as { code: string }).code, 'NotSupported')
      await until(
        () => lastStatus(helper.getNode('get')).text === `node-red:common.status.error: ${COMMON}failure.NotSupported`,
        'the status names it',
      )
    } finally {
      await helper.unload()
      await released.stop()
    }
  })

  it('stores an array of objects as NDJSON (a dataflow dataset) and reads it back as the array', async () => {
    await helper.load(ALL, [
      ...flowWith(store.url, { id: 'set', type: 'ss-set', key: 'dataset/assets', keyType: 'str', encode: 'ndjson' }),
      onTab({
        id: 'get',
        type: 'ss-get',
        store: 'cfg',
        key: 'dataset/assets',
        keyType: 'str',
        decode: 'ndjson',
        wires: [['got']],
      }),
      onTab({ id: 'got', type: 'helper' }),
    ])
    const records = [
      { asset: 'thermostat-1', site: 'Line 1', max: 24.5 },
      { asset: 'thermostat-2', site: 'Line "2"\nnorth', max: null },
    ]
    const written = nextMessage(helper.getNode('out1'))
    helper.getNode('set').receive({ payload: records })
    assert.equal((await written).applied, true)
    const client = new StateStoreClient({ brokerUrl: store.url, clientId: 'ndjson-reader' })
    try {
      await client.ready({ timeoutMs: 5000 })
      const lines = (await client.get('dataset/assets')).value!.toString('utf8').split('\n')
      assert.deepEqual(lines, [JSON.stringify(records[0]), JSON.stringify(records[1]), ''], 'one object per line')
    } finally {
      await client.close()
    }
    const read = nextMessage(helper.getNode('got'))
    helper.getNode('get').receive({})
    assert.deepEqual((await read).payload, records)

    // Not a dataset: the msg fails with a code and nothing is written.
    for (const payload of [{ asset: 'x' }, [{ ok: 1 }, 'text']]) {
      const caught = nextMessage(helper.getNode('caught'))
      helper.getNode('set').receive({ payload })
      assert.equal(((await caught).error as { code: string }).code, 'DatasetInvalid')
    }
    const still = nextMessage(helper.getNode('got'))
    helper.getNode('get').receive({})
    assert.deepEqual((await still).payload, records)
  })

  it('fails an NDJSON read of a value that is not NDJSON, with the msg intact', async () => {
    await failedRead('ndjson', 'plain text', 'ValueNotNdjson')
  })

  /** Stores `stored`, reads it back with `decode`: Catch gets the code, with the msg as sent. */
  async function failedRead(decode: string, stored: string, code: string): Promise<void> {
    await helper.load(ALL, roundTripFlow(store.url, decode))
    const written = nextMessage(helper.getNode('out1'))
    helper.getNode('set').receive({ payload: stored })
    await written
    const caught = nextMessage(helper.getNode('caught'))
    helper.getNode('get').receive({ payload: 'keep me' })
    const c = await caught
    assert.equal(c.payload, 'keep me')
    assert.equal((c.error as { code: string }).code, code)
  }
})

import assert from 'node:assert/strict'
import { settleEach } from '../../../src/lang/bounded'
import { ALL, COMMON, flowWith, helper, lastStatus, listen, nextMessage, onTab, useStore, withClient } from './support'

type Msg = Record<string, unknown>
type Caught = Msg & { error: { code: string; message: string } }

/** Collects `n` msgs from a helper node (in any order) into a map by msg.key. */
async function byKey(id: string, n: number): Promise<Map<string, Msg>> {
  const out = new Map<string, Msg>()
  for (let i = 0; i < n; i++) {
    const m = await nextMessage(helper.getNode(id))
    out.set(String(m.key), m)
  }
  return out
}

describe('nodes: several keys in one msg', function () {
  const store = useStore()

  it('get key reads an array of keys into one msg: values, versions, and a missing key as not found', async () => {
    const versions = await withClient(store.url, async (c) => ({
      a: (await c.set('mk/a', JSON.stringify({ n: 1 }))).version.toString(),
      b: (await c.set('mk/b', 'two')).version.toString(),
    }))
    await helper.load(ALL, flowWith(store.url, { id: 'get', type: 'ss-get', key: 'topic', keyType: 'msg' }))
    const read = nextMessage(helper.getNode('out1'))
    helper
      .getNode('get')
      .receive({ topic: ['mk/a', 'mk/b', 'mk/missing'], extra: 1, errors: { 'from/an/earlier/node': {} } })
    const r = await read
    assert.deepEqual(r.payload, { 'mk/a': { n: 1 }, 'mk/b': 'two' })
    assert.deepEqual(r.found, { 'mk/a': true, 'mk/b': true, 'mk/missing': false })
    assert.deepEqual(r.version, { 'mk/a': versions.a, 'mk/b': versions.b })
    assert.deepEqual(r.key, ['mk/a', 'mk/b', 'mk/missing'])
    assert.equal(r.extra, 1)
    assert.equal(r.errors, undefined, 'no key failed here: an earlier node’s msg.errors does not stay')
    assert.equal(lastStatus(helper.getNode('get')).text, `${COMMON}status.found 2/3`)
  })

  it('get key sends one msg per key when set so, the missing one to the not-found output', async () => {
    await withClient(store.url, async (c) => {
      await c.set('pk/a', '1')
      await c.set('pk/b', '2')
    })
    await helper.load(
      ALL,
      flowWith(
        store.url,
        { id: 'get', type: 'ss-get', key: 'topic', keyType: 'msg', sendAs: 'key', notFound: 'output', outputs: 2 },
        2,
      ),
    )
    listen(helper.getNode('out1'), helper.getNode('out2'))
    helper.getNode('get').receive({ topic: ['pk/a', 'pk/b', 'pk/missing', 'pk/a'] })
    const found = await byKey('out1', 2)
    assert.deepEqual([...found.keys()].sort(), ['pk/a', 'pk/b'], 'a key named twice is read once')
    assert.equal(found.get('pk/a')!.payload, 1)
    assert.equal(found.get('pk/b')!.found, true)
    const missing = await nextMessage(helper.getNode('out2'))
    assert.equal(missing.key, 'pk/missing')
    assert.equal(missing.found, false)
  })

  it('delete key deletes every key of the array and says which existed', async () => {
    await withClient(store.url, async (c) => {
      await c.set('dk/a', '1')
      await c.set('dk/b', '2')
    })
    await helper.load(ALL, flowWith(store.url, { id: 'del', type: 'ss-del', key: 'topic', keyType: 'msg' }))
    const out = nextMessage(helper.getNode('out1'))
    helper.getNode('del').receive({ topic: ['dk/a', 'dk/b', 'dk/missing'] })
    const r = await out
    assert.deepEqual(r.deleted, { 'dk/a': 1, 'dk/b': 1, 'dk/missing': 0 })
    await withClient(store.url, async (c) => {
      assert.equal((await c.get('dk/a')).value, null)
      assert.equal((await c.get('dk/b')).value, null)
    })
  })

  it('set key writes each property of an object to its key, with the node’s condition', async () => {
    await helper.load(ALL, flowWith(store.url, { id: 'set', type: 'ss-set', multi: 'object', condition: 'NX' }))
    const out = nextMessage(helper.getNode('out1'))
    helper.getNode('set').receive({ payload: { 'sk/a': { x: 1 }, 'sk/b': 'text', 'sk/c': Buffer.from([0, 255]) } })
    const r = await out
    assert.deepEqual(r.applied, { 'sk/a': true, 'sk/b': true, 'sk/c': true })
    assert.deepEqual(Object.keys(r.version as object).sort(), ['sk/a', 'sk/b', 'sk/c'])
    await withClient(store.url, async (c) => {
      assert.equal((await c.get('sk/a')).value!.toString(), '{"x":1}')
      assert.equal((await c.get('sk/b')).value!.toString(), 'text')
      assert.deepEqual((await c.get('sk/c')).value, Buffer.from([0, 255]))
    })
    const again = nextMessage(helper.getNode('out1'))
    helper.getNode('set').receive({ payload: { 'sk/a': 2, 'sk/new': 3 } })
    assert.deepEqual((await again).applied, { 'sk/a': false, 'sk/new': true }, 'NX applies key by key')
  })

  it('set and delete key send one msg per key when set so: a set not applied to the second output', async () => {
    await withClient(store.url, (c) => c.set('ek/taken', 'old'))
    await helper.load(ALL, [
      ...flowWith(
        store.url,
        {
          id: 'set',
          type: 'ss-set',
          multi: 'object',
          condition: 'NX',
          sendAs: 'key',
          notApplied: 'output',
          outputs: 2,
        },
        2,
      ),
      onTab({
        id: 'del',
        type: 'ss-del',
        store: 'cfg',
        key: 'topic',
        keyType: 'msg',
        sendAs: 'key',
        wires: [['delOut']],
      }),
      onTab({ id: 'delOut', type: 'helper' }),
    ])
    listen(helper.getNode('out1'), helper.getNode('out2'), helper.getNode('delOut'))
    helper.getNode('set').receive({ payload: { 'ek/new': 1, 'ek/taken': 2 } })
    const applied = await nextMessage(helper.getNode('out1'))
    assert.deepEqual([applied.key, applied.payload, applied.applied], ['ek/new', 1, true])
    const refused = await nextMessage(helper.getNode('out2'))
    assert.deepEqual([refused.key, refused.payload, refused.applied], ['ek/taken', 2, false])
    helper.getNode('del').receive({ topic: ['ek/new', 'ek/none'] })
    const deleted = await byKey('delOut', 2)
    assert.equal(deleted.get('ek/new')!.deleted, 1)
    assert.equal(deleted.get('ek/none')!.deleted, 0)
  })

  it('a key that fails is named, and the others’ results are kept: in the one msg, or in their own msgs', async () => {
    await withClient(store.url, async (c) => {
      await c.set('fk/good', '{"ok":true}')
      await c.set('fk/bad', 'not json')
    })
    await helper.load(ALL, [
      ...flowWith(store.url, { id: 'get', type: 'ss-get', key: 'topic', keyType: 'msg', decode: 'json' }),
      onTab({
        id: 'each',
        type: 'ss-get',
        store: 'cfg',
        key: 'topic',
        keyType: 'msg',
        decode: 'json',
        sendAs: 'key',
        wires: [['eachOut']],
      }),
      onTab({ id: 'eachOut', type: 'helper' }),
    ])
    listen(helper.getNode('out1'), helper.getNode('caught'), helper.getNode('eachOut'))
    helper.getNode('get').receive({ topic: ['fk/good', 'fk/bad'] })
    const r = await nextMessage(helper.getNode('out1'))
    assert.deepEqual(r.payload, { 'fk/good': { ok: true } })
    assert.deepEqual(Object.keys(r.errors as object), ['fk/bad'])
    assert.equal((r.errors as Record<string, { code: string }>)['fk/bad']!.code, 'ValueNotJson')
    const caught = (await nextMessage(helper.getNode('caught'))) as Caught
    assert.equal(caught.error.code, 'ValueNotJson')
    assert.equal(
      caught.error.message,
      `${COMMON}errors.keyFailed`,
      'the message names the key (see test/unit/key-list.test.ts)',
    )
    assert.equal(lastStatus(helper.getNode('get')).text, `node-red:common.status.error: ${COMMON}failure.ValueNotJson`)

    helper.getNode('each').receive({ topic: ['fk/bad', 'fk/good'] })
    const good = await nextMessage(helper.getNode('eachOut'))
    assert.equal(good.key, 'fk/good')
    const own = (await nextMessage(helper.getNode('caught'))) as Caught
    assert.equal(own.key, 'fk/bad', 'Catch gets the failed key’s own msg')
    assert.equal(own.error.code, 'ValueNotJson')
  })

  it('refuses a bad key list before sending anything: an entry that is not a key, more keys than the limit, a set value that is not an object', async () => {
    await helper.load(ALL, [
      ...flowWith(store.url, { id: 'get', type: 'ss-get', key: 'topic', keyType: 'msg', maxKeys: '2' }),
      onTab({ id: 'set', type: 'ss-set', store: 'cfg', multi: 'object', wires: [['out1']] }),
    ])
    listen(helper.getNode('out1'), helper.getNode('caught'))
    const cases: Array<[string, Msg, string, string]> = [
      ['get', { topic: ['ok', 5] }, 'KeyNotString', 'keyInList'],
      ['get', { topic: ['a', 'b', 'c'] }, 'TooManyKeys', 'tooManyKeys'],
      ['set', { payload: 'one value' }, 'KeyValuesInvalid', 'keyValues'],
    ]
    for (const [id, msg, code, text] of cases) {
      helper.getNode(id).receive(msg)
      const c = (await nextMessage(helper.getNode('caught'))) as Caught
      assert.equal(c.error.code, code)
      assert.equal(c.error.message, `${COMMON}errors.${text}`)
    }
    helper.getNode('get').receive({ topic: [] })
    const empty = await nextMessage(helper.getNode('out1'))
    assert.deepEqual(empty.payload, {}, 'nothing was sent for the refused msgs; an empty list reads nothing')
  })
})

describe('nodes: get key by pattern with values', function () {
  this.timeout(60_000)
  const store = useStore()

  it('reads 10,000 keys one msg per page: every key once, with its value, and the last page says complete', async () => {
    const keys = Array.from({ length: 10_000 }, (_, i) => `big/${String(i).padStart(5, '0')}`)
    await withClient(store.url, async (c) => {
      const outcomes = await settleEach(keys, 64, (k) => c.set(k, `v-${k}`))
      assert.ok(outcomes.every((o) => o.ok))
      await c.set('other/x', 'not matched')
    })
    await helper.load(
      ALL,
      flowWith(store.url, {
        id: 'get',
        type: 'ss-get',
        key: 'big/*',
        keyType: 'str',
        mode: 'values',
        sendAs: 'page',
        decode: 'utf8',
        inFlight: '16',
      }),
    )
    listen(helper.getNode('out1'))
    helper.getNode('get').receive({ payload: 'go' })
    const seen = new Map<string, unknown>()
    let pages = 0
    for (;;) {
      const page = await nextMessage(helper.getNode('out1'), 30_000)
      assert.equal(page.page, pages++)
      for (const [k, v] of Object.entries(page.payload as Record<string, unknown>)) {
        assert.ok(!seen.has(k), `${k} comes once`)
        seen.set(k, v)
      }
      assert.deepEqual(Object.keys(page.version as object).sort(), Object.keys(page.payload as object).sort())
      if (page.complete === true) break
    }
    assert.ok(pages > 1, 'more than one page')
    assert.equal(seen.size, keys.length)
    for (const k of keys) assert.equal(seen.get(k), `v-${k}`)
    assert.equal(lastStatus(helper.getNode('get')).text, `${COMMON}status.read 10000`)
  })

  it('gathers all in one msg up to the limit, and fails past it with TooManyKeys', async () => {
    await withClient(store.url, async (c) => {
      for (const k of ['pat/a', 'pat/b', 'pat/c']) await c.set(k, k.toUpperCase())
    })
    await helper.load(ALL, [
      ...flowWith(store.url, {
        id: 'get',
        type: 'ss-get',
        key: 'topic',
        keyType: 'msg',
        mode: 'values',
        decode: 'utf8',
        maxKeys: '3',
      }),
      onTab({
        id: 'each',
        type: 'ss-get',
        store: 'cfg',
        key: 'pat/*',
        keyType: 'str',
        mode: 'values',
        sendAs: 'key',
        decode: 'utf8',
        wires: [['eachOut']],
      }),
      onTab({ id: 'eachOut', type: 'helper' }),
    ])
    listen(helper.getNode('out1'), helper.getNode('caught'), helper.getNode('eachOut'))
    helper.getNode('get').receive({ topic: 'pat/*' })
    const all = await nextMessage(helper.getNode('out1'))
    assert.deepEqual(all.payload, { 'pat/a': 'PAT/A', 'pat/b': 'PAT/B', 'pat/c': 'PAT/C' })
    assert.deepEqual(all.key, ['pat/a', 'pat/b', 'pat/c'])
    await withClient(store.url, (c) => c.set('pat/d', 'PAT/D'))
    helper.getNode('get').receive({ topic: 'pat/*' })
    const c = (await nextMessage(helper.getNode('caught'))) as Caught
    assert.equal(c.error.code, 'TooManyKeys')

    helper.getNode('each').receive({})
    const each = await byKey('eachOut', 4)
    assert.deepEqual([...each.keys()].sort(), ['pat/a', 'pat/b', 'pat/c', 'pat/d'])
    assert.equal(each.get('pat/d')!.payload, 'PAT/D')
  })
})

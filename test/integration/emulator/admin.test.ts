import assert from 'node:assert/strict'
import fc from 'fast-check'
import { HybridLogicalClock } from '../../../src/hlc'
import { adminFor, startEmulator } from '../../../src/emulator'
import { EmulatorAdmin, MAX_PAGE_KEY_BYTES, WINDOW_PAGES } from '../../../src/emulator/admin/key-browser'
import { Keyspace } from '../../../src/emulator/core/keyspace'

function filled(n: number, prefix = 'k'): Keyspace {
  const store = new Keyspace({ clock: new HybridLogicalClock() })
  // Inserted in a shuffled order, so byte order is the admin's doing, not the map's.
  const order = Array.from({ length: n }, (_, i) => i)
  for (let i = n - 1; i > 0; i--) {
    const j = (i * 7919) % (i + 1)
    ;[order[i], order[j]] = [order[j]!, order[i]!]
  }
  for (const i of order) store.set(Buffer.from(`${prefix}${String(i).padStart(6, '0')}`), Buffer.from(`v${i}`))
  return store
}

describe('emulator admin channel: key browser', () => {
  it('pages through every key in byte order, each key once', async () => {
    const admin = new EmulatorAdmin(filled(2500))
    const seen: string[] = []
    let after: string | undefined
    for (;;) {
      const page = await admin.listKeys({ limit: 400, ...(after ? { after } : {}) })
      assert.equal(page.total, 2500)
      assert.equal(page.matching, 2500)
      seen.push(...page.keys.map((k) => k.key!))
      if (!page.next) break
      after = page.next
    }
    assert.equal(seen.length, 2500)
    assert.deepEqual(seen, [...seen].sort())
    assert.equal(new Set(seen).size, 2500)
    assert.equal(seen[0], 'k000000')
  })

  it('filters with a glob and counts the matches', async () => {
    const admin = new EmulatorAdmin(filled(3000))
    const page = await admin.listKeys({ pattern: 'k0012?0', limit: 5 })
    assert.deepEqual(
      page.keys.map((k) => k.key),
      ['k001200', 'k001210', 'k001220', 'k001230', 'k001240'],
    )
    assert.equal(page.matching, 10)
    assert.equal(page.next, Buffer.from('k001240').toString('hex'))
    const rest = await admin.listKeys({ pattern: 'k0012?0', limit: 5, after: page.next })
    assert.deepEqual(
      rest.keys.map((k) => k.key),
      ['k001250', 'k001260', 'k001270', 'k001280', 'k001290'],
    )
    assert.equal(rest.next, null)
    assert.equal((await admin.listKeys({ pattern: 'nothing*' })).keys.length, 0)
  })

  it('pages through a quiet store from one pass per WINDOW_PAGES pages, each key once in byte order', async () => {
    const store = filled(2500)
    let passes = 0
    const ids = store.ids.bind(store)
    store.ids = () => {
      passes++
      return ids()
    }
    const admin = new EmulatorAdmin(store)
    const seen: string[] = []
    let after: string | undefined
    do {
      const page = await admin.listKeys({ limit: 10, ...(after ? { after } : {}) })
      seen.push(...page.keys.map((k) => k.key!))
      after = page.next ?? undefined
    } while (after)
    assert.deepEqual(seen, [...seen].sort())
    assert.equal(new Set(seen).size, 2500)
    assert.equal(passes, Math.ceil(2500 / (10 * WINDOW_PAGES)))
  })

  it('makes a new pass after a change, so that pages stay right while keys change', async () => {
    const store = filled(300)
    const admin = new EmulatorAdmin(store)
    const first = await admin.listKeys({ limit: 100 })
    store.set(Buffer.from('k000150x'), Buffer.from('new'))
    store.del(Buffer.from('k000200'))
    const seen = first.keys.map((k) => k.key!)
    let after = first.next ?? undefined
    while (after) {
      const page = await admin.listKeys({ limit: 100, after })
      seen.push(...page.keys.map((k) => k.key!))
      after = page.next ?? undefined
    }
    assert.ok(seen.includes('k000150x'), 'a key added after the first page is listed')
    assert.ok(!seen.includes('k000200'), 'a key deleted after the first page is not')
    assert.equal(seen.length, 300)
    assert.deepEqual(seen, [...seen].sort())
  })

  it('pages through any keys, in any page size, to the sorted keys', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.uint8Array({ minLength: 1, maxLength: 4 }), {
          maxLength: 300,
          selector: (k) => Buffer.from(k).toString('hex'),
        }),
        fc.integer({ min: 1, max: 7 }),
        async (keys, limit) => {
          const store = new Keyspace({ clock: new HybridLogicalClock() })
          for (const k of keys) store.set(Buffer.from(k), Buffer.from('v'))
          const admin = new EmulatorAdmin(store, { stepMs: 0 })
          const seen: string[] = []
          let after: string | undefined
          do {
            const page = await admin.listKeys({ limit, ...(after ? { after } : {}) })
            seen.push(...page.keys.map((k) => k.keyHex))
            after = page.next ?? undefined
          } while (after)
          const expected = keys
            .map((k) => Buffer.from(k))
            .sort(Buffer.compare)
            .map((k) => k.toString('hex'))
          assert.deepEqual(seen, expected)
        },
      ),
      { numRuns: 100 },
    )
  })

  it('ends a page at its byte cap over long keys, and the next page goes on after it', async () => {
    const store = new Keyspace({ clock: new HybridLogicalClock() })
    for (let i = 0; i < 40; i++)
      store.set(Buffer.from(`${String(i).padStart(2, '0')}${'k'.repeat(8190)}`), Buffer.from('v'))
    const admin = new EmulatorAdmin(store)
    const first = await admin.listKeys({ limit: 100 })
    assert.equal(first.keys.length, MAX_PAGE_KEY_BYTES / 8192)
    assert.ok(first.next)
    const rest = await admin.listKeys({ limit: 100, after: first.next })
    assert.equal(first.keys.length + rest.keys.length, 40)
    assert.equal(rest.next, null)
    assert.equal(rest.keys[0]!.key!.slice(0, 2), String(first.keys.length).padStart(2, '0'))
  })

  it('reports size, version, expiry, fencing token and persistence; binary keys by hex', async () => {
    const clock = new HybridLogicalClock()
    const store = new Keyspace({ clock })
    store.set(Buffer.from('plain'), Buffer.from('12345'))
    const fence = clock.tick()
    store.set(Buffer.from('fenced'), Buffer.from('x'), { fencingToken: fence, expiryMs: 60_000, persist: true })
    store.set(Buffer.from([0xff, 0x00, 0x01]), Buffer.from('bin'))
    const admin = new EmulatorAdmin(store)
    const { keys } = await admin.listKeys()
    assert.deepEqual(
      keys.map((k) => k.key),
      ['fenced', 'plain', null],
    )
    const [fenced, plain, binary] = keys
    assert.equal(plain!.size, 5)
    assert.equal(plain!.expiresAt, null)
    assert.equal(plain!.fencingToken, null)
    assert.equal(plain!.persisted, false)
    assert.equal(fenced!.fencingToken, fence.toString())
    assert.ok(fenced!.expiresAt! > Date.now())
    assert.equal(fenced!.persisted, true)
    assert.equal(binary!.keyHex, 'ff0001')
    const details = admin.inspect(Buffer.from('fenced'))
    assert.equal(details?.value.toString(), 'x')
    assert.equal(details?.version, store.get(Buffer.from('fenced'))!.version.toString())
    assert.equal(admin.inspect(Buffer.from('missing')), null)
  })

  it('lets the event loop run while it scans a large store', async () => {
    // Steps of 0 ms: whether the scan yields no longer depends on how fast this machine is.
    const admin = new EmulatorAdmin(filled(100_000), { stepMs: 0 })
    let others = 0
    const other = (): void => {
      others += 1
      if (others < 3) setImmediate(other)
    }
    setImmediate(other)
    const page = await admin.listKeys({ pattern: '*9', limit: 3 })
    assert.deepEqual(
      page.keys.map((k) => k.key),
      ['k000009', 'k000019', 'k000029'],
    )
    assert.equal(page.matching, 10_000)
    assert.ok(others === 3, 'other callbacks ran during the scan, between its steps')
  })

  it('is off unless asked for, and found by broker URL when on', async () => {
    const off = await startEmulator({ listen: { host: '127.0.0.1', port: 0 } })
    const on = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, admin: true })
    try {
      assert.equal(off.admin, null)
      assert.equal(adminFor(off.brokerUrl), null)
      assert.ok(on.admin)
      assert.equal(adminFor(on.brokerUrl), on.admin)
      assert.equal(adminFor(on.brokerUrl.replace('127.0.0.1', 'localhost')), on.admin)
    } finally {
      await off.stop()
      await on.stop()
    }
    assert.equal(adminFor(on.brokerUrl), null)
  })
})

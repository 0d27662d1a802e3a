import assert from 'node:assert/strict'
import { Hlc, HybridLogicalClock } from '../../../src/hlc'
import { Keyspace, type KeyChange, type StoredRecord } from '../../../src/emulator/core/keyspace'

// The store keeps small values as latin1 strings and versions as numbers (for memory); these check
// that what comes back out is exactly what went in, on both sides of the size threshold.

const stores: Keyspace[] = []

function setup() {
  const clock = new HybridLogicalClock({ nodeId: 'svc' })
  const changes: KeyChange[] = []
  const store = new Keyspace({ clock, onChange: (c) => changes.push(c) })
  stores.push(store)
  return { store, changes }
}

const b = (s: string) => Buffer.from(s)

/** Bytes of every value 0..255, repeated to `length`, offset so neighbouring lengths differ. */
function bytes(length: number, seed = 0): Buffer {
  const out = Buffer.allocUnsafe(length)
  for (let i = 0; i < length; i++) out[i] = (i * 131 + seed) & 0xff
  return out
}

const LENGTHS = [0, 1, 100, 255, 256, 4095, 4096, 4097, 70_000]

describe('emulator keyspace: compact records', () => {
  afterEach(() => {
    for (const store of stores.splice(0)) store.close()
  })

  it('returns every byte of a value exactly, below and above the string threshold, from get, entries and the change report', () => {
    const { store, changes } = setup()
    for (const length of LENGTHS) {
      const value = bytes(length, length)
      // Handed over as a view into a larger read, as the service gets it.
      const read = Buffer.concat([Buffer.alloc(7, 0xee), value, Buffer.alloc(5, 0xdd)])
      const view = read.subarray(7, 7 + length)
      assert.equal(store.set(b(`k${length}`), view).kind, 'applied')
      read.fill(0x55)
      assert.deepEqual(store.get(b(`k${length}`))!.value, value, `get, ${length} bytes`)
      const change = changes.at(-1)!
      assert.ok(change.kind === 'set')
      assert.deepEqual(change.record.value, value, `change report, ${length} bytes`)
    }
    const all = new Map([...store.entries()].map(([k, r]) => [k.toString(), r.value]))
    for (const length of LENGTHS)
      assert.deepEqual(all.get(`k${length}`), bytes(length, length), `entries, ${length} bytes`)
  })

  it("a Buffer read from a small value is the reader's own: writing to it does not change the store", () => {
    const { store } = setup()
    store.set(b('k'), b('original'))
    store.get(b('k'))!.value.fill(0x21)
    assert.equal(store.get(b('k'))!.value.toString(), 'original')
  })

  it('compares values byte for byte for SET NEX and VDEL, on both sides of the threshold', () => {
    const { store } = setup()
    for (const length of [1, 100, 4095, 4096, 9000]) {
      const key = b(`c${length}`)
      const value = bytes(length, 3)
      store.set(key, value)
      const other = Buffer.from(value)
      other[length - 1] = other[length - 1]! ^ 0x80 // differs only in the high bit of the last byte
      const shorter = value.subarray(0, length - 1)
      assert.equal(store.set(key, other, { condition: 'NEX' }).kind, 'notApplied', `NEX, one byte differs, ${length}`)
      assert.equal(store.set(key, shorter, { condition: 'NEX' }).kind, 'notApplied', `NEX, shorter, ${length}`)
      assert.equal(store.vdel(key, other).kind, 'mismatch', `VDEL, one byte differs, ${length}`)
      assert.equal(store.set(key, Buffer.from(value), { condition: 'NEX' }).kind, 'applied', `NEX, equal, ${length}`)
      assert.equal(store.vdel(key, Buffer.from(value)).kind, 'deleted', `VDEL, equal, ${length}`)
    }
  })

  it('gives back each minted version exactly, from the outcome, get and the change report', () => {
    const { store, changes } = setup()
    for (let i = 0; i < 20; i++) {
      const outcome = store.set(b(`v${i % 3}`), b(String(i)), i % 2 === 0 ? {} : { expiryMs: 60_000 })
      assert.ok(outcome.kind === 'applied')
      const record = store.get(b(`v${i % 3}`))!
      assert.equal(record.version.toString(), outcome.version.toString())
      assert.equal(Hlc.compare(record.version, outcome.version), 0)
      const change = changes.at(-1)!
      assert.ok(change.kind === 'set')
      assert.equal(change.record.version.toString(), outcome.version.toString())
      assert.equal(record.version.nodeId, 'svc')
    }
  })

  it('keeps restored records exactly: any node id, with and without fencing token, expiry and persistence flag', () => {
    const { store } = setup()
    const far = Date.now() + 3_600_000
    const restored: Array<[string, StoredRecord]> = [
      [
        'plain-a',
        {
          value: b('1'),
          version: new Hlc(1_700_000_000_000, 0, 'node-a'),
          fencingToken: null,
          expiresAt: 0,
          persisted: true,
        },
      ],
      [
        'plain-b',
        {
          value: bytes(5000),
          version: new Hlc(1_700_000_000_001, 7, 'node-b'),
          fencingToken: null,
          expiresAt: 0,
          persisted: true,
        },
      ],
      [
        'plain-a2',
        {
          value: b('2'),
          version: new Hlc(1_700_000_000_002, 99_999, 'node-a'),
          fencingToken: null,
          expiresAt: 0,
          persisted: false,
        },
      ],
      [
        'own-id',
        {
          value: b('3'),
          version: new Hlc(1_600_000_000_000, 2, 'svc'),
          fencingToken: null,
          expiresAt: 0,
          persisted: true,
        },
      ],
      [
        'fenced',
        {
          value: b('4'),
          version: new Hlc(1_700_000_000_003, 1, 'node-a'),
          fencingToken: new Hlc(5, 3, 'client'),
          expiresAt: 0,
          persisted: true,
        },
      ],
      [
        'expiring',
        {
          value: b('5'),
          version: new Hlc(1_700_000_000_004, 0, 'node-c'),
          fencingToken: null,
          expiresAt: far,
          persisted: false,
        },
      ],
      [
        'big-counter',
        {
          value: b('6'),
          version: new Hlc(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, 'node-a'),
          fencingToken: null,
          expiresAt: 0,
          persisted: true,
        },
      ],
    ]
    for (const [key, record] of restored) store.load(b(key), record)
    const expected = (r: StoredRecord) => ({
      value: r.value.toString('hex'),
      version: r.version.toString(),
      nodeId: r.version.nodeId,
      fencingToken: r.fencingToken?.toString() ?? null,
      expiresAt: r.expiresAt,
      persisted: r.persisted,
    })
    for (const [key, record] of restored) assert.deepEqual(expected(store.get(b(key))!), expected(record), key)
    const snapshot = new Map([...store.entries()].map(([k, r]) => [k.toString(), expected(r)]))
    for (const [key, record] of restored) assert.deepEqual(snapshot.get(key), expected(record), `entries: ${key}`)
    // A new SET over a restored key takes a version of this service's clock and keeps the token.
    const outcome = store.set(b('fenced'), b('7'), { fencingToken: new Hlc(6, 0, 'client') })
    assert.ok(outcome.kind === 'applied')
    assert.equal(store.get(b('fenced'))!.version.nodeId, 'svc')
    assert.equal(store.get(b('fenced'))!.fencingToken!.toString(), new Hlc(6, 0, 'client').toString())
  })
})

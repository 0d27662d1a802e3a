// The same scenarios run against Node-RED's own memory and localfilesystem stores (with and without
// its cache) and against this store (with and without its cache), asserting the same results.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Backend, call, contextStore, memoryStore, uniquePrefix, type NodeRedStore, type TestStore } from './support'

// eslint-disable-next-line @typescript-eslint/no-require-imports
const localFileSystem = require('@node-red/runtime/lib/nodes/context/localfilesystem') as (
  config: object,
) => NodeRedStore

interface Subject {
  name: string
  /** Answers synchronously (a cache): compared with memory; otherwise with localfilesystem without its cache. */
  cached: boolean
  /** A new store on the same storage as the last one (a restart). */
  open(): Promise<NodeRedStore>
}

type Values = unknown[]

const SCOPE = 'n1:f1'
/** Several keys, nested paths, arrays, a deletion inside a value, quoted keys. */
const WRITES: Array<[string | string[], unknown]> = [
  ['a', 1],
  [
    ['b.c', 'b.d[1]', 'e'],
    ['x', true, { f: [1, 2] }],
  ],
  ['"quoted key".h', 5],
  ['arr', [1, 2, 3]],
  ['arr[1]', undefined],
  ['a.x', 7],
  ['gone', 'soon'],
  ['gone', undefined],
]
const READS = [
  'a',
  'b',
  'b.c',
  'b.d',
  'b.missing.deeper',
  'e.f[1]',
  '"quoted key"',
  '"quoted key".h',
  'arr',
  'gone',
  'nope',
]
const BAD = [' ', 'a b', '.a', 'a.', 'a[', 'a[x]', "a['']"]

describe('context store: the same scenarios as Node-RED’s memory and localfilesystem stores', function () {
  this.timeout(60_000)
  let backend: Backend
  const dirs: string[] = []
  const toClose: NodeRedStore[] = []

  before(async function () {
    backend = await Backend.start(this)
  })
  after(async () => {
    await backend?.stop()
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
  })
  afterEach(async () => {
    await Promise.all(toClose.splice(0).map((s) => s.close()))
  })

  function subjects(): Subject[] {
    const lfs = (cache: boolean): Subject => {
      const dir = mkdtempSync(join(tmpdir(), 'ctx-parity-'))
      dirs.push(dir)
      return {
        name: `localfilesystem${cache ? '' : ' (cache: false)'}`,
        cached: cache,
        open: async () => {
          const store = localFileSystem({ dir, base: 'context', cache, settings: { userDir: dir } })
          await store.open()
          toClose.push(store)
          return store
        },
      }
    }
    const ours = (cache: boolean): Subject => {
      const prefix = uniquePrefix()
      return {
        name: `state store${cache ? '' : ' (cache: false)'}`,
        cached: cache,
        open: async () => {
          const store: TestStore = contextStore({ broker: backend.url, prefix, cache })
          await store.open()
          toClose.push(store)
          return store
        },
      }
    }
    return [
      { name: 'memory', cached: true, open: async () => memoryStore({}) },
      lfs(true),
      lfs(false),
      ours(true),
      ours(false),
    ]
  }

  /** Runs `scenario` on every store; every answer must equal memory's (after JSON, as a stored value comes back). */
  async function same(scenario: (store: NodeRedStore, subject: Subject) => Promise<unknown>): Promise<void> {
    const results: Array<[string, unknown]> = []
    for (const subject of subjects()) results.push([subject.name, json(await scenario(await subject.open(), subject))])
    for (const [name, result] of results.slice(1))
      assert.deepEqual(result, results[0]![1], `${name} differs from memory`)
  }

  it('callback form: several keys at once and nested paths, then get (one key and several)', () =>
    same(async (store) => {
      // a copy each: the memory store keeps (and later changes) the very object it is given
      for (const [key, value] of WRITES) await call((cb) => store.set(SCOPE, key as string, structuredClone(value), cb))
      const one: Array<Values | { code: unknown }> = []
      for (const key of READS) one.push(await call((cb) => store.get(SCOPE, key, cb)))
      const several = await call((cb) => store.get(SCOPE, READS, cb))
      return { one, several }
    }))

  it('keys, delete and clean right after a set has called back', () =>
    same(async (store) => {
      await call((cb) => store.set(SCOPE, ['k1', 'k2'], [1, 2], cb))
      const [keys] = await call<[string[]]>((cb) => store.keys(SCOPE, cb))
      await call((cb) => store.set('n2:f1', 'fresh', 1, cb))
      await store.clean(['n1'])
      const [cleaned] = await call<[string[]]>((cb) => store.keys('n2:f1', cb))
      await call((cb) => store.set(SCOPE, 'k3', 3, cb))
      await store.delete(SCOPE)
      const [deleted] = await call<[string[]]>((cb) => store.keys(SCOPE, cb))
      // one key at a time: localfilesystem without its cache answers a missing scope with one value however many were asked
      const gone = [await call((cb) => store.get(SCOPE, 'k1', cb)), await call((cb) => store.get(SCOPE, 'k3', cb))]
      return { keys: keys.sort(), cleaned, deleted, gone }
    }))

  it('bad keys: an error with code INVALID_EXPR to the callback', () =>
    same(async (store) => {
      // the scope exists (localfilesystem without its cache answers a missing scope without looking at the key)
      await call((cb) => store.set(SCOPE, 'a', 1, cb))
      const codes: unknown[] = []
      for (const key of BAD) {
        codes.push(
          await call((cb) => store.set(SCOPE, key, 1, cb)).then(
            () => 'stored',
            (err: { code?: unknown }) => err.code,
          ),
        )
        codes.push(
          await call((cb) => store.get(SCOPE, key, cb)).then(
            () => 'read',
            (err: { code?: unknown }) => err.code,
          ),
        )
      }
      return codes
    }))

  it('a set without a callback of a bad key throws exactly where Node-RED’s store of the same kind throws', async () => {
    // memory and both cached stores throw; localfilesystem without its cache never throws from set
    for (const subject of subjects()) {
      const store = await subject.open()
      for (const key of BAD)
        assert.equal(
          throws(() => store.set(SCOPE, key, 'bar')),
          subject.cached,
          `${subject.name}: set(${JSON.stringify(key)}) throws: ${!subject.cached}`,
        )
    }
  })

  it('a callback that is not a function throws at once, from set, get and keys', async () => {
    for (const subject of subjects()) {
      const store = await subject.open()
      assert.ok(
        throws(() => store.set(SCOPE, 'a', 1, 'not a function' as never)),
        `${subject.name}: set`,
      )
      assert.ok(
        throws(() => store.get(SCOPE, 'a', 'not a function' as never)),
        `${subject.name}: get`,
      )
      if (subject.name !== 'memory')
        assert.ok(
          throws(() => store.keys(SCOPE, 'not a function' as never)),
          `${subject.name}: keys`,
        )
    }
    // nothing failed later either (an unhandled rejection would fail the run)
    await new Promise((resolve) => setTimeout(resolve, 200))
  })

  it('synchronous set and get of the cached stores', async () => {
    const answers: Array<[string, unknown]> = []
    for (const subject of subjects().filter((s) => s.cached)) {
      const store = await subject.open()
      for (const [key, value] of WRITES) store.set(SCOPE, key, structuredClone(value))
      answers.push([
        subject.name,
        { values: READS.map((k) => store.get(SCOPE, k)), keys: (store.keys(SCOPE) as string[]).sort() },
      ])
    }
    for (const [name, answer] of answers.slice(1)) assert.deepEqual(answer, answers[0]![1], name)
  })

  it('a circular reference: the property that refers back is left out of what is stored, the rest reads back', async () => {
    const stored: Array<[string, unknown]> = []
    for (const subject of subjects().filter((s) => s.name !== 'memory')) {
      const store = await subject.open()
      const loop: Record<string, unknown> = { name: 'loop', list: [1] }
      loop.self = loop
      ;(loop.list as unknown[]).push(loop)
      await call((cb) => store.set(SCOPE, 'loop', loop, cb))
      await store.close()
      const again = await subject.open()
      stored.push([subject.name, await call((cb) => again.get(SCOPE, 'loop', cb))])
    }
    for (const [name, value] of stored) assert.deepEqual(value, [{ name: 'loop', list: [1, null] }], name)
  })

  it('open, close and clean may be called twice (Node-RED does, for the default store)', async () => {
    for (const subject of subjects().filter((s) => s.name.startsWith('state store'))) {
      const store = await subject.open()
      await store.open()
      await call((cb) => store.set('n9:f9', 'x', 1, cb))
      await Promise.all([store.clean([]), store.clean([])])
      assert.deepEqual(await call((cb) => store.keys('n9:f9', cb as never)), [[]], subject.name)
      await store.close()
      await store.close()
    }
  })
})

function throws(fn: () => unknown): boolean {
  try {
    fn()
    return false
  } catch {
    return true
  }
}

/** What a value is once stored as JSON: an array hole reads as null; an undefined answer stays apart from null. */
function json(value: unknown): unknown {
  if (value === undefined) return undefined
  return JSON.parse(
    JSON.stringify(value, function (this: object, key: string, v: unknown) {
      return v === undefined && Object.hasOwn(this, key) ? '<undefined>' : v
    }),
  ) as unknown
}

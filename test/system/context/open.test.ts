import assert from 'node:assert/strict'
import { mock } from 'node:test'
import {
  StateStoreClient,
  type KeyNotification,
  type NotificationListener,
  type Observation,
} from '../../../src/client'
import { BUCKETS, bucketKey, bucketOf } from '../../../src/context/index-format'
import { LoadProgress } from '../../../src/context/load-progress'
import { Backend, contextStore, uniquePrefix, type TestStore } from './support'
import { until } from '../../support/wait'

/** Stores `count` keys under `prefix` (scope `global`, values `{"i":i}`) and their index, as a runtime would have. */
async function seed(client: StateStoreClient, prefix: string, count: number): Promise<void> {
  const buckets = new Map<number, string[]>()
  await Promise.all(
    Array.from({ length: count }, (_, i) => {
      const top = `k${i}`
      buckets.set(bucketOf('global', top), [...(buckets.get(bucketOf('global', top)) ?? []), top])
      return client.set(`${prefix}global/${top}`, JSON.stringify({ i }))
    }),
  )
  await Promise.all(
    [...buckets].map(([b, tops]) => client.set(bucketKey(prefix, b), JSON.stringify({ global: tops.sort() }))),
  )
}

describe('context store: opening', function () {
  this.timeout(30_000)
  let backend: Backend
  let client: StateStoreClient
  const opened: TestStore[] = []
  const restore: Array<() => void> = []

  before(async function () {
    backend = await Backend.start(this)
    client = new StateStoreClient({ brokerUrl: backend.url, clientId: `open-seed-${process.pid}` })
    await client.ready({ timeoutMs: 5000 })
  })
  after(async () => {
    await client?.close()
    await backend?.stop()
  })
  afterEach(async () => {
    for (const undo of restore.splice(0)) undo()
    await Promise.all(opened.splice(0).map((s) => s.close()))
  })

  /** Wraps a method of every client for this test; `afterEach` puts it back. */
  function around<K extends 'get' | 'observe'>(
    name: K,
    wrap: (original: StateStoreClient[K]) => StateStoreClient[K],
  ): void {
    const original = StateStoreClient.prototype[name]
    StateStoreClient.prototype[name] = wrap(original)
    restore.push(() => (StateStoreClient.prototype[name] = original))
  }

  it('sends one KEYNOTIFY and one GET per key, and for the index one KEYNOTIFY and a GET per index key: the registrations’ own reads load the values', async () => {
    const prefix = uniquePrefix()
    await seed(client, prefix, 1000)
    const calls = { observe: 0, gets: 0 }
    around(
      'observe',
      (original) =>
        function (this: StateStoreClient, ...args: Parameters<StateStoreClient['observe']>) {
          if (String(args[0]).startsWith(prefix)) calls.observe += 1
          return original.apply(this, args)
        },
    )
    around(
      'get',
      (original) =>
        function (this: StateStoreClient, ...args: Parameters<StateStoreClient['get']>) {
          if (String(args[0]).startsWith(prefix)) calls.gets += 1
          return original.apply(this, args)
        },
    )
    const store = contextStore({ broker: backend.url, prefix })
    opened.push(store)
    await store.open()
    // the delta and every key registered once (client.observe: a KEYNOTIFY, then a GET), the buckets read, and nothing read again
    assert.deepEqual(calls, { observe: 1 + 1000, gets: BUCKETS })
    // and the start says so in one line, not a line per registration
    assert.deepEqual(
      store.logs.filter((l) => l.level === 'info').map((l) => l.message),
      [
        `state store context ${prefix}: the context is loaded: 1000 key(s), 1001 registration(s) (the index's and one per key), ${BUCKETS + 1 + 1000} read(s)`,
      ],
    )
    assert.equal((store.keys('global') as string[]).length, 1000)
    assert.deepEqual(store.get('global', 'k999'), { i: 999 })
  })

  it('a change made after a key’s registration, before its read is used, is not lost to an older read', async () => {
    const prefix = uniquePrefix()
    await seed(client, prefix, 20)
    const target = `${prefix}global/k7`
    around(
      'observe',
      (original) =>
        async function (
          this: StateStoreClient,
          key: Parameters<StateStoreClient['observe']>[0],
          listener: NotificationListener,
          options?: Parameters<StateStoreClient['observe']>[2],
        ): Promise<Observation> {
          let heard: KeyNotification | null = null
          const observation = await original.call(this, key, (n) => ((heard = n), listener(n)), options)
          if (String(key) === target) {
            // someone else writes the key between our registration (answered, read) and the store's use of the read
            await client.set(target, JSON.stringify('changed'))
            await until(() => heard !== null, 'the notification to arrive')
            assert.deepEqual(
              observation.initial?.value?.toString(),
              JSON.stringify({ i: 7 }),
              'the read is older than the change',
            )
          }
          return observation
        },
    )
    const store = contextStore({ broker: backend.url, prefix })
    opened.push(store)
    await store.open()
    assert.equal(store.get('global', 'k7'), 'changed')
    assert.deepEqual(store.get('global', 'k6'), { i: 6 })
  })

  it('a synchronous read before the load has finished says how far it is and what a flow can do', async () => {
    const prefix = uniquePrefix()
    await seed(client, prefix, 50)
    let release: () => void = () => {}
    const gate = new Promise<void>((resolve) => (release = resolve))
    around(
      'observe',
      (original) =>
        async function (this: StateStoreClient, ...args: Parameters<StateStoreClient['observe']>) {
          if (String(args[0]) === `${prefix}global/k3`) await gate
          return original.apply(this, args)
        },
    )
    const store = contextStore({ broker: backend.url, prefix, requestTimeout: 5000 })
    opened.push(store)
    const opening = store.open()
    let thrown: (Error & { code?: string }) | undefined
    await until(() => {
      try {
        store.get('global', 'k1')
      } catch (err) {
        thrown = err as Error
      }
      return /49 of 50 keys read/.test(thrown?.message ?? '')
    }, 'the load to stall on one key')
    assert.equal(thrown?.code, 'CONTEXT_NOT_LOADED')
    assert.match(
      thrown.message,
      new RegExp(`state store context ${prefix}: not loaded yet: loading, 49 of 50 keys read`),
    )
    assert.match(thrown.message, /a get with a callback waits up to 5000 ms/)
    release()
    await opening
    assert.deepEqual(store.get('global', 'k3'), { i: 3 })
  })
})

describe('context store: load progress', () => {
  it('reports how far a load is at each interval while it runs, and nothing once stopped', () => {
    mock.timers.enable({ apis: ['setInterval'] })
    try {
      const reports: string[] = []
      const progress = new LoadProgress(3, (loaded, total) => reports.push(`${loaded}/${total}`), 1000)
      mock.timers.tick(999)
      progress.one()
      mock.timers.tick(1)
      progress.one()
      mock.timers.tick(1000)
      progress.stop()
      mock.timers.tick(5000)
      assert.deepEqual(reports, ['1/3', '2/3'])
      assert.deepEqual(progress.figures, { loaded: 2, total: 3 })
    } finally {
      mock.timers.reset()
    }
  })
})

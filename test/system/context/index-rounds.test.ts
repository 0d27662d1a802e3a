/**
 * The key index's lock round, interrupted at each of its steps: the lease's SET NX, the read of
 * the delta, the read of a key, the fenced write of the delta and the release, each with its answer
 * lost (executed, never answered), not executed at all, or with the lease taken over before it
 * goes (deleted, as an expiry or an emulator restart does, and another runtime's round run in
 * between). Whatever the fault, once it has passed: the stored index lists exactly the keys that
 * exist, a runtime that opens the store afterwards lists and loads every one, and the other
 * runtime's writes are not failed by what the interrupted round left behind.
 */
import assert from 'node:assert/strict'
import { StateStoreClient } from '../../../src/client'
import { TimeoutError } from '../../../src/diagnostics/errors'
import { TcpRelay } from '../../support/relay'
import { until } from '../../support/wait'
import { Backend, call, contextStore, readIndex, uniquePrefix, type TestStore } from './support'

type Step = 'acquire' | 'read-delta' | 'read-key' | 'write-delta' | 'release'
type Fault = 'answer lost' | 'not executed' | 'lease taken over'
type Verb = 'get' | 'set' | 'vdel'

const KEYS = ['a', 'b', 'c', 'd', 'z']

/** The client a context store made, to interrupt its requests, and its index (no API hands them out). */
function sessionOf(store: TestStore): { client: StateStoreClient; index: { busy: boolean } } {
  return (store.inner as unknown as { session: { client: StateStoreClient; index: { busy: boolean } } }).session
}

/**
 * Interrupts the first request of a lock round's `step` that `client` sends: the round's steps are
 * told apart by verb and key, a key's read by the lock being held.
 */
function interrupt(
  client: StateStoreClient,
  prefix: string,
  step: Step,
  fault: Fault,
  takeOver: () => Promise<void>,
): { fired: () => boolean } {
  let fired = false
  let locked = false
  const stepOf = (verb: Verb, key: string): Step | null => {
    if (verb === 'set' && key === `${prefix}#lock`) return 'acquire'
    if (verb === 'vdel' && key === `${prefix}#lock`) return 'release'
    if (verb === 'get' && key === `${prefix}#keys/delta`) return locked ? 'read-delta' : null
    if (verb === 'set' && key === `${prefix}#keys/delta`) return 'write-delta'
    if (verb === 'get' && key.startsWith(`${prefix}global/`)) return locked ? 'read-key' : null
    return null
  }
  for (const verb of ['get', 'set', 'vdel'] as const) {
    const real = (client[verb] as (...args: unknown[]) => Promise<unknown>).bind(client)
    ;(client as unknown as Record<Verb, (...args: unknown[]) => Promise<unknown>>)[verb] = async (
      ...args: unknown[]
    ) => {
      const key = String(args[0])
      const at = stepOf(verb, key)
      if (process.env.DEBUG_ROUNDS) console.log(verb, key, at, fired)
      let result: unknown
      if (fired || at !== step) result = await real(...args)
      else {
        fired = true
        if (fault === 'not executed') throw new TimeoutError(1000)
        if (fault === 'lease taken over') await takeOver()
        result = await real(...args)
        if (fault === 'answer lost') throw new TimeoutError(1000)
      }
      if (at === 'acquire' && (result as { applied: boolean }).applied) locked = true
      if (at === 'release') locked = false
      return result
    }
  }
  return { fired: () => fired }
}

describe('context index: a lock round interrupted at each of its steps', function () {
  this.timeout(60_000)
  let backend: Backend
  let reader: StateStoreClient
  const stores: TestStore[] = []

  before(async function () {
    backend = await Backend.start(this)
    reader = new StateStoreClient({ brokerUrl: backend.url, clientId: `index-rounds-reader-${process.pid}` })
    await reader.ready()
  })
  after(async () => {
    await reader?.close()
    await backend?.stop()
  })
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((s) => s.close()))
  })

  const cells: Array<[Step, Fault, boolean]> = []
  for (const step of ['acquire', 'read-delta', 'read-key', 'write-delta', 'release'] as const) {
    for (const fault of ['answer lost', 'not executed', 'lease taken over'] as const) {
      // A cached runtime reads no key it wrote itself: its key reads are those of a runtime without the cache.
      cells.push([step, fault, step !== 'read-key'])
    }
  }

  for (const [step, fault, cached] of cells) {
    it(`${step}, ${fault} (${cached ? 'with' : 'without'} the cache): the index lists exactly the keys that exist, for a runtime opened afterwards too`, async () => {
      const prefix = uniquePrefix()
      const open = (name: string, cache = true) => {
        const store = contextStore({
          broker: backend.url,
          prefix,
          clientId: `${name}-${process.pid}-${stores.length}`,
          requestTimeout: 1000,
          cache,
        })
        stores.push(store)
        return store
      }
      const c0 = open('c0', cached)
      const c1 = open('c1')
      await Promise.all([c0.open(), c1.open()])
      await call((cb) => c1.set('global', 'a', 1, cb))
      await call((cb) => c0.set('global', 'z', 1, cb))
      // the next change starts a lock round of its own
      await until(() => !sessionOf(c0).index.busy, "c0's lock round to end")

      const takeOver = async () => {
        await reader.del(`${prefix}#lock`) // as the lease's expiry, or an emulator restart, would
        await call((cb) => c1.set('global', 'c', 3, cb))
      }
      const armed = interrupt(sessionOf(c0).client, prefix, step, fault, takeOver)
      // c0 adds b and deletes z in one round; its callbacks may fail (the outcome is then unknown)
      await Promise.allSettled([
        call((cb) => c0.set('global', 'b', 2, cb)),
        call((cb) => c0.set('global', 'z', undefined, cb)),
      ])
      await until(() => armed.fired(), `the round's ${step} to be interrupted`)
      // the other runtime is not held up by what the interrupted round left behind
      await call((cb) => c1.set('global', 'd', 4, cb))

      const existing = async () => {
        const found: string[] = []
        for (const key of KEYS) if ((await reader.get(`${prefix}global/${key}`)).value !== null) found.push(key)
        return found
      }
      let last: { index: string[]; keys: string[] } = { index: [], keys: [] }
      await until(
        async () => {
          last = { index: (await readIndex(reader, prefix)).global ?? [], keys: await existing() }
          return JSON.stringify(last.index) === JSON.stringify(last.keys)
        },
        `the stored index to list exactly the keys that exist (last: index ${JSON.stringify(last.index)}, keys ${JSON.stringify(last.keys)})`,
        20_000,
      )
      const keys = await existing()
      assert.ok(keys.includes('b') && keys.includes('d') && !keys.includes('z') && keys.includes('a'))
      const later = open('c2')
      await later.open()
      assert.deepEqual(((later.keys('global') as string[]) ?? []).sort(), keys)
      for (const key of keys)
        assert.notEqual(later.get('global', key), undefined, `the runtime opened afterwards loads ${key}`)
    })
  }

  it('a runtime that missed the delta notifications and gets its own write back by a reconcile lists what the stored delta says', async () => {
    const prefix = uniquePrefix()
    const relay = await TcpRelay.start(backend.url)
    try {
      const c0 = contextStore({ broker: relay.url, prefix, clientId: `c0-${process.pid}-missed`, requestTimeout: 1000 })
      const c1 = contextStore({
        broker: backend.url,
        prefix,
        clientId: `c1-${process.pid}-missed`,
        requestTimeout: 1000,
      })
      stores.push(c0, c1)
      await Promise.all([c0.open(), c1.open()])
      await call((cb) => c1.set('global', 'a', 1, cb))
      await until(() => ((c0.keys('global') as string[]) ?? []).includes('a'), 'c0 lists a')
      // c0 hears nothing of the delta for a while (as when its connection is about to drop)
      const notifications = (
        sessionOf(c0).client as unknown as { notifications: { handle: (topic: string, ...rest: unknown[]) => void } }
      ).notifications
      const handle = notifications.handle.bind(notifications)
      const deltaTopic = Buffer.from(`${prefix}#keys/delta`).toString('hex').toUpperCase()
      let deaf = true
      notifications.handle = (topic, ...rest) => {
        if (deaf && topic.toUpperCase().includes(deltaTopic)) return
        handle(topic, ...rest)
      }
      await call((cb) => c1.set('global', 'a', undefined, cb)) // unlisted, unheard by c0
      await until(() => !sessionOf(c1).index.busy, "c1's lock round to end")
      await call((cb) => c0.set('global', 'b', 2, cb)) // c0's round writes the delta over c1's change, unheard too
      await until(() => !sessionOf(c0).index.busy, "c0's lock round to end")
      deaf = false
      relay.dropAll() // the reconnect's reconcile brings c0 the delta as stored: its own write
      await until(() => sessionOf(c0).client.status.state !== 'connected', 'c0 to notice the drop')
      await sessionOf(c0).client.ready({ timeoutMs: 10_000 })
      // c0 writes a again: the index must list it
      await call((cb) => c0.set('global', 'a', 3, cb))
      await until(
        async () => JSON.stringify((await readIndex(reader, prefix)).global) === JSON.stringify(['a', 'b']),
        'the stored index lists a and b',
        10_000,
      )
    } finally {
      await relay.stop()
    }
  })

  for (const [verb, before, after] of [
    ['del', 1, undefined],
    ['set', undefined, 2],
  ] as const) {
    it(`a ${verb === 'del' ? 'delete' : 'set of a new key'} whose answer was lost (executed, its notification heard): the index follows the key`, async () => {
      const prefix = uniquePrefix()
      const c0 = contextStore({
        broker: backend.url,
        prefix,
        clientId: `c0-${process.pid}-lost-${verb}`,
        requestTimeout: 1000,
      })
      stores.push(c0)
      await c0.open()
      if (before !== undefined) await call((cb) => c0.set('global', 'k', before, cb))
      await until(() => !sessionOf(c0).index.busy, "c0's lock round to end")
      const client = sessionOf(c0).client as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>
      const real = client[verb]!.bind(client)
      let lost = false
      client[verb] = async (...args: unknown[]) => {
        const result = await real(...args)
        if (!lost && String(args[0]) === `${prefix}global/k`) {
          lost = true
          throw new TimeoutError(1000) // executed, never answered
        }
        return result
      }
      await assert.rejects(call((cb) => c0.set('global', 'k', after, cb)))
      const expected = after === undefined ? [] : ['k']
      await until(
        async () => JSON.stringify((await readIndex(reader, prefix)).global ?? []) === JSON.stringify(expected),
        `the stored index to list ${JSON.stringify(expected)}`,
        10_000,
      )
      const later = contextStore({
        broker: backend.url,
        prefix,
        clientId: `c2-${process.pid}-lost-${verb}`,
        requestTimeout: 1000,
      })
      stores.push(later)
      await later.open()
      assert.deepEqual(later.keys('global') ?? [], expected)
    })
  }
})

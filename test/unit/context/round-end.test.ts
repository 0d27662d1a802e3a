/**
 * A check queued just as a lock round of the key index ends. The round's end and its bookkeeping
 * ("no round running") were a microtask apart: a check arriving in between (a write's answer
 * processed in the same burst of messages as the lock's release) found a round still running, so
 * started none, and the round no longer looked: the check waited for the next one, for ever if
 * none came, and the index lacked its key. Here the release's answer is held and, when it comes, a
 * check is queued 0 to 12 microtasks later, so one of them lands in that gap on the old code.
 */
import assert from 'node:assert/strict'
import type { StateStoreClient } from '../../../src/client'
import { resolveConfig } from '../../../src/context/config'
import { IndexRounds, type RoundsSink } from '../../../src/context/index-rounds'
import { Limiter } from '../../../src/context/limiter'
import { Hlc } from '../../../src/hlc'
import { until } from '../../support/wait'

/** A state store of one process: values, versions and the lease's NEX, enough for a lock round. */
function fakeClient(onRelease: () => Promise<void>): StateStoreClient {
  const values = new Map<string, Buffer>()
  let tick = 0
  const version = () => new Hlc(1_800_000_000_000, ++tick, 'fake')
  const client = {
    clientId: 'fake',
    canObserve: false,
    status: { state: 'connected' },
    on: () => client,
    off: () => client,
    get: async (key: unknown) => ({
      value: values.get(String(key)) ?? null,
      version: values.has(String(key)) ? version() : null,
    }),
    set: async (key: unknown, value: unknown) => {
      values.set(String(key), Buffer.from(value as Buffer | string))
      return { applied: true, version: version() }
    },
    del: async (key: unknown) => ({ deleted: values.delete(String(key)) ? 1 : 0, version: version() }),
    vdel: async (key: unknown) => {
      await onRelease()
      return { deleted: values.delete(String(key)) ? 1 : 0, version: version() }
    },
  }
  return client as unknown as StateStoreClient
}

const sink: RoundsSink = {
  writingDelta: () => {},
  wroteDelta: () => {},
  recovered: () => {},
  wroteBucket: () => {},
  foldedDelta: () => {},
}

describe('context index: a check queued as a lock round ends', () => {
  for (let hops = 0; hops <= 12; hops++) {
    it(`is served when it arrives ${hops} microtasks after the release's answer`, async () => {
      let late: Promise<void> | null = null
      let rounds: IndexRounds | null = null
      const onRelease = async () => {
        if (late) return
        // the release is answered now; the next check comes `hops` microtasks later
        let chain = Promise.resolve()
        for (let i = 0; i < hops; i++) chain = chain.then(() => {})
        late = chain.then(() => rounds!.check({ scope: 'global', top: 'late', verify: true, repair: false }))
      }
      const config = resolveConfig({ prefix: 'round-end/', logger: () => {} })
      rounds = new IndexRounds(fakeClient(onRelease), config, new Limiter(10), sink, () => null)
      await rounds.check({ scope: 'global', top: 'first', verify: true, repair: false })
      await until(() => late !== null, 'the release')
      let served = false
      void late!.then(() => (served = true))
      await until(() => served, 'the late check to be served', 2000)
      assert.equal(served, true)
      rounds.close()
    })
  }
})

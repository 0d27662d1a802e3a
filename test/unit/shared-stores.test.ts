import assert from 'node:assert/strict'
import type { StateStoreClient } from '../../src/client'
import { ConnectionError } from '../../src/diagnostics/errors'
import {
  shareConnection,
  stateStore,
  StoreAccessError,
  type SharedConnection,
} from '../../src/function-nodes/shared-stores'

const refused = (pattern: RegExp) => (err: unknown) =>
  err instanceof StoreAccessError &&
  err.kind === 'argument' &&
  err.code === 'InvalidArgument' &&
  pattern.test(err.message)

/** A config node's offer whose client answers GET with its own label. */
function offer(id: string, name: string, label: string, scope = ''): SharedConnection {
  const client = { get: async () => ({ value: Buffer.from(label), version: null }) } as unknown as StateStoreClient
  return { id, name, scope, status: { state: 'connected' }, client: async () => client }
}

describe('stateStore(): a config node’s connection for Function nodes', function () {
  const withdraw: Array<() => void> = []
  afterEach(() => withdraw.splice(0).forEach((w) => w()))

  it('finds a config node by id or by name; an unknown name’s refusal names no other config node', async () => {
    withdraw.push(shareConnection(offer('id-1', 'line store', 'one')))
    assert.equal((await stateStore('id-1').get('k')).value!.toString(), 'one')
    assert.equal((await stateStore('line store').get('k')).value!.toString(), 'one')
    assert.throws(() => stateStore('other'), refused(/^(?!.*line store)(?!.*id-1).*"other"/))
    assert.throws(() => stateStore(''), refused(/name or the id/))
  })

  it('code that is no Function node’s sees global config nodes only, not one scoped to a tab', () => {
    withdraw.push(shareConnection(offer('id-t', 'tab store', 't', 'tab-1')))
    assert.throws(() => stateStore('tab store'), refused(/"tab store"/))
    assert.throws(() => stateStore('id-t'), refused(/"id-t"/))
  })

  it('holds the operations only, and spells a connection code as the nodes do', async () => {
    const down = {
      get: async () => Promise.reject(new ConnectionError('NotConnected', 'not connected')),
    } as unknown as StateStoreClient
    withdraw.push(
      shareConnection({ id: 'id-d', name: 'down', status: { state: 'disconnected' }, client: async () => down }),
    )
    const store = stateStore('down')
    assert.deepEqual(Object.keys(store).sort(), ['delete', 'get', 'keys', 'lock', 'set', 'update'])
    assert.ok(Object.isFrozen(store))
    await assert.rejects(
      store.get('k'),
      (err: unknown) => err instanceof StoreAccessError && err.code === 'NotConnected' && err.kind === 'connection',
    )
  })

  it('refuses a name two config nodes share, naming their ids', () => {
    withdraw.push(shareConnection(offer('id-a', 'twin', 'a')), shareConnection(offer('id-b', 'twin', 'b')))
    assert.throws(() => stateStore('twin'), refused(/id-a, id-b/))
    assert.doesNotThrow(() => stateStore('id-b'))
  })

  it('follows a redeploy: a store kept across msgs uses the config node deployed now, and fails once it is gone', async () => {
    const first = shareConnection(offer('id-r', 'store', 'before'))
    const kept = stateStore('store')
    assert.equal((await kept.get('k')).value!.toString(), 'before')
    first()
    await assert.rejects(kept.get('k'), refused(/"id-r"/))
    withdraw.push(shareConnection(offer('id-r', 'store', 'after')))
    assert.equal((await kept.get('k')).value!.toString(), 'after')
  })
})

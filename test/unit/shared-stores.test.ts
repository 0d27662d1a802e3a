import assert from 'node:assert/strict'
import type { StateStoreClient } from '../../src/client'
import { ArgumentError } from '../../src/errors'
import { shareConnection, stateStore, type SharedConnection } from '../../src/shared-stores'

/** A config node's offer whose client answers GET with its own label. */
function offer(id: string, name: string, label: string): SharedConnection {
  const client = { get: async () => ({ value: Buffer.from(label), version: null }) } as unknown as StateStoreClient
  return { id, name, status: { state: 'connected' }, client: async () => client }
}

describe('stateStore(): a config node’s connection for Function nodes', function () {
  const withdraw: Array<() => void> = []
  afterEach(() => withdraw.splice(0).forEach((w) => w()))

  it('finds a config node by id or by name, and says which exist when none matches', async () => {
    withdraw.push(shareConnection(offer('id-1', 'line store', 'one')))
    assert.equal((await stateStore('id-1').get('k')).value!.toString(), 'one')
    assert.equal((await stateStore('line store').get('k')).value!.toString(), 'one')
    assert.throws(
      () => stateStore('other'),
      (err: unknown) => err instanceof ArgumentError && /"other".*line store/.test(err.message),
    )
    assert.throws(() => stateStore(''), ArgumentError)
  })

  it('refuses a name two config nodes share, naming their ids', () => {
    withdraw.push(shareConnection(offer('id-a', 'twin', 'a')), shareConnection(offer('id-b', 'twin', 'b')))
    assert.throws(
      () => stateStore('twin'),
      (err: unknown) => err instanceof ArgumentError && /id-a, id-b/.test(err.message),
    )
    assert.doesNotThrow(() => stateStore('id-b'))
  })

  it('follows a redeploy: a store kept across msgs uses the config node deployed now, and fails once it is gone', async () => {
    const first = shareConnection(offer('id-r', 'store', 'before'))
    const kept = stateStore('store')
    assert.equal((await kept.get('k')).value!.toString(), 'before')
    first()
    await assert.rejects(kept.get('k'), ArgumentError)
    withdraw.push(shareConnection(offer('id-r', 'store', 'after')))
    assert.equal((await kept.get('k')).value!.toString(), 'after')
  })
})

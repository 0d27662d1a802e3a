/**
 * The lock name's watch (src/locks/key-watch.ts) over a stand-in client and a fake clock: one
 * registration per name and client, shared by its listeners, kept WATCH_KEPT_MS after the last of
 * them (a new listener meanwhile keeps it), a failed registration tried anew by the next caller, and
 * the registration's own read handed only to the call that made it.
 */
import assert from 'node:assert/strict'
import { install } from '@sinonjs/fake-timers'
import type { KeyNotification, StateStoreClient } from '../../src/client'
import { KeyWatch, WATCH_KEPT_MS } from '../../src/locks/key-watch'

function standIn() {
  const calls: string[] = []
  const listeners: Array<(n: KeyNotification) => void> = []
  let failNext = false
  const client = {
    observe: (_key: Buffer, listener: (n: KeyNotification) => void) => {
      calls.push('observe')
      if (failNext) {
        failNext = false
        return Promise.reject(new Error('KEYNOTIFY timed out'))
      }
      listeners.push(listener)
      return Promise.resolve({
        key: Buffer.from('k'),
        initial: { value: Buffer.from('v'), version: null },
        close: () => (calls.push('close'), Promise.resolve()),
      })
    },
  }
  const notify = (operation: 'SET' | 'DELETE') => {
    for (const l of listeners) l({ key: Buffer.from('k'), operation, value: null, version: null, reconciled: false })
  }
  return { client: client as unknown as StateStoreClient, calls, notify, failing: () => (failNext = true) }
}

describe('locks: the key watch', () => {
  let clock: ReturnType<typeof install>
  beforeEach(() => (clock = install({ toFake: ['setTimeout', 'clearTimeout'] })))
  afterEach(() => clock.uninstall())

  it('is one per name and client, registered once for every listener, and hands each listener every change', async () => {
    const { client, calls, notify } = standIn()
    const name = Buffer.from('k')
    const watch = KeyWatch.of(client, name)
    assert.equal(KeyWatch.of(client, Buffer.from('k')), watch, 'the same name, the same watch')
    assert.notEqual(KeyWatch.of(client, Buffer.from('other')), watch)
    const heard: string[] = []
    const stopA = watch.listen((n) => heard.push(`a ${n.operation}`))
    const stopB = watch.listen((n) => heard.push(`b ${n.operation}`))
    const first = await watch.ready()
    assert.deepEqual(first, { value: Buffer.from('v'), version: null }, 'the call that registered gets its read')
    assert.equal(await watch.ready(), null, 'a later call did not register: no read of its own')
    assert.equal(watch.registered, true)
    notify('DELETE')
    assert.deepEqual(heard, ['a DELETE', 'b DELETE'])
    assert.deepEqual(calls, ['observe'])
    stopA()
    stopB()
  })

  it('is kept WATCH_KEPT_MS after its last listener, then unregistered; a listener meanwhile keeps it', async () => {
    const { client, calls } = standIn()
    const watch = KeyWatch.of(client, Buffer.from('kept'))
    const stop = watch.listen(() => {})
    await watch.ready()
    stop()
    await clock.tickAsync(WATCH_KEPT_MS - 1)
    assert.deepEqual(calls, ['observe'], 'still registered just before its time')
    // The next acquisition comes: nothing registered anew, nothing unregistered.
    const again = watch.listen(() => {})
    await clock.tickAsync(WATCH_KEPT_MS * 2)
    assert.deepEqual(calls, ['observe'])
    again()
    await clock.tickAsync(WATCH_KEPT_MS)
    assert.deepEqual(calls, ['observe', 'close'])
    assert.equal(watch.registered, false)
    assert.notEqual(
      KeyWatch.of(client, Buffer.from('kept')),
      watch,
      'an ended watch is forgotten: the next use makes a new one',
    )
  })

  it('registered with nobody listening (a check whose hold ended meanwhile), it is kept, then ends', async () => {
    const { client, calls } = standIn()
    const watch = KeyWatch.of(client, Buffer.from('unheard'))
    await watch.ready()
    await clock.tickAsync(WATCH_KEPT_MS)
    assert.deepEqual(calls, ['observe', 'close'])
  })

  it('a failed registration is tried anew by the next call', async () => {
    const { client, calls, failing } = standIn()
    const watch = KeyWatch.of(client, Buffer.from('retry'))
    const stop = watch.listen(() => {})
    failing()
    await assert.rejects(watch.ready(), /KEYNOTIFY timed out/)
    assert.equal(watch.registered, false)
    await watch.ready()
    assert.equal(watch.registered, true)
    assert.deepEqual(calls, ['observe', 'observe'])
    stop()
  })
})

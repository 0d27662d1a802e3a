/** The logic the ss-config node delegates: which connection changes it logs, and its users' coming and going. */
import assert from 'node:assert/strict'
import type { ConnectionStatus } from '../../src/client'
import { ConnectionLog } from '../../nodes/lib/connection-log'
import { StoreUsers } from '../../nodes/lib/store-users'

describe('nodes/lib: ConnectionLog', function () {
  it('warns of the first failure, is quiet through retries, and logs each change once', () => {
    const log = new ConnectionLog()
    const seen = (statuses: ConnectionStatus[]) => statuses.map((s) => log.next(s))
    assert.deepEqual(
      seen([
        { state: 'connecting' },
        { state: 'disconnected', reason: 'ECONNREFUSED' },
        { state: 'reconnecting' },
        { state: 'disconnected', reason: 'ECONNREFUSED' },
        { state: 'connected' },
        { state: 'connected' },
        { state: 'disconnected', reason: 'keepalive timeout' },
        { state: 'reconnecting' },
        { state: 'disconnected', authFailed: true, reason: 'Not authorized' },
        { state: 'disconnected', authFailed: true, reason: 'Not authorized' },
        { state: 'connected' },
      ]),
      [
        null,
        { key: 'connectFailed', warn: true },
        null,
        null,
        { key: 'connected', warn: false },
        null,
        { key: 'disconnected', warn: false },
        null,
        { key: 'authFailed', warn: true },
        null,
        { key: 'connected', warn: false },
      ],
    )
  })

  it('warns of an authentication failure even as the first change', () => {
    assert.deepEqual(new ConnectionLog().next({ state: 'disconnected', authFailed: true }), { key: 'authFailed', warn: true })
  })
})

describe('nodes/lib: StoreUsers', function () {
  const user = (id: string, heard: ConnectionStatus[] = []) => ({ id, heard, onConnection: (s: ConnectionStatus) => void heard.push(s) })

  it('tells every user of a change, and says when the last one left', () => {
    const users = new StoreUsers()
    const a = user('a')
    const b = user('b')
    users.add(a)
    users.add(b)
    users.tell({ state: 'connected' })
    assert.deepEqual([a.heard, b.heard], [[{ state: 'connected' }], [{ state: 'connected' }]])
    assert.equal(users.remove(a), false)
    assert.equal(users.remove(b), true)
    assert.equal(users.size, 0)
  })

  it('lets a closing config node wait until its users have left, or no longer than the grace time', async () => {
    const users = new StoreUsers()
    await users.left(60_000) // nobody to wait for
    const a = user('a')
    users.add(a)
    let done = false
    const waiting = users.left(60_000).then(() => (done = true))
    await new Promise((r) => setImmediate(r))
    assert.equal(done, false)
    users.remove(a)
    await waiting
    users.add(user('b'))
    await users.left(1) // b never leaves: the grace time ends the wait
  })
})

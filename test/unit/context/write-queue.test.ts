import assert from 'node:assert/strict'
import { WriteQueue } from '../../../src/context/write-queue'

/** A send that waits until the test lets it finish. */
function scripted() {
  const sent: Array<string | null> = []
  const finish: Array<(err?: Error) => void> = []
  const send = (bytes: Buffer | null) =>
    new Promise<void>((resolve, reject) => {
      sent.push(bytes?.toString() ?? null)
      finish.push((err) => (err ? reject(err) : resolve()))
    })
  return { sent, finish, send }
}
const tick = () => new Promise((resolve) => setImmediate(resolve))

describe('context: the writes of one key', () => {
  it('go one at a time, in order; a write queued behind another replaces it and both callers hear when it lands', async () => {
    const { sent, finish, send } = scripted()
    let idle = 0
    const queue = new WriteQueue(send, () => (idle += 1))
    const heard: string[] = []
    void queue.push(Buffer.from('1')).then(() => heard.push('1'))
    void queue.push(Buffer.from('2')).then(() => heard.push('2'))
    void queue.push(null).then(() => heard.push('3'))
    await tick()
    assert.deepEqual(sent, ['1'], 'one at a time')
    assert.equal(queue.busy, true)
    finish.shift()!()
    await tick()
    assert.deepEqual(heard, ['1'])
    assert.deepEqual(sent, ['1', null], 'the newest queued write, once')
    finish.shift()!()
    await queue.drained
    assert.deepEqual(heard, ['1', '2', '3'])
    assert.equal(queue.busy, false)
    assert.equal(idle, 1)
  })

  it('a failed write rejects its callers only; the next one still goes', async () => {
    const { sent, finish, send } = scripted()
    const queue = new WriteQueue(send)
    const first = queue.push(Buffer.from('a'))
    const second = queue.push(Buffer.from('b'))
    await tick()
    finish.shift()!(new Error('timed out'))
    await assert.rejects(first, /timed out/)
    await tick()
    finish.shift()!()
    await second
    assert.deepEqual(sent, ['a', 'b'])
  })
})

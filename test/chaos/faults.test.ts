/**
 * The fault injector's own parts: a schedule is a function of its seed; a throttled relay cut
 * while bytes wait in it keeps the process responsive (the chaos run once hung there: a destroyed
 * socket's queue was never emptied, in a loop that never yielded) and serves the next connection.
 */
import assert from 'node:assert/strict'
import { createServer, connect, type Socket } from 'node:net'
import { FAULT_KINDS, planFaults, seededRandom } from '../support/faults'
import { TcpRelay } from '../support/relay'
import { sleep } from '../reliability/support'

describe('chaos: the fault injector', () => {
  it('draws the same schedule from the same seed, and another from another', () => {
    const plan = (seed: number) => planFaults(seededRandom(seed), 18_000, FAULT_KINDS, 10)
    assert.deepEqual(plan(20261125), plan(20261125))
    assert.notDeepEqual(plan(20261125), plan(20261126))
    for (const f of plan(1)) assert.ok(f.at + f.durationMs <= 18_000 && f.durationMs >= 300)
  })

  it('drops the bytes a throttled relay holds for a connection that is cut, and relays the next one', async () => {
    const echo = createServer((s) => s.on('data', (d) => s.write(d)).on('error', () => {}))
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve))
    const relay = await TcpRelay.start((echo.address() as { port: number }).port)
    const port = Number(new URL(relay.url).port)
    try {
      relay.bytesPerSec = 1000
      const first: Socket = connect(port, '127.0.0.1')
      first.on('error', () => {})
      await new Promise((resolve) => first.once('connect', resolve))
      first.write(Buffer.alloc(5000))
      await sleep(100)
      relay.dropAll()
      // The event loop must stay free: a timer fires on time while the relay's queue drains.
      const ticked = await Promise.race([sleep(300).then(() => true), new Promise((r) => setTimeout(() => r(false), 5000))])
      assert.equal(ticked, true)
      relay.bytesPerSec = Infinity
      const second = connect(port, '127.0.0.1')
      await new Promise((resolve) => second.once('connect', resolve))
      const echoed = new Promise<string>((resolve) => second.once('data', (d) => resolve(d.toString())))
      second.write('ping')
      assert.equal(await echoed, 'ping')
      second.destroy()
    } finally {
      await relay.stop()
      await new Promise((resolve) => echo.close(resolve))
    }
  })
})

/**
 * The fault injector's own parts: a schedule is a function of its seed; a throttled relay cut
 * while bytes wait in it drops them without blocking its thread, and serves the next connection; a
 * throttle lifted delivers what it held at once.
 */
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { createServer, connect, type AddressInfo } from 'node:net'
import { Worker } from 'node:worker_threads'
import { install } from '@sinonjs/fake-timers'
import { FAULT_KINDS, planFaults, seededRandom } from '../../support/faults'
import { TcpRelay } from '../../support/relay'

describe('chaos: the fault injector', () => {
  it('draws the same schedule from the same seed, and another from another', () => {
    const plan = (seed: number) => planFaults(seededRandom(seed), 18_000, FAULT_KINDS, 10)
    assert.deepEqual(plan(20261125), plan(20261125))
    assert.notDeepEqual(plan(20261125), plan(20261126))
    for (const f of plan(1)) assert.ok(f.at + f.durationMs <= 18_000 && f.durationMs >= 300)
  })

  it('drops the bytes a throttled relay holds for a connection that is cut, and relays the next one', async function () {
    this.timeout(40_000)
    // In a worker: should the relay spin, only the worker's thread stops, and this one sees it. A spin
    // is silence for good, so the wait is long; a busy main thread must not count as silence.
    const worker = new Worker(join(__dirname, 'relay-cut.worker.ts'))
    // Every message is kept as it comes: two that arrive together are both delivered before a
    // listener added after the first could hear the second.
    const messages: string[] = []
    let taken = 0
    let wake: (() => void) | null = null
    worker.on('message', (m: string) => {
      messages.push(m)
      wake?.()
    })
    const next = () =>
      new Promise<string>((resolve, reject) => {
        const take = () => {
          if (taken >= messages.length) return false
          clearTimeout(timer)
          wake = null
          resolve(messages[taken++]!)
          return true
        }
        // A message that arrived while this thread was busy is delivered in the poll phase, before setImmediate.
        const timer = setTimeout(
          () =>
            setImmediate(
              () => take() || reject(new Error(`the relay's thread went silent after ${JSON.stringify(messages)}`)),
            ),
          15_000,
        )
        if (!take()) wake = take
      })
    try {
      assert.equal(await next(), 'ticked', 'a timer fires while the bytes of the cut connection are dropped')
      assert.equal(await next(), 'echoed ping', 'the next connection is relayed')
    } finally {
      await worker.terminate()
    }
  })

  it('delivers the bytes a throttle held as soon as the throttle is lifted, not at the slow rate', async () => {
    let received = 0
    let whole: () => void = () => {}
    const arrived = new Promise<void>((resolve) => (whole = resolve))
    const sink = createServer((s) =>
      s.on('data', (d) => (received += d.length) >= 3000 && whole()).on('error', () => {}),
    )
    await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve))
    const relay = await TcpRelay.start((sink.address() as AddressInfo).port)
    // The relay's time stands still: only lifting the throttle can move the bytes.
    const clock = install({ toFake: ['setTimeout', 'clearTimeout', 'performance'] })
    try {
      relay.bytesPerSec = 100
      const client = connect(Number(new URL(relay.url).port), '127.0.0.1')
      client.on('error', () => {})
      await new Promise((resolve) => client.once('connect', resolve))
      client.write(Buffer.alloc(3000))
      while (relay.held < 3000) await new Promise((resolve) => setImmediate(resolve))
      assert.equal(received, 0, 'held by the throttle: 30 s of bytes at 100 B/s')
      relay.bytesPerSec = Infinity
      await arrived
      assert.equal(received, 3000)
      client.destroy()
    } finally {
      clock.uninstall()
      await relay.stop()
      await new Promise((resolve) => sink.close(resolve))
    }
  })
})

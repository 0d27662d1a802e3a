/**
 * Runs in a worker thread for faults.test.ts: a throttled relay is cut while bytes wait in it; the
 * worker then reports that its own timers still fire ('ticked') and that the relay serves the next
 * connection ('echoed'). A relay that spins on the cut connection's queue blocks this thread only,
 * so the test on the main thread sees the silence and fails.
 */
import { createServer, connect, type Socket } from 'node:net'
import { parentPort } from 'node:worker_threads'
import { TcpRelay } from '../../support/relay'
import { sleep } from '../../support/wait'

async function main(): Promise<void> {
  const echo = createServer((s) => s.on('data', (d) => s.write(d)).on('error', () => {}))
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve))
  const relay = await TcpRelay.start((echo.address() as { port: number }).port)
  const port = Number(new URL(relay.url).port)
  try {
    relay.bytesPerSec = 1000
    const first: Socket = connect(port, '127.0.0.1')
    first.on('error', () => {})
    await new Promise((resolve) => first.once('connect', resolve))
    // Held half a second by the throttle; cut before, and the ticks go on past the moment they were due.
    first.write(Buffer.alloc(500))
    await sleep(100)
    relay.dropAll()
    await sleep(800)
    parentPort!.postMessage('ticked')
    relay.bytesPerSec = Infinity
    const second = connect(port, '127.0.0.1')
    await new Promise((resolve) => second.once('connect', resolve))
    const echoed = new Promise<string>((resolve) => second.once('data', (d) => resolve(d.toString())))
    second.write('ping')
    parentPort!.postMessage(`echoed ${await echoed}`)
    second.destroy()
  } finally {
    await relay.stop()
    await new Promise((resolve) => echo.close(resolve))
  }
}

main().catch((err: unknown) => parentPort!.postMessage(`error ${String(err)}`))

import assert from 'node:assert/strict'
import { connect, type Socket } from 'node:net'
import { rmSync } from 'node:fs'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { Reply, Request } from '../../../src/protocol'
import { decodeExact } from '../../../src/resp'
import { RawClient } from '../emulator/raw-client'
import { makeCerts, type TestCerts } from '../../support/certs'
import { until } from '../../support/wait'

/** A TCP socket that sends nothing: open until the listener closes it. */
async function idleSocket(port: number): Promise<{ socket: Socket; closed: () => boolean }> {
  const socket = connect(port, '127.0.0.1')
  let closed = false
  socket.on('close', () => (closed = true))
  socket.on('error', () => {})
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve())
    socket.once('error', reject)
  })
  return { socket, closed: () => closed }
}

/**
 * The embedded broker's listeners took any number of connections, and a TLS socket that never
 * sent a handshake stayed open at least 30 s (Node.js waits 120 s). Each listener now holds at most
 * `--max-connections` (a new one past it is closed at once, the log naming the flag), and a TLS
 * listener closes a silent socket after `--tls-handshake-timeout`.
 */
describe('security: listeners are capped and a TLS handshake is timed', function () {
  this.timeout(30_000)
  let certs: TestCerts
  const running: Emulator[] = []
  const sockets: Socket[] = []
  before(() => {
    certs = makeCerts()
  })
  after(async () => {
    for (const s of sockets) s.destroy()
    for (const e of running) await e.stop()
    rmSync(certs.dir, { recursive: true, force: true })
  })

  it('past --max-connections a new connection is closed at once, the log names the flag, and a client already in is served', async () => {
    const lines: string[] = []
    const emulator = await startEmulator({
      listen: { host: '127.0.0.1', port: 0 },
      maxConnections: 4,
      logLevel: 'warn',
      logger: (_level, message) => lines.push(message),
    })
    running.push(emulator)
    const port = Number(new URL(emulator.brokerUrl).port)
    const raw = await RawClient.connect(emulator.brokerUrl)
    after(() => raw.close())
    // With the client above (the service connects in-process), three more fill the cap of four.
    const held = await Promise.all([1, 2, 3].map(() => idleSocket(port)))
    sockets.push(...held.map((h) => h.socket))
    const over = await idleSocket(port).catch(() => null)
    if (over) sockets.push(over.socket)
    await until(() => over === null || over.closed(), 'the connection past the cap to be closed')
    assert.ok(
      held.every((h) => !h.closed()),
      'the connections within the cap stay open',
    )
    await until(() => lines.some((l) => /--max-connections allows 4/.test(l)), 'the log to name --max-connections')
    assert.deepEqual((await raw.request(Request.set('k', 'v'))).payload, Reply.ok)
    assert.deepEqual(decodeExact((await raw.request(Request.get('k'))).payload), {
      kind: 'bulk',
      value: Buffer.from('v'),
    })
  })

  it('a TLS socket that sends no handshake is closed after --tls-handshake-timeout', async () => {
    const emulator = await startEmulator({
      listen: { host: '127.0.0.1', port: 0 },
      tlsListeners: [
        {
          port: 0,
          certFile: certs.serverCertFile,
          keyFile: certs.serverKeyFile,
          authentication: { method: 'sat', tokenFiles: [] },
        },
      ],
      tlsHandshakeTimeoutMs: 500,
      logLevel: 'error',
    })
    running.push(emulator)
    const tlsPort = Number(new URL(emulator.tlsUrls[0]!).port)
    const silent = await idleSocket(tlsPort)
    sockets.push(silent.socket)
    // Well under the 30 s the old listener kept such a socket.
    await until(() => silent.closed(), 'the silent TLS socket to be closed', 5000)
  })
})

import { createConnection } from 'node:net'
import { Duplex } from 'node:stream'

/**
 * One end of an in-memory byte stream between an MQTT client and the embedded broker in the same
 * process: what one end writes, the other reads, in order, with no socket, no syscall and no
 * loopback TCP in between. Writes made in one tick are delivered together in the next (as a socket
 * would coalesce them), never re-entrantly inside the writer's call; a reader that stops reading
 * holds the writer's callbacks back, so backpressure works as over TCP. Ending one side ends the
 * other's reading; destroying one side closes both, as a dropped connection does.
 */
class InProcessEnd extends Duplex {
  peer!: InProcessEnd
  private outbox: Buffer[] = []
  private outboxBytes = 0
  private flushQueued = false
  /** Write callbacks of bytes not yet handed to the peer, or handed while its read buffer is full. */
  private held: Array<(err?: Error | null) => void> = []
  private blocked = false

  constructor() {
    // As a socket that the other side closed: when reading ends, writing ends too, and the end closes it.
    super({ allowHalfOpen: false })
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (err?: Error | null) => void): void {
    this.enqueue(chunk)
    this.settle(callback)
  }

  override _writev(chunks: Array<{ chunk: Buffer }>, callback: (err?: Error | null) => void): void {
    for (const { chunk } of chunks) this.enqueue(chunk)
    this.settle(callback)
  }

  override _final(callback: (err?: Error | null) => void): void {
    this.flush()
    if (!this.peer.destroyed) this.peer.push(null)
    callback()
  }

  override _read(): void {
    // Our reader wants more: release the peer's writes held back for us.
    const peer = this.peer
    if (!peer.blocked) return
    peer.blocked = false
    peer.release()
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    for (const cb of this.held) cb(err ?? new Error('the in-process connection was closed'))
    this.held = []
    this.outbox = []
    // The other side sees its connection end, as with a socket that closed.
    if (!this.peer.destroyed) process.nextTick(() => this.peer.destroy())
    callback(err)
  }

  /** Like net.Socket's; there is no Nagle here to turn off. */
  setNoDelay(): this {
    return this
  }

  private enqueue(chunk: Buffer): void {
    this.outbox.push(chunk)
    this.outboxBytes += chunk.length
    if (!this.flushQueued) {
      this.flushQueued = true
      process.nextTick(() => this.flush())
    }
  }

  /** A write is done when its bytes are in the reader's buffer and that buffer has room for more. */
  private settle(callback: (err?: Error | null) => void): void {
    this.held.push(callback)
  }

  private release(): void {
    const held = this.held
    this.held = []
    for (const cb of held) cb()
  }

  private flush(): void {
    this.flushQueued = false
    if (this.outbox.length === 0 || this.destroyed || this.peer.destroyed) {
      if (!this.blocked) this.release()
      return
    }
    const data = this.outbox.length === 1 ? this.outbox[0]! : Buffer.concat(this.outbox, this.outboxBytes)
    this.outbox = []
    this.outboxBytes = 0
    if (this.peer.push(data)) this.release()
    else this.blocked = true
  }
}

/** Two connected ends: give one to the broker, the other to the client. */
export function inProcessPair(): [Duplex & { setNoDelay(): unknown }, Duplex & { setNoDelay(): unknown }] {
  const a = new InProcessEnd()
  const b = new InProcessEnd()
  a.peer = b
  b.peer = a
  return [a, b]
}

/** The brokers running in this process, by URL, while they run. */
const runningHere = new Map<string, () => Duplex>()

/** The host of a broker without a TCP port (a reserved name that never resolves), and how many there were. */
const IN_PROCESS_HOST = 'in-process.invalid'
let inProcessBrokers = 0

/** The URL of a new broker without a TCP port: its host never resolves, so no other process can use it. */
export function inProcessUrl(): { port: number; url: string } {
  const port = ++inProcessBrokers
  return { port, url: `mqtt://${IN_PROCESS_HOST}:${port}` }
}

/** A broker of this process serves `url` through `connect` from now on; the function returned ends that. */
export function servedHere(url: string, connect: () => Duplex): () => void {
  runningHere.set(url, connect)
  return () => {
    if (runningHere.get(url) === connect) runningHere.delete(url)
  }
}

/**
 * A stream builder (mqtt.js's, the client's `connectStream`) for the embedded broker at `url` when
 * one runs in this process now (as under `npm start` or the config node's embedded emulator); null
 * for any other URL. Each connection is in-process while a broker of this process serves the URL,
 * and a TCP connection to the URL otherwise: the broker may stop, and another one, here or in
 * another process, may serve the URL later, so reconnecting works as it does over TCP.
 */
export function inProcessConnector(url: string): (() => Duplex) | null {
  if (!runningHere.has(url)) return null
  const { hostname, port } = new URL(url)
  const host = hostname.replace(/^\[(.*)\]$/, '$1')
  return () => runningHere.get(url)?.() ?? createConnection({ host, port: Number(port), noDelay: true })
}

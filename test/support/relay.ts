import { connect, createServer, type Server, type Socket } from 'node:net'

/**
 * The tests' one TCP relay in front of a broker. It counts connections (`opened` ever, `open`
 * now), so a test can prove deploys neither leak nor drop connections; `dropAll` cuts every
 * connection (a broker restart, seen from the client); `refusing` turns new connections away (the
 * broker is down), and `cut`/`restore` do both at once; `freeze` stops moving bytes while keeping
 * the sockets open (a paused process or a stalled network, as the peer sees it), `thaw` resumes;
 * `delayMs` holds every chunk that long and `bytesPerSec` throttles each direction (a slow link).
 * When the rate changes, the bytes waiting in the relay are timed again from that moment at the new
 * rate: a link that recovers drains its backlog at its own speed, not at the slow one's.
 * test/support/faults.ts schedules these from a seed.
 */
export class TcpRelay {
  private readonly pairs = new Set<[Socket, Socket]>()
  private frozen = false
  /** Connections accepted since the start. */
  opened = 0
  /** While set, new connections are closed at once. */
  refusing = false
  /** Added to each chunk's trip, each way. */
  delayMs = 0
  private rate = Infinity
  /** Each direction of each connection: times its waiting chunks again, counts their bytes. */
  private readonly lanes = new Set<{ retime(): void; held(): number }>()

  private constructor(
    private readonly server: Server,
    private readonly target: { host: string; port: number },
  ) {}

  /** Relays to a broker given by URL (`mqtt://host:port`) or by its port on 127.0.0.1. */
  static async start(target: string | number): Promise<TcpRelay> {
    const url = typeof target === 'number' ? null : new URL(target)
    const server = createServer()
    const relay = new TcpRelay(
      server,
      url ? { host: url.hostname, port: Number(url.port) } : { host: '127.0.0.1', port: target as number },
    )
    server.on('connection', (socket) => relay.accept(socket))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    return relay
  }

  get url(): string {
    return `mqtt://127.0.0.1:${(this.server.address() as { port: number }).port}`
  }

  /** Each direction's rate; Infinity for none. */
  get bytesPerSec(): number {
    return this.rate
  }

  set bytesPerSec(rate: number) {
    this.rate = rate
    for (const lane of this.lanes) lane.retime()
  }

  /** Bytes waiting in the relay for their delay or the throttle, both ways. */
  get held(): number {
    let bytes = 0
    for (const lane of this.lanes) bytes += lane.held()
    return bytes
  }

  /** Connections open now. */
  get open(): number {
    return this.pairs.size
  }

  dropAll(): void {
    for (const [a, b] of this.pairs) {
      a.destroy()
      b.destroy()
    }
    this.pairs.clear()
  }

  cut(): void {
    this.refusing = true
    this.dropAll()
  }

  restore(): void {
    this.refusing = false
  }

  freeze(): void {
    this.frozen = true
    for (const [a, b] of this.pairs) {
      a.pause()
      b.pause()
    }
  }

  thaw(): void {
    this.frozen = false
    for (const [a, b] of this.pairs) {
      a.resume()
      b.resume()
    }
  }

  async stop(): Promise<void> {
    this.cut()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }

  private accept(client: Socket): void {
    if (this.refusing) {
      client.destroy()
      return
    }
    this.opened += 1
    client.setNoDelay(true)
    const upstream = connect(this.target.port, this.target.host)
    upstream.setNoDelay(true)
    const pair: [Socket, Socket] = [client, upstream]
    this.pairs.add(pair)
    for (const s of pair) {
      s.on('error', () => {})
      s.on('close', () => {
        this.pairs.delete(pair)
        client.destroy()
        upstream.destroy()
      })
    }
    // Data events (not pipe) so that pause() holds bytes in the kernel buffers.
    client.on('data', this.lane(upstream))
    upstream.on('data', this.lane(client))
    if (this.frozen) {
      client.pause()
      upstream.pause()
    }
  }

  /** Writes chunks to `to` in order, each when its delay and the throttle allow: one timer per direction. */
  private lane(to: Socket): (chunk: Buffer) => void {
    const queue: Array<{ arrived: number; at: number; chunk: Buffer }> = []
    let freeAt = 0
    let timer: NodeJS.Timeout | null = null
    const schedule = (arrived: number, size: number) => {
      freeAt = Math.max(arrived + this.delayMs, freeAt) + (Number.isFinite(this.rate) ? (size * 1000) / this.rate : 0)
      return freeAt
    }
    const flush = () => {
      if (timer) clearTimeout(timer)
      timer = null
      const now = performance.now()
      while (queue.length > 0 && queue[0]!.at <= now) {
        const { chunk } = queue.shift()!
        if (!to.destroyed) to.write(chunk)
      }
      if (queue.length > 0) timer = setTimeout(flush, queue[0]!.at - now)
    }
    const retime = () => {
      freeAt = performance.now()
      for (const item of queue) item.at = schedule(item.arrived, item.chunk.length)
      flush()
    }
    const lane = { retime, held: () => queue.reduce((n, item) => n + item.chunk.length, 0) }
    this.lanes.add(lane)
    to.once('close', () => {
      this.lanes.delete(lane)
      if (timer) clearTimeout(timer)
      queue.length = 0
    })
    return (chunk) => {
      const now = performance.now()
      if (this.delayMs === 0 && this.rate === Infinity && queue.length === 0) {
        to.write(chunk)
        return
      }
      queue.push({ arrived: now, at: schedule(now, chunk.length), chunk })
      if (!timer) timer = setTimeout(flush, queue[queue.length - 1]!.at - now)
    }
  }
}

import { connect, createServer, type Server, type Socket } from 'node:net'

/**
 * A TCP forwarder in front of a broker, so a test can take one client off the network (`cut`)
 * while everyone else stays connected, and let it back (`restore`) when the test is ready.
 */
export class Proxy {
  private readonly sockets = new Set<Socket>()
  private open = true

  private constructor(
    private readonly server: Server,
    readonly targetPort: number,
  ) {}

  static async start(targetPort: number): Promise<Proxy> {
    const server = createServer()
    const proxy = new Proxy(server, targetPort)
    server.on('connection', (socket) => proxy.accept(socket))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    return proxy
  }

  get url(): string {
    return `mqtt://127.0.0.1:${(this.server.address() as { port: number }).port}`
  }

  /** Drops every connection and refuses new ones until restore(). */
  cut(): void {
    this.open = false
    for (const s of this.sockets) s.destroy()
    this.sockets.clear()
  }

  restore(): void {
    this.open = true
  }

  async stop(): Promise<void> {
    this.cut()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }

  private accept(client: Socket): void {
    if (!this.open) {
      client.destroy()
      return
    }
    client.setNoDelay(true)
    const upstream = connect(this.targetPort, '127.0.0.1')
    upstream.setNoDelay(true)
    for (const s of [client, upstream]) {
      this.sockets.add(s)
      s.on('error', () => {})
      s.on('close', () => {
        this.sockets.delete(s)
        client.destroy()
        upstream.destroy()
      })
    }
    client.pipe(upstream)
    upstream.pipe(client)
  }
}

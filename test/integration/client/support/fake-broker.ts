import { createServer, type Server, type Socket } from 'node:net'
import { generate, parser, type IAuthPacket, type IConnectPacket, type Packet } from 'mqtt-packet'

/**
 * A minimal MQTT 5 server speaking real MQTT on a real socket, for what no ordinary broker lets a
 * test see or script: the exact CONNECT (credentials, K8S-SAT token, clean start, keepalive,
 * session expiry), the CONNACK reason code, AUTH packets, and a CONNECT left unanswered.
 */
export class FakeBroker {
  readonly connects: IConnectPacket[] = []
  readonly auths: IAuthPacket[] = []
  /** The CONNACK reason code for a CONNECT; null leaves it unanswered. */
  decide: (connect: IConnectPacket) => number | null = () => 0
  /** The reason code of every PUBACK (0x10: no matching subscribers). */
  pubackCode = 0
  readonly publishes: Array<{ topic: string; messageId: number | undefined }> = []
  private readonly sockets = new Set<Socket>()

  private constructor(private readonly server: Server) {}

  static async start(): Promise<FakeBroker> {
    const server = createServer()
    const broker = new FakeBroker(server)
    server.on('connection', (socket) => broker.serve(socket))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    return broker
  }

  get port(): number {
    return (this.server.address() as { port: number }).port
  }

  get url(): string {
    return `mqtt://127.0.0.1:${this.port}`
  }

  /** Drops every connection, as a broker restart would. */
  dropAll(): void {
    for (const s of this.sockets) s.destroy()
    this.sockets.clear()
  }

  /** Ends every connection with a DISCONNECT carrying this reason code (0x8E: session taken over), as a broker does. */
  disconnectAll(reasonCode: number): void {
    for (const s of this.sockets) s.end(generate({ cmd: 'disconnect', reasonCode }, { protocolVersion: 5 }))
  }

  async stop(): Promise<void> {
    this.dropAll()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }

  private serve(socket: Socket): void {
    socket.setNoDelay(true)
    this.sockets.add(socket)
    socket.on('close', () => this.sockets.delete(socket))
    socket.on('error', () => {})
    const p = parser({ protocolVersion: 5 })
    const send = (packet: Packet) => {
      if (!socket.destroyed) socket.write(generate(packet, { protocolVersion: 5 }))
    }
    p.on('error', () => socket.destroy())
    p.on('packet', (packet: Packet) => {
      switch (packet.cmd) {
        case 'connect': {
          this.connects.push(packet)
          const code = this.decide(packet)
          if (code === null) return
          send({ cmd: 'connack', sessionPresent: false, reasonCode: code })
          if (code !== 0) socket.end()
          return
        }
        case 'subscribe':
          send({ cmd: 'suback', messageId: packet.messageId, granted: packet.subscriptions.map(() => 1) })
          return
        case 'publish':
          this.publishes.push({ topic: packet.topic, messageId: packet.messageId })
          if (packet.qos === 1) send({ cmd: 'puback', messageId: packet.messageId!, reasonCode: this.pubackCode })
          return
        case 'pingreq':
          send({ cmd: 'pingresp' })
          return
        case 'auth':
          this.auths.push(packet)
          send({
            cmd: 'auth',
            reasonCode: 0,
            properties: { authenticationMethod: packet.properties?.authenticationMethod ?? '' },
          })
          return
        case 'disconnect':
          socket.end()
          return
        default:
          return
      }
    })
    socket.on('data', (chunk) => p.parse(chunk))
  }
}

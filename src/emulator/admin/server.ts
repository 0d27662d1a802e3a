import type { IPublishPacket, MqttClient } from 'mqtt'
import type { EmulatorAdmin, KeyQuery } from './key-browser'
import { ADMIN_REQUEST_TOPIC, AdminRequestError, parseAdminRequest, toWireDetails, type AdminReply } from './wire'
import type { FilteredLogger } from '../logger'
import { emulatorMqttClient, firstConnect, type EmulatorBrokerOptions } from '../service/mqtt-client'
import { within } from '../within'

export interface AdminServerOptions extends EmulatorBrokerOptions {
  admin: EmulatorAdmin
  nodeId: string
  log: FilteredLogger
  /** Key listings run at once; more are refused with a "busy" error. Default 8. */
  maxConcurrent?: number
}

const DEFAULT_MAX_CONCURRENT = 8

/**
 * Serves the admin channel over MQTT (the CLI's `--admin`) on a connection of its own, so that a
 * slow key scan or a bad admin request never touches the state store service's connection.
 * For development only: whoever may publish to ADMIN_REQUEST_TOPIC reads every key.
 * Neither keys nor values are logged.
 */
export class AdminServer {
  private stopped = false
  /** Key listings running: scans yield between steps, so without a bound a burst of them would all run at once. */
  private running = 0

  private constructor(
    private readonly client: MqttClient,
    private readonly options: AdminServerOptions,
  ) {
    client.on('error', (err) => options.log('warn', `admin channel connection: ${err.message}`))
    client.on('message', (_topic, payload, packet) => void this.answer(payload, packet))
  }

  static async start(options: AdminServerOptions): Promise<AdminServer> {
    const client = emulatorMqttClient(options, 'aio-statestore-emulator-admin')
    const server = new AdminServer(client, options)
    try {
      await firstConnect(client, options, 'admin channel: ')
      const granted = await client.subscribeAsync(ADMIN_REQUEST_TOPIC, { qos: 1 })
      const qos = granted[0]?.qos
      if (qos !== 0 && qos !== 1) throw new Error(`the broker refused the subscription to ${ADMIN_REQUEST_TOPIC}`)
    } catch (err) {
      await server.stop()
      throw err
    }
    options.log(
      'info',
      `admin channel open on ${ADMIN_REQUEST_TOPIC} (development only: anyone who can publish there reads every key)`,
    )
    return server
  }

  private async answer(payload: Buffer, packet: IPublishPacket): Promise<void> {
    const responseTopic = packet.properties?.responseTopic
    const correlationData = packet.properties?.correlationData
    if (!responseTopic) {
      this.options.log('info', 'admin request without a response topic dropped')
      return
    }
    let reply: AdminReply
    try {
      reply = { ok: true, result: await this.run(payload) }
    } catch (err) {
      if (!(err instanceof AdminRequestError))
        this.options.log('warn', `admin request failed: ${(err as Error).message}`)
      else this.options.log('info', `admin request refused: ${err.message}`)
      reply = { ok: false, error: (err as Error).message }
    }
    if (this.stopped) return
    this.client.publish(
      responseTopic,
      JSON.stringify(reply),
      { qos: 1, properties: { contentType: 'application/json', ...(correlationData ? { correlationData } : {}) } },
      (err) => {
        if (err && !this.stopped) this.options.log('warn', `admin answer not delivered: ${err.message}`)
      },
    )
  }

  private async run(payload: Buffer) {
    const request = parseAdminRequest(payload)
    const admin = this.options.admin
    switch (request.op) {
      case 'hello':
        return { nodeId: this.options.nodeId, keyCount: admin.keyCount }
      case 'listKeys':
        return this.scan(request.query)
      case 'inspect': {
        const details = admin.inspect(Buffer.from(request.keyHex, 'hex'), request.clientId)
        return details ? toWireDetails(details) : null
      }
    }
  }

  /**
   * A key listing within the bound. Only listings count: they are the requests that run for a while
   * (a scan that yields between steps); `hello` and `inspect` are answered at once, so a discovery
   * by another editor still finds this emulator while listings run.
   */
  private async scan(query: KeyQuery) {
    const max = this.options.maxConcurrent ?? DEFAULT_MAX_CONCURRENT
    if (this.running >= max)
      throw new AdminRequestError(`busy: ${max} admin requests are running; try again when one has been answered`)
    this.running++
    try {
      return await this.options.admin.listKeys(query)
    } finally {
      this.running--
    }
  }

  /** Bounded in time; leaves no socket or timer. */
  async stop(): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    await within(this.client.endAsync(), 1000)
    if (!this.client.disconnected) this.client.end(true)
  }
}

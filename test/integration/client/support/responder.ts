import { connect, type IPublishPacket, type MqttClient } from 'mqtt'
import { HybridLogicalClock } from '../../../../src/hlc'
import { notificationTopic, Prop, REQUEST_TOPIC } from '../../../../src/protocol'
import { decodeExact } from '../../../../src/resp'
import { scaled } from '../../../support/deadline'

/** A request as the responder saw it. */
export interface SeenRequest {
  payload: Buffer
  /** The RESP3 words of the payload, as latin1 text (verbs, keys and values in tests are ASCII). */
  words: string[]
  qos: number
  properties: NonNullable<IPublishPacket['properties']>
  correlation: Buffer | undefined
  responseTopic: string | undefined
  user: Record<string, string>
}

export interface Answer {
  payload: Buffer
  /** Replaces the default user properties (`__stat=200`, `__protVer=1.0`, `__ts=<now>`) when given. */
  user?: Record<string, string>
  /** Merged into the default user properties. */
  extraUser?: Record<string, string>
  correlation?: Buffer
  topic?: string
}

/** What to do with one request: answers to publish (several = duplicates), or none. */
export type Handler = (
  request: SeenRequest,
) => Answer | Answer[] | null | undefined | Promise<Answer | Answer[] | null | undefined>

/**
 * A stand-in state store for the client's unit tests: an mqtt.js client on a real broker that
 * answers each request with whatever the test says, including things a real service never does
 * (missing headers, duplicates, late or foreign answers).
 */
export class Responder {
  readonly requests: SeenRequest[] = []
  readonly clock = new HybridLogicalClock({ nodeId: 'responder' })
  private waiters: Array<() => void> = []

  private constructor(
    private readonly mqtt: MqttClient,
    public handler: Handler,
  ) {}

  static async start(
    brokerUrl: string,
    handler: Handler,
    clientId = `responder-${process.pid}-${Math.random().toString(16).slice(2)}`,
  ): Promise<Responder> {
    const mqtt = connect(brokerUrl, { protocolVersion: 5, clientId, reconnectPeriod: 100, connectTimeout: 5000 })
    mqtt.on('error', () => {})
    mqtt.on('connect', () => (mqtt.stream as { setNoDelay?: (on: boolean) => void }).setNoDelay?.(true))
    const responder = new Responder(mqtt, handler)
    await new Promise<void>((resolve, reject) => {
      mqtt.once('connect', () => resolve())
      mqtt.once('error', reject)
    })
    await mqtt.subscribeAsync(REQUEST_TOPIC, { qos: 1 })
    mqtt.on('message', (_topic, payload, packet) => void responder.onRequest(payload, packet))
    return responder
  }

  /** The default successful envelope for a payload. */
  answer(payload: Buffer, extraUser: Record<string, string> = {}): Answer {
    return { payload, extraUser }
  }

  /** Resolves once `count` requests have been seen in total. */
  async waitForRequests(count: number, timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + scaled(timeoutMs)
    while (this.requests.length < count) {
      if (Date.now() > deadline)
        throw new Error(`expected ${count} requests within ${timeoutMs} ms (scaled), saw ${this.requests.length}`)
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 20)
        this.waiters.push(() => {
          clearTimeout(t)
          resolve()
        })
      })
    }
  }

  /** Publishes one answer to the request's response topic (or elsewhere). */
  async send(request: SeenRequest, answer: Answer): Promise<void> {
    const user = answer.user ?? {
      [Prop.status]: '200',
      [Prop.protocolVersion]: '1.0',
      [Prop.timestamp]: this.clock.tick().toString(),
      ...answer.extraUser,
    }
    const topic = answer.topic ?? request.responseTopic
    if (!topic) return
    await this.mqtt.publishAsync(topic, answer.payload, {
      qos: 1,
      properties: {
        ...((answer.correlation ?? request.correlation)
          ? { correlationData: answer.correlation ?? request.correlation }
          : {}),
        contentType: 'application/octet-stream',
        userProperties: user,
      },
    })
  }

  /** Publishes a notification for `clientId` about `key`. */
  async notify(
    clientId: string,
    key: string | Buffer,
    payload: Buffer,
    user: Record<string, string> = { [Prop.timestamp]: this.clock.tick().toString() },
  ): Promise<void> {
    // mqtt.js never acknowledges a publish with an empty user-property map, so leave it out then.
    const properties = Object.keys(user).length > 0 ? { userProperties: user } : {}
    await this.mqtt.publishAsync(notificationTopic(clientId, Buffer.from(key)), payload, { qos: 1, properties })
  }

  async stop(): Promise<void> {
    await this.mqtt.endAsync(true)
  }

  private async onRequest(payload: Buffer, packet: IPublishPacket): Promise<void> {
    const properties = packet.properties ?? {}
    const user: Record<string, string> = {}
    for (const [k, v] of Object.entries(properties.userProperties ?? {})) user[k] = Array.isArray(v) ? v[0]! : v
    let words: string[] = []
    try {
      const decoded = decodeExact(payload)
      if (decoded.kind === 'array')
        words = decoded.value.map((w) => (w.kind === 'bulk' ? w.value.toString('latin1') : `<${w.kind}>`))
    } catch {
      words = ['<bad RESP>']
    }
    const request: SeenRequest = {
      payload,
      words,
      qos: packet.qos,
      properties,
      correlation: properties.correlationData,
      responseTopic: properties.responseTopic,
      user,
    }
    this.requests.push(request)
    for (const wake of this.waiters.splice(0)) wake()
    const result = await this.handler(request)
    if (!result) return
    for (const answer of Array.isArray(result) ? result : [result]) await this.send(request, answer)
  }
}

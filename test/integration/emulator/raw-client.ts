import { randomBytes } from 'node:crypto'
import type { Socket } from 'node:net'
import mqtt, { type IClientOptions, type IDisconnectPacket, type IPublishPacket, type MqttClient } from 'mqtt'
import { Hlc, HybridLogicalClock } from '../../../src/hlc'
import {
  CONTENT_TYPE,
  notificationFilter,
  parseNotificationTopic,
  PROTOCOL_VERSION,
  Prop,
  REQUEST_TOPIC,
  responseTopicFor,
} from '../../../src/protocol'
import { scaled } from '../../support/deadline'

/**
 * A client that speaks the state store protocol by hand, as a test sees it: raw payloads out,
 * whole MQTT packets back. Every request gets fresh correlation data unless told otherwise.
 */

/** The PUBACK reason code a QoS 1 publish ends with: 0 when accepted, -1 when it failed without one. */
export function pubackCode(published: Promise<unknown>): Promise<number> {
  return published.then(
    (packet) => (packet as { reasonCode?: number } | undefined)?.reasonCode ?? 0,
    (err: Error & { code?: number }) => err.code ?? -1,
  )
}

/**
 * A state store request (or an admin one, by `topic`) published by hand from any MQTT client, with
 * the Response Topic and correlation data given and the properties an SDK sends: its PUBACK code.
 */
export function publishRequest(
  client: MqttClient,
  topic: string,
  payload: Buffer,
  responseTopic: string,
  correlationData: Buffer,
): Promise<number> {
  const properties = {
    responseTopic,
    correlationData,
    contentType: CONTENT_TYPE,
    userProperties: {
      [Prop.timestamp]: new Hlc(Date.now(), 0, client.options.clientId ?? 'raw').toString(),
      [Prop.protocolVersion]: PROTOCOL_VERSION,
    },
    messageExpiryInterval: 10,
  }
  return pubackCode(client.publishAsync(topic, payload, { qos: 1, properties }))
}

export type Props = NonNullable<IPublishPacket['properties']>
export type UserProps = NonNullable<Props['userProperties']>

export interface Received {
  topic: string
  payload: Buffer
  qos: number
  properties: Props
  /** A user property's value (first, if repeated). */
  prop(name: string): string | undefined
}

export interface Notified extends Received {
  key: Buffer
}

export interface SendOptions {
  /** Replaces the default user properties (`__ts`, `__srcId`, `__protVer`, `$partition`); null values are removed. */
  props?: Record<string, string | string[] | null>
  correlation?: Buffer | null
  responseTopic?: string | null
  /** Message Expiry in seconds; null for none. Default 10. */
  expiry?: number | null
  /** Default 1, as the protocol requires. */
  qos?: 0 | 1 | 2
  timeoutMs?: number
}

const DEFAULT_TIMEOUT_MS = 4000

export class RawClient {
  readonly clock = new HybridLogicalClock()
  readonly responseTopic: string
  readonly notifications: Notified[] = []
  /** Everything that arrived on a topic other than the response and notification topics. */
  readonly others: Received[] = []
  /** Correlation data (hex) → callers waiting for a response, first come first served (a re-send waits behind the original). */
  private readonly waiting = new Map<
    string,
    Array<{ resolve: (r: Received) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>
  >()
  private readonly notificationWaiters: Array<() => void> = []
  /** Resolves with the DISCONNECT the broker sent, if it sends one. */
  readonly disconnected: Promise<IDisconnectPacket>

  private constructor(
    readonly client: MqttClient,
    readonly clientId: string,
  ) {
    this.responseTopic = responseTopicFor(clientId)
    this.disconnected = new Promise((resolve) => client.once('disconnect', resolve))
    client.on('message', (topic, payload, packet) => this.onMessage(topic, payload, packet))
  }

  /** Connects and subscribes to its response topic and (unless told not to, as the Go SDK) its notification filter. */
  static async connect(
    url: string,
    clientId = `raw-${randomBytes(4).toString('hex')}`,
    options: IClientOptions = {},
    subscribe: { notifications?: string | false } = {},
  ): Promise<RawClient> {
    const client = mqtt.connect(url, {
      protocolVersion: 5,
      clientId,
      reconnectPeriod: 0,
      connectTimeout: 5000,
      ...options,
    })
    client.on('connect', () => (client.stream as Socket).setNoDelay?.(true))
    await new Promise<void>((resolve, reject) => {
      client.once('connect', () => resolve())
      client.once('error', reject)
    })
    client.on('error', () => {})
    const raw = new RawClient(client, clientId)
    const filter = subscribe.notifications === undefined ? notificationFilter(clientId) : subscribe.notifications
    await client.subscribeAsync({ [raw.responseTopic]: { qos: 1 }, ...(filter ? { [filter]: { qos: 1 } } : {}) })
    return raw
  }

  /** The user properties an SDK sends, with a fresh `__ts`. */
  defaultProps(): Record<string, string> {
    return {
      [Prop.timestamp]: this.clock.tick().toString(),
      [Prop.sourceId]: this.clientId,
      [Prop.protocolVersion]: PROTOCOL_VERSION,
      [Prop.partition]: this.clientId,
    }
  }

  /** Publishes a request and resolves with its response (by correlation data). */
  request(payload: Buffer, options: SendOptions = {}): Promise<Received> {
    const correlation = options.correlation === undefined ? randomBytes(16) : options.correlation
    const id = correlation?.toString('hex') ?? ''
    const promise = new Promise<Received>((resolve, reject) => {
      const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS
      const waiter = {
        resolve,
        reject,
        timer: setTimeout(() => {
          const list = this.waiting.get(id) ?? []
          list.splice(list.indexOf(waiter), 1)
          if (list.length === 0) this.waiting.delete(id)
          reject(
            new Error(
              `no response within ${timeoutMs} ms (scaled) to ${JSON.stringify(payload.subarray(0, 60).toString('latin1'))}`,
            ),
          )
        }, scaled(timeoutMs)),
      }
      const list = this.waiting.get(id)
      if (list) list.push(waiter)
      else this.waiting.set(id, [waiter])
    })
    this.send(payload, { ...options, correlation })
    return promise
  }

  /** Publishes a request without waiting for anything. */
  send(payload: Buffer, options: SendOptions = {}): void {
    const userProperties: UserProps = { ...this.defaultProps() }
    for (const [k, v] of Object.entries(options.props ?? {})) {
      if (v === null) delete userProperties[k]
      else userProperties[k] = v
    }
    const correlation = options.correlation === undefined ? randomBytes(16) : options.correlation
    const responseTopic = options.responseTopic === undefined ? this.responseTopic : options.responseTopic
    const expiry = options.expiry === undefined ? 10 : options.expiry
    this.client.publish(REQUEST_TOPIC, payload, {
      qos: options.qos ?? 1,
      properties: {
        ...(responseTopic !== null ? { responseTopic } : {}),
        ...(correlation !== null ? { correlationData: correlation } : {}),
        ...(expiry !== null ? { messageExpiryInterval: expiry } : {}),
        contentType: CONTENT_TYPE,
        userProperties,
      },
    })
  }

  /** Resolves with the next notification not yet taken, in arrival order. */
  async nextNotification(timeoutMs = DEFAULT_TIMEOUT_MS): Promise<Notified> {
    const deadline = Date.now() + scaled(timeoutMs)
    while (this.notifications.length === 0) {
      const left = deadline - Date.now()
      if (left <= 0) throw new Error(`no notification within ${timeoutMs} ms (scaled)`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left)
        this.notificationWaiters.push(() => {
          clearTimeout(timer)
          resolve()
        })
      })
    }
    return this.notifications.shift()!
  }

  async close(): Promise<void> {
    for (const list of this.waiting.values()) {
      for (const w of list) {
        clearTimeout(w.timer)
        w.reject(new Error('closed'))
      }
    }
    this.waiting.clear()
    await this.client.endAsync(true)
  }

  private onMessage(topic: string, payload: Buffer, packet: IPublishPacket): void {
    const properties = packet.properties ?? {}
    const received: Received = {
      topic,
      payload,
      qos: packet.qos,
      properties,
      prop: (name) => {
        const v = properties.userProperties?.[name]
        return Array.isArray(v) ? v[0] : v
      },
    }
    if (topic === this.responseTopic) {
      const id = properties.correlationData?.toString('hex') ?? ''
      const list = this.waiting.get(id)
      const w = list?.shift()
      if (w) {
        if (list!.length === 0) this.waiting.delete(id)
        clearTimeout(w.timer)
        w.resolve(received)
      } else {
        this.others.push(received)
      }
      return
    }
    const parsed = parseNotificationTopic(topic)
    if (parsed && parsed.clientId === this.clientId) {
      this.notifications.push({ ...received, key: parsed.key })
      for (const w of this.notificationWaiters.splice(0)) w()
      return
    }
    this.others.push(received)
  }
}

export { sleep } from '../../support/wait'

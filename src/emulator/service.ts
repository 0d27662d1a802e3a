import { randomBytes } from 'node:crypto'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import mqtt, { type IClientOptions, type IPublishPacket, type MqttClient } from 'mqtt'
import { CONTENT_TYPE, PROTOCOL_VERSION, Prop, REQUEST_TOPIC, isAllowedResponseTopic, publishPacketSize, type PublishPropertiesForSize } from '../protocol'
import { DedupCache, type CachedAnswer, type DedupEntry } from './dedup'
import type { Answer, Executor, RequestContext } from './execute'
import type { Logger } from './log'
import type { OutgoingNotification } from './notifications'
import type { PersistenceLog } from './persistence'
import type { DirectMessage } from './broker'
import { coalesceWrites } from '../transport/coalesce-writes'
import { within } from './util'

/**
 * The MQTT side of the emulator: one ordinary MQTT 5 client that takes requests from the request
 * topic, answers them on their Response Topic, and publishes key notifications.
 */

export interface ServiceOptions {
  brokerUrl: string
  username?: string
  password?: string
  executor: Executor
  dedup: DedupCache
  persistence: PersistenceLog | null
  log: Logger
  /** Requests waiting for the disk at once; beyond it, reading from the broker pauses. */
  maxInFlight?: number
  connectTimeoutMs?: number
  /** The embedded broker's way to reach a client that has not subscribed to its notifications. */
  deliverDirect?: (clientId: string, message: DirectMessage) => boolean
  /** Connects through this stream (a broker in this process) instead of to `brokerUrl`. */
  connectStream?: () => Duplex
}

/** How long a request without Message Expiry is remembered for deduplication. */
const DEFAULT_DEDUP_WINDOW_MS = 10_000
/** An MQTT topic is a UTF-8 string of at most 65535 bytes. */
const MAX_TOPIC_BYTES = 65535

export class StateStoreService {
  private readonly client: MqttClient
  private readonly maxInFlight: number
  private inFlight = 0
  /** The broker-read callback held back while too many requests are in flight. */
  private paused: (() => void) | null = null
  private stopped = false
  private readonly idle = new Set<() => void>()
  /** The broker's Maximum Packet Size from the last CONNACK; undefined when it set none. */
  private maxPacketSize: number | undefined

  private constructor(private readonly options: ServiceOptions) {
    this.maxInFlight = options.maxInFlight ?? 10_000
    const clientOptions: IClientOptions = {
      protocolVersion: 5,
      clientId: `aio-statestore-emulator-${randomBytes(6).toString('hex')}`,
      clean: true,
      keepalive: 30,
      reconnectPeriod: 1000,
      connectTimeout: options.connectTimeoutMs ?? 10_000,
      ...(options.username !== undefined ? { username: options.username } : {}),
      ...(options.password !== undefined ? { password: options.password } : {}),
    }
    const connectStream = options.connectStream
    this.client = connectStream ? new mqtt.MqttClient(() => connectStream(), clientOptions) : mqtt.connect(options.brokerUrl, clientOptions)
    this.client.on('connect', (connack) => {
      ;(this.client.stream as Socket).setNoDelay?.(true)
      coalesceWrites(this.client.stream)
      this.maxPacketSize = connack.properties?.maximumPacketSize
    })
    this.client.on('error', (err) => options.log('warn', `service connection: ${err.message}`))
    this.client.on('offline', () => options.log('warn', `service connection to ${options.brokerUrl} lost; reconnecting`))
    // Requests are handled here rather than on 'message' so that reading can pause under load.
    this.client.handleMessage = (packet, callback) => {
      try {
        this.onPublish(packet)
      } catch (err) {
        options.log('error', `request handling failed: ${(err as Error).stack ?? err}`)
      }
      if (this.inFlight < this.maxInFlight) return callback()
      options.log('debug', `${this.inFlight} requests wait for the disk; reading from the broker paused`)
      this.paused = callback
    }
  }

  /** Connects and subscribes; resolves when requests are being served. */
  static async start(options: ServiceOptions): Promise<StateStoreService> {
    const service = new StateStoreService(options)
    try {
      const timeoutMs = options.connectTimeoutMs ?? 10_000
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => done(new Error(`no answer from the broker at ${options.brokerUrl} within ${timeoutMs} ms`)), timeoutMs)
        // A refused CONNECT or an unreachable broker fails the start instead of being retried forever.
        const onError = (err: Error) => done(err)
        const onConnect = () => done(null)
        const done = (err: Error | null) => {
          clearTimeout(timer)
          service.client.off('error', onError)
          service.client.off('connect', onConnect)
          if (err) reject(err)
          else resolve()
        }
        service.client.on('error', onError)
        service.client.on('connect', onConnect)
      })
      const granted = await service.client.subscribeAsync(REQUEST_TOPIC, { qos: 1 })
      if (!granted[0] || granted[0].qos !== 1) throw new Error(`the broker refused the subscription to ${REQUEST_TOPIC} (${JSON.stringify(granted)})`)
    } catch (err) {
      await service.client.endAsync(true)
      throw err
    }
    return service
  }

  /** Publishes one key notification, at QoS 1, with the key's version. */
  notify(n: OutgoingNotification): void {
    if (this.stopped) return
    if (Buffer.byteLength(n.topic, 'utf8') > MAX_TOPIC_BYTES) {
      this.options.log('warn', `notification for client ${JSON.stringify(n.clientId)} dropped: a ${n.key.length}-byte key makes a topic longer than MQTT allows`)
      return
    }
    const properties = { contentType: CONTENT_TYPE, userProperties: { [Prop.timestamp]: n.version.toString(), [Prop.protocolVersion]: PROTOCOL_VERSION } }
    if (this.options.deliverDirect?.(n.clientId, { topic: n.topic, payload: n.payload, properties })) return
    if (this.tooLarge(n.topic, n.payload, properties, `notification for client ${JSON.stringify(n.clientId)}`)) return
    this.client.publish(n.topic, n.payload, { qos: 1, properties })
  }

  /**
   * A packet over the broker's Maximum Packet Size gets this connection closed, and mqtt.js would
   * send it again after every reconnect: one such packet would take the service down for good.
   */
  private tooLarge(topic: string, payload: Buffer, properties: PublishPropertiesForSize, what: string): boolean {
    const max = this.maxPacketSize
    if (max === undefined) return false
    const size = publishPacketSize(topic, payload.length, properties)
    if (size <= max) return false
    this.options.log('warn', `${what} dropped: ${size} bytes exceed the broker's Maximum Packet Size of ${max}`)
    return true
  }

  /** Stops taking requests, waits for those in flight (bounded), and disconnects. */
  async stop(): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    this.paused?.()
    this.paused = null
    if (this.inFlight > 0) await within(new Promise<void>((resolve) => this.idle.add(resolve)), 2000)
    // A graceful end waits for the broker to acknowledge what was sent; a second end() would be a
    // no-op, so a broker that does not answer in time gets its socket cut instead.
    await within(this.client.endAsync(false), 1000)
    if (!this.client.disconnected) this.client.stream?.destroy()
  }

  private onPublish(packet: IPublishPacket): void {
    if (this.stopped || packet.topic !== REQUEST_TOPIC) return
    const { log } = this.options
    const props = packet.properties ?? {}
    const responseTopic = props.responseTopic
    const correlation = props.correlationData
    const prop = userProps(props.userProperties)
    const who = callerOf(prop, responseTopic)
    if (!responseTopic) return log('warn', `request from ${JSON.stringify(who)} dropped: no Response Topic`)
    if (!correlation || correlation.length === 0) return log('warn', `request from ${JSON.stringify(who)} dropped: no Correlation Data`)
    if (!isAllowedResponseTopic(responseTopic)) {
      return log('warn', `request from ${JSON.stringify(who)} dropped: the Response Topic ${JSON.stringify(responseTopic)} is reserved`)
    }
    const payload = Buffer.isBuffer(packet.payload) ? packet.payload : Buffer.from(packet.payload)
    const now = Date.now()
    const expirySec = props.messageExpiryInterval
    const expiresAt = now + (expirySec !== undefined ? expirySec * 1000 : DEFAULT_DEDUP_WINDOW_MS)
    const reply = { responseTopic, correlation, hasExpiry: expirySec !== undefined }
    const dedupId = DedupCache.idOf(responseTopic, correlation)
    const seen = this.options.dedup.lookup(dedupId, now)
    if (seen.state === 'done') {
      if (log.enabled('debug')) log('debug', `request from ${JSON.stringify(who)} is a re-send; answered from the cache`)
      return this.respond(reply, seen.entry.answer!, seen.entry.expiresAt)
    }
    if (seen.state === 'pending') {
      const entry = seen.entry
      entry.waiters.push((answer) => answer && this.respond(reply, answer, entry.expiresAt))
      return
    }
    const entry = this.options.dedup.begin(dedupId, expiresAt, now)
    let answer: Answer
    try {
      answer = this.options.executor.execute(payload, { prop, clientId: who } satisfies RequestContext)
    } catch (err) {
      // A bug, not a bad request: say so loudly, answer nothing, keep serving.
      log('error', `request from ${JSON.stringify(who)} failed: ${(err as Error).stack ?? err}`)
      this.options.dedup.complete(entry, null)
      return
    }
    if (answer.error) {
      log('info', `refused ${answer.command?.verb ?? 'request'} from ${JSON.stringify(who)}: -ERR ${answer.error.code} (${answer.error.detail})`)
    }
    const cached: CachedAnswer = { payload: answer.payload, timestamp: answer.timestamp }
    if (answer.durableSeq === undefined || !this.options.persistence) return this.finish(entry, reply, cached)
    this.inFlight++
    this.options.persistence.whenDurable(answer.durableSeq).then(
      () => this.finish(entry, reply, cached),
      (err: Error) => {
        log('error', `request from ${JSON.stringify(who)} not answered: it could not be made durable (${err.message})`)
        this.options.dedup.complete(entry, null)
      },
    ).finally(() => this.settled())
  }

  private finish(entry: DedupEntry, reply: ReplyTo, answer: CachedAnswer): void {
    this.options.dedup.complete(entry, answer)
    this.respond(reply, answer, entry.expiresAt)
  }

  private settled(): void {
    this.inFlight--
    if (this.paused && this.inFlight < this.maxInFlight / 2) {
      const resume = this.paused
      this.paused = null
      resume()
    }
    if (this.inFlight === 0) {
      for (const resolve of this.idle) resolve()
      this.idle.clear()
    }
  }

  private respond(reply: ReplyTo, answer: CachedAnswer, expiresAt: number): void {
    const userProperties: Record<string, string> = { [Prop.status]: '200', [Prop.protocolVersion]: PROTOCOL_VERSION }
    if (answer.timestamp !== undefined) userProperties[Prop.timestamp] = answer.timestamp
    let messageExpiryInterval: number | undefined
    if (reply.hasExpiry) {
      messageExpiryInterval = Math.ceil((expiresAt - Date.now()) / 1000)
      if (messageExpiryInterval <= 0) {
        this.options.log('debug', `answer on ${reply.responseTopic} dropped: the request expired`)
        return
      }
    }
    const properties = {
      correlationData: reply.correlation,
      contentType: CONTENT_TYPE,
      userProperties,
      ...(messageExpiryInterval !== undefined ? { messageExpiryInterval } : {}),
    }
    if (this.tooLarge(reply.responseTopic, answer.payload, properties, `answer on ${reply.responseTopic.slice(0, 200)}`)) return
    this.client.publish(reply.responseTopic, answer.payload, { qos: 1, properties })
  }
}

interface ReplyTo {
  responseTopic: string
  correlation: Buffer
  hasExpiry: boolean
}

type UserProperties = NonNullable<NonNullable<IPublishPacket['properties']>['userProperties']>

/** A user property lookup; a repeated property counts by its first value. */
function userProps(props: UserProperties | undefined): (name: string) => string | undefined {
  return (name) => {
    if (!props || !Object.hasOwn(props, name)) return undefined
    const v = props[name]
    return Array.isArray(v) ? v[0] : v
  }
}

/**
 * The caller's client id: `__srcId` as the SDKs send it, else `$partition` or `__invId`, else the
 * level after `clients/` in the response topic, the convention every SDK follows.
 */
function callerOf(prop: (name: string) => string | undefined, responseTopic: string | undefined): string {
  for (const name of [Prop.sourceId, Prop.partition, Prop.invokerId]) {
    const v = prop(name)
    if (v) return v
  }
  const levels = responseTopic?.split('/') ?? []
  if (levels[0] === 'clients' && levels[1]) return levels[1]
  return responseTopic ?? ''
}

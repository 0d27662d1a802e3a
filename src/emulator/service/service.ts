import type { IPublishPacket, MqttClient } from 'mqtt'
import { shownUrl } from '../../diagnostics/log'
import {
  CONTENT_TYPE,
  MAX_TOPIC_BYTES,
  PROTOCOL_VERSION,
  Prop,
  REQUEST_TOPIC,
  Reply,
  SERVICE_PROBE_KEY,
  publishPacketSize,
  responseTopicRefusal,
  userProperty,
  type PublishPropertiesForSize,
} from '../../protocol'
import {
  dialectOfRequestTopic,
  dialectPropertyName,
  PREVIEW_REQUEST_TOPIC,
  responseUserProperties,
  type Dialect,
} from '../../protocol'
import { accessOf } from '../core/commands'
import { DedupCache, type CachedAnswer, type DedupEntry } from '../core/dedup'
import { RequestPrint } from '../core/request-print'
import type { Answer, Executor, RequestContext } from '../core/execute'
import type { FilteredLogger } from '../logger'
import { callerOf, describeCaller } from '../core/identity'
import { EMULATOR_REFUSAL_TEXT, type EmulatorRefusalCode } from '../core/refusals'
import type { OutgoingNotification } from '../core/registrations'
import type { Journal } from '../journal/journal'
import type { DirectMessage } from '../broker/broker'
import { coalesceWrites } from '../../transport/coalesce-writes'
import { within } from '../within'
import { emulatorMqttClient, firstConnect, type EmulatorBrokerOptions } from './mqtt-client'

const PROBE_KEY = Buffer.from(SERVICE_PROBE_KEY)

/**
 * The MQTT side of the emulator: one ordinary MQTT 5 client that takes requests from the request
 * topic, answers them on their Response Topic, and publishes key notifications.
 */

export interface ServiceOptions extends EmulatorBrokerOptions {
  executor: Executor
  dedup: DedupCache
  /** The persistence journal, when there is one: an answer that changed it waits until that is on disk. */
  journal: Journal | null
  log: FilteredLogger
  /** Requests waiting for the disk at once; beyond it, reading from the broker pauses. */
  maxInFlight?: number
  /** The embedded broker's way to reach a client that has not subscribed to its notifications. */
  deliverDirect?: (clientId: string, message: DirectMessage) => boolean
}

/** How long a request without Message Expiry is remembered for deduplication. */
const DEFAULT_DEDUP_WINDOW_MS = 10_000

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
    this.client = emulatorMqttClient(options, 'aio-statestore-emulator')
    this.client.on('connect', (connack) => {
      coalesceWrites(this.client.stream)
      this.maxPacketSize = connack.properties?.maximumPacketSize
    })
    this.client.on('error', (err) => options.log('warn', `service connection: ${err.message}`))
    this.client.on('offline', () =>
      options.log('warn', `service connection to ${shownUrl(options.brokerUrl)} lost; reconnecting`),
    )
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
      await firstConnect(service.client, options)
      // At QoS 2, so that a request arrives with the QoS it was published with (a broker delivers at
      // the lower of the two) and one sent at QoS 0 or 2 can be refused. A broker without QoS 2
      // grants 1: QoS 2 requests then arrive as QoS 1 and are served.
      const granted = await service.client.subscribeAsync(REQUEST_TOPIC, { qos: 2 })
      const qos = granted[0]?.qos
      if (qos !== 1 && qos !== 2)
        throw new Error(`the broker refused the subscription to ${REQUEST_TOPIC} (${JSON.stringify(granted)})`)
      if (qos === 1)
        options.log(
          'info',
          `the broker grants QoS 1 at most: requests published with QoS 2 cannot be told apart and are served`,
        )
      // The 2023 preview dialect is served too; a broker that refuses its `$`-topic costs only that dialect.
      const preview = await service.client.subscribeAsync(PREVIEW_REQUEST_TOPIC, { qos: 2 })
      const previewQos = preview[0]?.qos
      if (previewQos !== 1 && previewQos !== 2)
        options.log(
          'warn',
          `the broker refused the subscription to ${PREVIEW_REQUEST_TOPIC}: the preview dialect is not served`,
        )
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
      this.options.log(
        'warn',
        `notification for client ${JSON.stringify(n.clientId)} dropped: a ${n.key.length}-byte key makes a topic ` +
          `longer than MQTT allows`,
      )
      return
    }
    const properties = {
      contentType: CONTENT_TYPE,
      userProperties: { [Prop.timestamp]: n.version.toString(), [Prop.protocolVersion]: PROTOCOL_VERSION },
    }
    // Through the broker's routing, as the real service publishes: every authorized subscriber to the
    // topic gets it (a monitoring tool, too). The registering client gets it even without a matching
    // subscription, where the broker is in this process (as the AIO broker does for Go and .NET).
    this.options.deliverDirect?.(n.clientId, { topic: n.topic, payload: n.payload, properties })
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
    const dialect = dialectOfRequestTopic(packet.topic)
    if (this.stopped || !dialect) return
    const { log } = this.options
    const props = packet.properties ?? {}
    const responseTopic = props.responseTopic
    const correlation = props.correlationData
    const prop = (name: string) => userProperty(props, dialectPropertyName(dialect, name))
    const caller = callerOf(prop, responseTopic)
    // Described only for a log line: most requests never need it.
    const who = () => describeCaller(caller, responseTopic)
    if (!responseTopic) return log('warn', `request from ${who()} dropped: no Response Topic`)
    if (!correlation || correlation.length === 0)
      return log('warn', `request from ${who()} dropped: no Correlation Data`)
    const refusal = responseTopicRefusal(responseTopic)
    if (refusal) {
      // The state store disconnects such a client; a client of another broker can only be ignored.
      return log(
        'warn',
        `request from ${who()} dropped: its Response Topic ${JSON.stringify(responseTopic.slice(0, 200))} is not ` +
          `permitted (${refusal})`,
      )
    }
    const payload = Buffer.isBuffer(packet.payload) ? packet.payload : Buffer.from(packet.payload)
    const now = Date.now()
    // A Message Expiry of 0 is no expiry: mosquitto delivers it so (it drops the property), and the
    // Go SDK reads a zero timeout as the default. Taken literally it would expire before the answer.
    const expirySec = props.messageExpiryInterval || undefined
    const expiresAt = now + (expirySec !== undefined ? expirySec * 1000 : DEFAULT_DEDUP_WINDOW_MS)
    const reply = { responseTopic, correlation, hasExpiry: expirySec !== undefined, dialect }
    if (packet.qos !== 1) return this.refuse(reply, expiresAt, who(), 'NotQos1', `published with QoS ${packet.qos}`)
    const dedupId = DedupCache.idOf(responseTopic, correlation)
    const request = RequestPrint.of(payload, props.userProperties)
    const seen = this.options.dedup.lookup(dedupId, request, now)
    if (seen.state === 'conflict') {
      // Neither executed nor answered from the cache: the first request keeps its entry for its own re-sends.
      return this.refuse(
        reply,
        expiresAt,
        who(),
        'CorrelationReused',
        `its correlation data ${correlation.toString('hex').slice(0, 64)} was used by another request`,
      )
    }
    if (seen.state !== 'new') {
      // A re-send: answered with the first answer, now or once the first is answered (not at all if it gets none).
      if (log.enabled('debug')) log('debug', `request from ${who()} is a re-send; answered from the cache`)
      const entry = seen.entry
      this.options.dedup.whenAnswered(entry, (answer) => answer && this.respond(reply, answer, entry.expiresAt))
      return
    }
    const entry = this.options.dedup.begin(dedupId, request, expiresAt, now)
    let answer: Answer
    let durableSeq: number | undefined
    try {
      const journal = this.options.journal
      answer = this.options.executor.execute(payload, { prop, clientId: caller, dialect } satisfies RequestContext)
      // A request that changed something persistent leaves its answer in the journal with the change,
      // so that a re-send to the emulator restarted after a crash is answered as it was, not executed again.
      if (journal && answer.wrote) {
        journal.recordAnswer({
          id: dedupId,
          request: request.serialize(),
          expiresAt,
          payload: answer.payload,
          timestamp: answer.timestamp,
        })
      }
      // Any answer, a read's too, waits until every change it wrote or may have seen is on disk: an
      // answer never shows a write that a crash then loses. Without a sync under way it goes at once.
      if (journal && journal.appendedSeq > journal.durableSeq) durableSeq = journal.appendedSeq
    } catch (err) {
      // A bug, not a bad request: say so loudly, answer nothing, keep serving.
      log('error', `request from ${who()} failed: ${(err as Error).stack ?? err}`)
      this.options.dedup.complete(entry, null)
      return
    }
    // A client's service check (a GET of the probe key at every connect) is no request of the user's.
    const level = answer.command?.verb === 'GET' && answer.command.key.equals(PROBE_KEY) ? 'debug' : 'info'
    if (answer.error) {
      log(
        level,
        `refused ${answer.command?.verb ?? 'request'} from ${who()}: -ERR ${answer.error.code} ` +
          `(${answer.error.detail})`,
      )
    } else if (answer.authorizedBy !== undefined) {
      // Info keeps every refusal and every write allowed; an allowed read or registration is debug, so
      // a client that reads many keys at its start (a context store) does not flood the log.
      const command = answer.command
      const allowedLevel = command && command.verb !== 'SCAN' && accessOf(command) === 'write' ? level : 'debug'
      if (log.enabled(allowedLevel))
        log(allowedLevel, `allowed ${answer.command?.verb ?? 'request'} from ${who()} by ${answer.authorizedBy}`)
    }
    if (answer.persistedBy !== undefined && log.enabled('debug'))
      log('debug', `SET from ${who()} persisted: ${answer.persistedBy}`)
    const cached: CachedAnswer = { payload: answer.payload, timestamp: answer.timestamp }
    if (durableSeq === undefined || !this.options.journal) return this.finish(entry, reply, cached)
    this.inFlight++
    this.options.journal
      .whenDurable(durableSeq)
      .then(
        () => this.finish(entry, reply, cached),
        (err: Error) => {
          log('error', `request from ${who()} not answered: it could not be made durable (${err.message})`)
          this.options.dedup.complete(entry, null)
        },
      )
      .finally(() => this.settled())
  }

  /** Answers a request the service refuses before executing it; it is not remembered for re-sends. */
  private refuse(reply: ReplyTo, expiresAt: number, who: string, code: EmulatorRefusalCode, detail: string): void {
    this.options.log('info', `refused request from ${who}: -ERR ${code} (${detail})`)
    this.respond(reply, { payload: Reply.error(EMULATOR_REFUSAL_TEXT[code]), timestamp: undefined }, expiresAt)
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
    const userProperties = responseUserProperties(reply.dialect, answer.timestamp)
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
      // mqtt-packet turns a PUBLISH with an empty user-property map into zero bytes, silently (a preview answer without
      // a version has one).
      ...(Object.keys(userProperties).length > 0 ? { userProperties } : {}),
      ...(messageExpiryInterval !== undefined ? { messageExpiryInterval } : {}),
    }
    if (
      this.tooLarge(reply.responseTopic, answer.payload, properties, `answer on ${reply.responseTopic.slice(0, 200)}`)
    )
      return
    this.client.publish(reply.responseTopic, answer.payload, { qos: 1, properties })
  }
}

interface ReplyTo {
  responseTopic: string
  correlation: Buffer
  hasExpiry: boolean
  /** Answers go out in the dialect the request came in. */
  dialect: Dialect
}

import {
  connect,
  DefaultMessageIdProvider,
  MqttClient,
  ReasonCodes,
  type IConnackPacket,
  type IPublishPacket,
} from 'mqtt'
import { ArgumentError, ConnectionError } from '../diagnostics/errors'
import { publishPacketSize } from '../protocol'
import { coalesceWrites } from '../transport/coalesce-writes'
import { setNoDelay } from '../transport/mqtt-settings'
import { storeWithoutCopy } from '../transport/store-without-copy'
import { writeWholePackets } from '../transport/whole-packets'
import { backoffDelay } from './backoff'
import { mqttOptions } from './mqtt-options'
import type { ResolvedOptions } from './options'
import { PeerDiagnosis } from './peer-diagnosis'
import { SAT_AUTH_METHOD, SatToken } from './sat-token'
import { SessionTakeover, takeoverReason } from './session-takeover'
import { TypedEmitter } from '../lang/typed-emitter'
import type { PublishProperties, Transport } from './transport'
import type { ConnectionProblem, ConnectionStatus } from './types'

export type ConnectionEvents = {
  status: [ConnectionStatus]
  /** Connected and every subscription acknowledged; `resumed` when the broker kept our session. */
  online: [{ resumed: boolean; first: boolean }]
  offline: []
  message: [topic: string, payload: Buffer, packet: IPublishPacket]
}

/** CONNACK / DISCONNECT reason codes that mean the credentials were refused. */
const AUTH_FAILED = new Set([0x86, 0x87, 0x8c])
const NO_MATCHING_SUBSCRIBERS = 0x10
const REAUTHENTICATE = 0x19
const SESSION_TAKEN_OVER = 0x8e
const CLOSE_BOUND_MS = 2000

/**
 * One mqtt.js v5 connection: its reconnect state machine (exponential backoff), K8S-SAT
 * authentication, TCP_NODELAY, the subscriptions the client needs (acknowledged before it reports
 * itself online), and an observable status. The mqtt.js options come from mqtt-options.ts, the
 * takeover backoff from session-takeover.ts, what is wrong with the peer from peer-diagnosis.ts. What it relies on
 * beyond mqtt.js's documented API is checked, one
 * behaviour per test, in test/integration/client/mqtt-internals.test.ts.
 */
export class Connection extends TypedEmitter<ConnectionEvents> implements Transport {
  private readonly mqtt: MqttClient
  private readonly ids = new TrackingMessageIdProvider()
  /**
   * Packet ids of publishes the broker acknowledged with 0x10 (no matching subscribers), until publish() reads them.
   */
  private readonly unheard = new Set<number>()
  private readonly token: SatToken | null
  private current: ConnectionStatus = { state: 'connecting' }
  private isOnline = false
  private everOnline = false
  private subscribedInSession = false
  private attempt = 0
  private lastError: Error | undefined
  private lastReason: string | undefined
  private authFailed = false
  private readonly peer: PeerDiagnosis
  private readonly takeover: SessionTakeover
  /** The broker sent DISCONNECT on this connection. */
  private brokerDisconnected = false
  private closing: Promise<void> | null = null
  /** The broker's Maximum Packet Size from the last CONNACK; undefined when it set none. */
  private maxPacketSize: number | undefined

  constructor(
    private readonly options: ResolvedOptions,
    private readonly subscriptions: string[],
  ) {
    super()
    this.token = options.satTokenFile ? new SatToken(options.satTokenFile) : null
    this.peer = new PeerDiagnosis(options.brokerUrl)
    this.takeover = new SessionTakeover(options.reconnectMinMs, options.reconnectMaxMs)
    const mqttOpts = mqttOptions(options, this.ids, this.token ? (this.readToken() ?? Buffer.alloc(0)) : undefined)
    const stream = options.connectStream
    this.mqtt = stream ? new MqttClient(() => stream(), mqttOpts) : connect(options.brokerUrl, mqttOpts)
    // We send no Topic Alias, so mqtt.js's deep copy of every request for its replay store buys nothing.
    storeWithoutCopy(this.mqtt)
    // One write per packet instead of one per field.
    writeWholePackets(this.mqtt)
    this.wire()
    // mqtt.js opened the first stream and wrote CONNECT before 'packetsend' had a listener.
    if (this.mqtt.stream) this.checkPeer(this.mqtt.stream)
    this.token?.watch(
      (token) => this.reauthenticate(token),
      (err) => options.logger('warn', `watching the service account token file failed: ${err.message}`),
    )
  }

  get status(): ConnectionStatus {
    return { ...this.current }
  }

  get online(): boolean {
    return this.isOnline
  }

  get closed(): boolean {
    return this.closing !== null
  }

  /**
   * Publishes at QoS 1. `onAck` gets the broker's refusal, if any, or `noSubscribers` when the
   * broker says nobody took the message (PUBACK 0x10: no state store service is subscribed), in
   * which case sending it again is safe. Returns the packet id when it was assigned at once, so a
   * request that times out while the connection is down can be taken out of the replay store.
   */
  publish(
    topic: string,
    payload: Buffer,
    properties: PublishProperties,
    onAck: (outcome: { error?: Error; noSubscribers?: boolean }) => void,
  ): number | undefined {
    const max = this.maxPacketSize
    if (max !== undefined) {
      const size = publishPacketSize(topic, payload.length, properties)
      if (size > max) {
        // The broker would disconnect us, and mqtt.js would send it again after every reconnect.
        onAck({
          error: new ArgumentError(
            `the request is ${size} bytes as an MQTT packet; the broker accepts at most ${max} (its Maximum Packet ` +
              `Size)`,
          ),
        })
        return undefined
      }
    }
    this.ids.last = undefined
    this.mqtt.publish(topic, payload, { qos: 1, properties }, (err, packet) => {
      if (err) {
        // A PUBACK reason code is the broker's answer; without one mqtt.js gave the publish up with its connection.
        const refused = typeof (err as { code?: unknown }).code === 'number'
        const code = refused ? 'BrokerRefused' : this.closing ? 'ConnectionClosed' : 'ConnectionLost'
        onAck({
          error: new ConnectionError(
            code,
            refused ? `the broker refused the request: ${err.message}` : `the request was given up: ${err.message}`,
            {
              cause: err,
            },
          ),
        })
        return
      }
      // mqtt.js hands this callback the stored PUBLISH, not the PUBACK: the reason code was noted on receipt.
      const id = (packet as { messageId?: number } | undefined)?.messageId
      const unheard = id !== undefined && this.unheard.delete(id)
      onAck(unheard ? { noSubscribers: true } : {})
    })
    return this.ids.last
  }

  /** Drops a publish that is still waiting in the replay store, so an abandoned request is not re-sent. */
  forget(messageId: number): void {
    if (!this.mqtt.connected && this.mqtt.outgoing[messageId]) this.mqtt.removeOutgoingMessage(messageId)
  }

  /** Bounded in time, idempotent; leaves no timer or socket behind. */
  close(): Promise<void> {
    if (!this.closing) this.closing = this.shutdown()
    return this.closing
  }

  private readToken(): Buffer | undefined {
    try {
      return this.token?.read()
    } catch (err) {
      this.options.logger('error', `cannot read the service account token: ${(err as Error).message}`)
      try {
        return this.token?.current()
      } catch {
        return undefined
      }
    }
  }

  private wire(): void {
    const client = this.mqtt
    client.on('packetsend', (packet) => {
      if (packet.cmd === 'connect') {
        setNoDelay(client.stream)
        this.checkPeer(client.stream)
      }
    })
    // Emitted before mqtt.js settles the publish, so publish() can tell "nobody subscribed" from a delivery.
    client.on('packetreceive', (packet) => {
      if (packet.cmd === 'puback' && packet.reasonCode === NO_MATCHING_SUBSCRIBERS && packet.messageId !== undefined)
        this.unheard.add(packet.messageId)
    })
    client.on('connect', (connack) => this.onConnect(connack))
    client.on('message', (topic, payload, packet) => {
      if (!this.closing) this.emit('message', topic, payload, packet)
    })
    client.on('error', (err) => {
      // Kept even after close: mqtt.js emits 'error' late, and an unhandled 'error' would throw.
      this.lastError = err
      const code = (err as { code?: unknown }).code
      this.lastReason = this.peer.onError(code, this.everOnline) ?? err.message
      if (typeof code === 'number' && AUTH_FAILED.has(code)) this.authFailed = true
    })
    client.on('disconnect', (packet) => {
      const code = packet.reasonCode ?? 0
      const text = packet.properties?.reasonString
      this.lastReason = `the broker disconnected: ${reasonText(code)}${text ? ` (${text})` : ''}`
      this.lastError = undefined
      if (AUTH_FAILED.has(code)) this.authFailed = true
      this.brokerDisconnected = true
      if (code === SESSION_TAKEN_OVER) this.onTakenOver(true)
    })
    client.on('close', () => this.onClose())
    client.on('reconnect', () => this.onReconnect())
  }

  private onConnect(connack: IConnackPacket): void {
    if (this.closing) return
    setNoDelay(this.mqtt.stream)
    coalesceWrites(this.mqtt.stream)
    this.maxPacketSize = connack.properties?.maximumPacketSize
    const attempts = this.attempt
    this.attempt = 0
    this.mqtt.options.reconnectPeriod = backoffDelay(0, this.options.reconnectMinMs, this.options.reconnectMaxMs)
    this.authFailed = false
    this.takeover.connected(attempts)
    this.brokerDisconnected = false
    this.lastError = undefined
    this.lastReason = undefined
    const resumed = connack.sessionPresent === true
    const done = () => {
      if (this.closing || !this.mqtt.connected) return
      const first = !this.everOnline
      this.isOnline = true
      this.everOnline = true
      this.subscribedInSession = true
      this.setStatus({ state: 'connected' })
      this.emit('online', { resumed, first })
    }
    if (resumed && this.subscribedInSession) {
      done()
      return
    }
    const map = Object.fromEntries(this.subscriptions.map((t) => [t, { qos: 1 as const }]))
    this.mqtt.subscribe(map, (err, granted) => {
      const refused = granted?.find((g) => (g.qos & 0x80) !== 0)
      if (err || refused) {
        this.lastReason =
          `the broker refused the subscription to ` +
          `${refused?.topic ?? this.subscriptions.join(', ')}: ${err?.message ?? reasonText(refused!.qos)}`
        this.lastError = err ?? undefined
        this.options.logger('error', this.lastReason)
        // Without its subscriptions the client cannot receive anything: drop the connection and retry with backoff.
        this.mqtt.stream.destroy()
        return
      }
      done()
    })
  }

  private onClose(): void {
    if (this.closing) return
    this.takeover.closed()
    const silent = this.peer.onClose(this.everOnline)
    if (silent) this.lastReason = silent
    const wasOnline = this.isOnline
    this.isOnline = false
    this.subscribedInSession = this.subscribedInSession && !this.options.cleanStart
    this.setStatus({
      state: 'disconnected',
      reason: this.lastReason ?? 'the connection closed',
      ...(this.lastError ? { error: this.lastError } : {}),
      ...this.problem(),
    })
    if (wasOnline) this.emit('offline')
  }

  private onReconnect(): void {
    if (this.closing) return
    this.attempt += 1
    // mqtt.js re-arms its reconnect timer with this period after the attempt fails.
    this.mqtt.options.reconnectPeriod = this.takeover.takenOver
      ? this.takeover.delay(this.attempt)
      : backoffDelay(this.attempt, this.options.reconnectMinMs, this.options.reconnectMaxMs)
    if (this.token && this.mqtt.options.properties) {
      const token = this.readToken()
      if (token) this.mqtt.options.properties.authenticationData = token
    }
    this.setStatus({
      state: 'reconnecting',
      ...(this.lastReason ? { reason: this.lastReason } : {}),
      ...this.problem(),
    })
  }

  private problem(): { problem?: ConnectionProblem } {
    const problem = this.authFailed
      ? 'authFailed'
      : (this.peer.problem ?? (this.takeover.takenOver ? 'takenOver' : undefined))
    return problem ? { problem } : {}
  }

  /** The broker closed a connection it had accepted, without DISCONNECT or a socket error. */
  private onPeerEnd(): void {
    if (this.closing || !this.mqtt.connected || this.brokerDisconnected || this.lastError) return
    if (this.takeover.droppedSoon()) this.onTakenOver(false)
  }

  /** `said`: the broker sent DISCONNECT 0x8E; otherwise it closed the connection soon after accepting it. */
  private onTakenOver(said: boolean): void {
    if (!this.takeover.record(said)) return
    this.lastReason = takeoverReason(this.options.clientId, said ? undefined : this.takeover.times)
    // Read by mqtt.js when the socket closes, which follows (mqtt.js's own close handler arms the reconnect first).
    this.mqtt.options.reconnectPeriod = this.takeover.delay(this.attempt)
    this.options.logger(
      'debug',
      `session taken over ${this.takeover.times} time(s) in a row: reconnecting in ` +
        `${this.mqtt.options.reconnectPeriod} ms`,
    )
  }

  private checkPeer(stream: MqttClient['stream']): void {
    this.peer.watch(
      stream,
      () => this.onPeerEnd(),
      (reason) => (this.lastReason = reason),
    )
  }

  /**
   * MQTT 5 re-authentication (AUTH 0x19) with a rotated token, so the broker does not drop us when the old one expires.
   */
  private reauthenticate(token: Buffer): void {
    if (this.closing) return
    if (this.mqtt.options.properties) this.mqtt.options.properties.authenticationData = token
    if (!this.mqtt.connected) return
    this.options.logger('info', 'the service account token changed: re-authenticating')
    // mqtt.js has no public call for an AUTH packet; _sendPacket writes it as is while connected.
    const client = this.mqtt as unknown as { _sendPacket(packet: object): void }
    client._sendPacket({
      cmd: 'auth',
      reasonCode: REAUTHENTICATE,
      properties: { authenticationMethod: SAT_AUTH_METHOD, authenticationData: token },
    })
  }

  private setStatus(status: ConnectionStatus): void {
    const c = this.current
    if (c.state === status.state && c.reason === status.reason && c.problem === status.problem) return
    this.current = status
    this.emit('status', { ...status })
  }

  private async shutdown(): Promise<void> {
    this.isOnline = false
    this.token?.close()
    this.current = { state: 'closed', reason: 'closed by the application' }
    this.emit('status', { ...this.current })
    const client = this.mqtt
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        client.stream?.destroy()
        resolve()
      }, CLOSE_BOUND_MS)
      // A graceful DISCONNECT only when it can go out at once; otherwise mqtt.js would wait for acks that may never
      // come.
      const force = !client.connected || Object.keys(client.outgoing).length > 0
      client.end(force, {}, () => {
        clearTimeout(timer)
        resolve()
      })
    })
    client.stream?.destroy()
    this.removeAllListeners()
  }
}

/** Remembers the id it hands out, so a caller can tell which packet id a publish got. */
export class TrackingMessageIdProvider extends DefaultMessageIdProvider {
  last: number | undefined
  override allocate(): number {
    const id = super.allocate()
    this.last = id
    return id
  }
}

function reasonText(code: number): string {
  return (ReasonCodes as Record<number, string | undefined>)[code] ?? `reason code 0x${code.toString(16)}`
}

import { connect, DefaultMessageIdProvider, MqttClient, ReasonCodes, type IClientOptions, type IConnackPacket, type IPublishPacket } from 'mqtt'
import { ArgumentError, ConnectionError, type ConnectionErrorCode } from '../errors'
import { publishPacketSize } from '../protocol'
import { coalesceWrites } from '../transport/coalesce-writes'
import { mqttLogOption, setNoDelay } from '../transport/mqtt-settings'
import { storeWithoutCopy } from '../transport/store-without-copy'
import { backoffDelay } from './backoff'
import type { ResolvedOptions } from './options'
import { SAT_AUTH_METHOD, SatToken } from './sat-token'
import { TypedEmitter } from '../typed-emitter'
import type { ConnectionProblem, ConnectionStatus } from './types'

export type PublishProperties = NonNullable<IPublishPacket['properties']>

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
/**
 * Reconnects after a takeover the broker announced back off up to this: two runtimes with one
 * client id would otherwise take turns forever. A takeover only inferred (DROPPED_SOON_MS) backs
 * off within reconnectMaxMs, as a connection that a proxy or a fault keeps dropping may look the same.
 */
const TAKEOVER_MAX_MS = 60_000
/** A connection that stayed up this long after a takeover starts its takeover backoff afresh. */
const TAKEOVER_CALM_MS = 2 * TAKEOVER_MAX_MS
/**
 * A broker that does not send DISCONNECT 0x8E (mosquitto 2.0.11 does not) just closes the old
 * connection. Closed without a word this soon after the broker accepted it, each time at the first
 * try, twice in a row: a takeover is what does that (a broker that went away refuses the reconnect).
 */
const DROPPED_SOON_MS = 10_000
/** The packet types a broker may answer CONNECT with: CONNACK, DISCONNECT (MQTT 5), AUTH (MQTT 5). */
const FIRST_PACKET_TYPES = new Set([2, 14, 15])
/** TLS record content types (change cipher spec, alert, handshake, application data): a TLS peer's first byte. */
const TLS_RECORD_TYPES = new Set([0x14, 0x15, 0x16, 0x17])
/** Socket errors of a TLS client whose peer does not speak TLS (it closed, or answered plain bytes). */
const NOT_TLS_CODES = new Set(['ECONNRESET', 'ERR_SSL_WRONG_VERSION_NUMBER', 'ERR_SSL_PACKET_LENGTH_TOO_LONG', 'EPROTO'])
const CLOSE_BOUND_MS = 2000

/**
 * One mqtt.js v5 connection: options, K8S-SAT authentication, exponential reconnect backoff,
 * TCP_NODELAY, the subscriptions the client needs (acknowledged before it reports itself online),
 * and an observable status. What it relies on beyond mqtt.js's documented API is checked, one
 * behaviour per test, in test/client/mqtt-internals.test.ts.
 */
export class Connection extends TypedEmitter<ConnectionEvents> {
  private readonly mqtt: MqttClient
  private readonly ids = new TrackingMessageIdProvider()
  /** Packet ids of publishes the broker acknowledged with 0x10 (no matching subscribers), until publish() reads them. */
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
  /** What this connection attempt found wrong with the peer (not MQTT, TLS on one side only); cleared by the next attempt. */
  private peerProblem: 'notMqtt' | 'tlsExpected' | 'tlsUnexpected' | undefined
  /** Takeovers in a row: DISCONNECT 0x8E, or a connection the broker closed without a word soon after accepting it. */
  private takeovers = 0
  private takenOver = false
  /** The last takeover was announced (DISCONNECT 0x8E), not inferred. */
  private takeoverSaid = false
  /** This connection's close was counted among the takeovers; when not, the close ends the run. */
  private closeCounted = false
  private onlineAt = 0
  /** The broker accepted this connection at the first attempt after the previous one closed. */
  private firstTry = false
  /** The broker sent DISCONNECT on this connection. */
  private brokerDisconnected = false
  /** This attempt's socket is TLS and its handshake has not finished. */
  private tlsPending = false
  /** This attempt's TCP connection was established, and whether the peer sent anything on it. */
  private reached = false
  private answered = false
  private closing: Promise<void> | null = null
  /** The broker's Maximum Packet Size from the last CONNACK; undefined when it set none. */
  private maxPacketSize: number | undefined

  constructor(
    private readonly options: ResolvedOptions,
    private readonly subscriptions: string[],
  ) {
    super()
    this.token = options.satTokenFile ? new SatToken(options.satTokenFile) : null
    const stream = options.connectStream
    this.mqtt = stream ? new MqttClient(() => stream(), this.mqttOptions()) : connect(options.brokerUrl, this.mqttOptions())
    // We send no Topic Alias, so mqtt.js's deep copy of every request for its replay store buys nothing.
    storeWithoutCopy(this.mqtt)
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
        onAck({ error: new ArgumentError(`the request is ${size} bytes as an MQTT packet; the broker accepts at most ${max} (its Maximum Packet Size)`) })
        return undefined
      }
    }
    this.ids.last = undefined
    this.mqtt.publish(topic, payload, { qos: 1, properties }, (err, packet) => {
      if (err) {
        // A PUBACK reason code is the broker's answer; without one mqtt.js gave the publish up with its connection.
        const refused = typeof (err as { code?: unknown }).code === 'number'
        const code = refused ? 'refused' : this.closing ? 'closed' : 'lost'
        onAck({
          error: new ConnectionError(code, refused ? `the broker refused the request: ${err.message}` : `the request was given up: ${err.message}`, {
            cause: err,
          }),
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

  private mqttOptions(): IClientOptions & { passphrase?: string } {
    const o = this.options
    const properties: NonNullable<IClientOptions['properties']> = {}
    if (o.sessionExpirySec !== undefined) properties.sessionExpiryInterval = o.sessionExpirySec
    if (this.token) {
      properties.authenticationMethod = SAT_AUTH_METHOD
      properties.authenticationData = this.readToken() ?? Buffer.alloc(0)
    }
    return {
      protocolVersion: 5,
      clientId: o.clientId,
      clean: o.cleanStart,
      keepalive: o.keepaliveSec,
      username: o.username,
      password: o.password,
      properties,
      reconnectPeriod: backoffDelay(0, o.reconnectMinMs, o.reconnectMaxMs),
      reconnectOnConnackError: true,
      connectTimeout: o.connectTimeoutMs,
      // We subscribe ourselves after every connect, so that we know when the SUBACK arrived.
      resubscribe: false,
      queueQoSZero: false,
      messageIdProvider: this.ids,
      ...mqttLogOption(),
      ...tlsRest(o.tls),
      // tls.connect takes a mixed array of CAs; mqtt.js types it more narrowly than it passes it on.
      ...(o.tls?.ca !== undefined ? { ca: o.tls.ca as IClientOptions['ca'] } : {}),
      // mqtt.js hands ca/cert/key/passphrase to the wss socket but not the server name.
      ...(o.tls?.servername !== undefined ? { wsOptions: { servername: o.tls.servername } as IClientOptions['wsOptions'] } : {}),
    }
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
      if (packet.cmd === 'puback' && packet.reasonCode === NO_MATCHING_SUBSCRIBERS && packet.messageId !== undefined) this.unheard.add(packet.messageId)
    })
    client.on('connect', (connack) => this.onConnect(connack))
    client.on('message', (topic, payload, packet) => {
      if (!this.closing) this.emit('message', topic, payload, packet)
    })
    client.on('error', (err) => {
      // Kept even after close: mqtt.js emits 'error' late, and an unhandled 'error' would throw.
      this.lastError = err
      const code = (err as { code?: unknown }).code
      // A reset during the handshake is what a plain port does to a TLS hello, but also what a proxy
      // does while the broker behind it restarts: named only before this client ever connected.
      if (typeof code === 'string' && NOT_TLS_CODES.has(code) && this.tlsPending && !this.everOnline) this.peerProblem = 'tlsUnexpected'
      // mqtt.js's parser error (`Invalid header flag bits…`) says less than what checkPeer found.
      this.lastReason = this.peerProblem ? this.problemReason(this.peerProblem, code) : err.message
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
    this.takenOver = false
    this.onlineAt = performance.now()
    this.firstTry = attempts <= 1
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
        this.lastReason = `the broker refused the subscription to ${refused?.topic ?? this.subscriptions.join(', ')}: ${err?.message ?? reasonText(refused!.qos)}`
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
    if (!this.closeCounted) this.takeovers = 0
    this.closeCounted = false
    if (!this.everOnline && this.reached && !this.answered && !this.peerProblem && /^(mqtt|tcp):$/.test(new URL(this.options.brokerUrl).protocol)) {
      // Accepted, then closed (or timed out) without a byte in answer to CONNECT: what a TLS listener
      // (mosquitto's, Node's) does with plain bytes, and what a port of some other silent protocol
      // does. A proxy whose broker is restarting does it too: named only before this client ever
      // connected, when the URL is the likely cause.
      this.peerProblem = 'notMqtt'
      this.lastReason = this.problemReason('notMqtt')
    }
    const wasOnline = this.isOnline
    this.isOnline = false
    this.subscribedInSession = this.subscribedInSession && !this.options.cleanStart
    this.setStatus({
      state: 'disconnected',
      reason: this.lastReason ?? 'the connection closed',
      ...(this.lastError ? { error: this.lastError } : {}),
      ...(this.authFailed ? { authFailed: true } : {}),
      ...this.problem(),
    })
    if (wasOnline) this.emit('offline')
  }

  private onReconnect(): void {
    if (this.closing) return
    this.attempt += 1
    // mqtt.js re-arms its reconnect timer with this period after the attempt fails.
    this.mqtt.options.reconnectPeriod = this.takenOver
      ? this.takeoverDelay()
      : backoffDelay(this.attempt, this.options.reconnectMinMs, this.options.reconnectMaxMs)
    if (this.token && this.mqtt.options.properties) {
      const token = this.readToken()
      if (token) this.mqtt.options.properties.authenticationData = token
    }
    this.setStatus({
      state: 'reconnecting',
      ...(this.lastReason ? { reason: this.lastReason } : {}),
      ...(this.authFailed ? { authFailed: true } : {}),
      ...this.problem(),
    })
  }

  private problem(): { problem?: ConnectionProblem } {
    const problem = this.peerProblem ?? (this.takenOver ? 'takenOver' : undefined)
    return problem ? { problem } : {}
  }

  /** The broker closed a connection it had accepted, without DISCONNECT or a socket error. */
  private onPeerEnd(): void {
    if (this.closing || !this.mqtt.connected || this.brokerDisconnected || this.lastError) return
    if (this.firstTry && performance.now() - this.onlineAt < DROPPED_SOON_MS) this.onTakenOver(false)
  }

  /**
   * Another connection came with our client id and the broker handed it our session. Reconnecting
   * at once would take it back, and the other side would do the same: each takeover in a row
   * doubles the wait before the next attempt, up to TAKEOVER_MAX_MS. `said`: the broker told us
   * (DISCONNECT 0x8E); otherwise it closed the connection soon after accepting it, which is
   * named a takeover from the second time in a row.
   */
  private onTakenOver(said: boolean): void {
    this.takeovers = said && performance.now() - this.onlineAt >= TAKEOVER_CALM_MS ? 1 : this.takeovers + 1
    this.closeCounted = true
    if (!said && this.takeovers < 2) return
    this.takenOver = true
    this.takeoverSaid = said
    this.lastReason = this.problemReason('takenOver', said ? undefined : this.takeovers)
    // Read by mqtt.js when the socket closes, which follows (mqtt.js's own close handler arms the reconnect first).
    this.mqtt.options.reconnectPeriod = this.takeoverDelay()
    this.options.logger('debug', `session taken over ${this.takeovers} time(s) in a row: reconnecting in ${this.mqtt.options.reconnectPeriod} ms`)
  }

  private takeoverDelay(): number {
    const max = this.takeoverSaid ? Math.max(TAKEOVER_MAX_MS, this.options.reconnectMaxMs) : this.options.reconnectMaxMs
    return backoffDelay(this.takeovers + this.attempt, this.options.reconnectMinMs, max)
  }

  /**
   * Looks at the first bytes the peer sends after our CONNECT: an MQTT broker answers with CONNACK
   * (or DISCONNECT, AUTH); a TLS server with a TLS record; anything else is not MQTT at all (an HTTP
   * server, a database). mqtt.js would only say its parser found bad header flags.
   */
  private checkPeer(stream: MqttClient['stream']): void {
    this.peerProblem = undefined
    const socket = stream as unknown as { encrypted?: boolean; connecting?: boolean; once(event: string, listener: (...args: unknown[]) => void): void }
    this.tlsPending = socket.encrypted === true
    if (this.tlsPending) socket.once('secureConnect', () => (this.tlsPending = false))
    this.reached = socket.connecting === false
    this.answered = false
    if (!this.reached) socket.once('connect', () => (this.reached = true))
    socket.once('end', () => this.onPeerEnd())
    socket.once('data', (chunk) => {
      this.answered = true
      const first = Buffer.isBuffer(chunk) && chunk.length > 0 ? chunk[0]! : undefined
      if (first === undefined || FIRST_PACKET_TYPES.has(first >> 4)) return
      this.peerProblem = TLS_RECORD_TYPES.has(first) ? 'tlsExpected' : 'notMqtt'
      this.lastReason = this.problemReason(this.peerProblem)
    })
  }

  private problemReason(problem: Exclude<ConnectionProblem, 'noService'>, code?: unknown): string {
    const url = new URL(this.options.brokerUrl)
    const peer = `${url.hostname}:${url.port || '(default port)'}`
    switch (problem) {
      case 'takenOver':
        return typeof code === 'number'
          ? `the broker closed the connection right after accepting it, ${code} times in a row: another connection with client id ${JSON.stringify(this.options.clientId)} is most likely taking the session over; give each Node-RED runtime its own client id (leave it blank for one)`
          : `another connection with client id ${JSON.stringify(this.options.clientId)} took the session over (DISCONNECT 0x8E): give each Node-RED runtime its own client id (leave it blank for one)`
      case 'notMqtt':
        return `${peer} gave no MQTT answer: check the broker URL's port (MQTT is usually 1883, MQTT over TLS 8883), or use mqtts:// if the port expects TLS`
      case 'tlsExpected':
        return `${peer} speaks TLS: use mqtts:// (or wss://) for this port, or the broker's plain MQTT port`
      case 'tlsUnexpected':
        return `${peer} closed the TLS handshake${typeof code === 'string' ? ` (${code})` : ''}: the port may not speak TLS; use mqtt:// for it, or the broker's TLS port (usually 8883)`
    }
  }

  /** MQTT 5 re-authentication (AUTH 0x19) with a rotated token, so the broker does not drop us when the old one expires. */
  private reauthenticate(token: Buffer): void {
    if (this.closing) return
    if (this.mqtt.options.properties) this.mqtt.options.properties.authenticationData = token
    if (!this.mqtt.connected) return
    this.options.logger('info', 'the service account token changed: re-authenticating')
    // mqtt.js has no public call for an AUTH packet; _sendPacket writes it as is while connected.
    const client = this.mqtt as unknown as { _sendPacket(packet: object): void }
    client._sendPacket({ cmd: 'auth', reasonCode: REAUTHENTICATE, properties: { authenticationMethod: SAT_AUTH_METHOD, authenticationData: token } })
  }

  private setStatus(status: ConnectionStatus): void {
    const c = this.current
    if (c.state === status.state && c.reason === status.reason && c.authFailed === status.authFailed && c.problem === status.problem) return
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
      // A graceful DISCONNECT only when it can go out at once; otherwise mqtt.js would wait for acks that may never come.
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

function tlsRest(tls: ResolvedOptions['tls']): Omit<NonNullable<ResolvedOptions['tls']>, 'ca'> {
  if (!tls) return {}
  const { ca: _ca, ...rest } = tls
  return rest
}

/** The code of a ConnectionError for a caller that gave up waiting while the connection was in this state. */
export function downCode(status: ConnectionStatus): ConnectionErrorCode {
  return status.state === 'closed' ? 'closed' : status.authFailed ? 'auth' : 'not-connected'
}

function reasonText(code: number): string {
  return (ReasonCodes as Record<number, string | undefined>)[code] ?? `reason code 0x${code.toString(16)}`
}

import type { MqttClient } from 'mqtt'
import type { ConnectionProblem } from './types'

/** What a connection attempt can find wrong with the peer: not MQTT, or TLS on one side only. */
export type PeerProblem = Extract<ConnectionProblem, 'notMqtt' | 'tlsExpected' | 'tlsUnexpected'>

/** The packet types a broker may answer CONNECT with: CONNACK, DISCONNECT (MQTT 5), AUTH (MQTT 5). */
const FIRST_PACKET_TYPES = new Set([2, 14, 15])
/** TLS record content types (change cipher spec, alert, handshake, application data): a TLS peer's first byte. */
const TLS_RECORD_TYPES = new Set([0x14, 0x15, 0x16, 0x17])
/** Socket errors of a TLS client whose peer does not speak TLS (it closed, or answered plain bytes). */
const NOT_TLS_CODES = new Set([
  'ECONNRESET',
  'ERR_SSL_WRONG_VERSION_NUMBER',
  'ERR_SSL_PACKET_LENGTH_TOO_LONG',
  'EPROTO',
])

/**
 * Tells a peer that is not an MQTT broker, or that speaks TLS when we do not (or the other way
 * round), from the first bytes it sends and how it closes; mqtt.js would only say its parser found
 * bad header flags. One per connection; `watch` starts over at every attempt.
 */
export class PeerDiagnosis {
  /** What this connection attempt found wrong with the peer; cleared by the next attempt. */
  problem: PeerProblem | undefined
  /** This attempt's socket is TLS and its handshake has not finished. */
  private tlsPending = false
  /** This attempt's TCP connection was established, and whether the peer sent anything on it. */
  private reached = false
  private answered = false

  constructor(private readonly brokerUrl: string) {}

  /**
   * Looks at the first bytes the peer sends after our CONNECT: an MQTT broker answers with CONNACK
   * (or DISCONNECT, AUTH); a TLS server with a TLS record; anything else is not MQTT at all (an HTTP
   * server, a database). `found` gets the reason when the bytes name a problem; `ended` is told when
   * the peer ends the connection.
   */
  watch(stream: MqttClient['stream'], ended: () => void, found: (reason: string) => void): void {
    this.problem = undefined
    const socket = stream as unknown as {
      encrypted?: boolean
      connecting?: boolean
      once(event: string, listener: (...args: unknown[]) => void): void
    }
    this.tlsPending = socket.encrypted === true
    if (this.tlsPending) socket.once('secureConnect', () => (this.tlsPending = false))
    this.reached = socket.connecting === false
    this.answered = false
    if (!this.reached) socket.once('connect', () => (this.reached = true))
    socket.once('end', ended)
    socket.once('data', (chunk) => {
      this.answered = true
      const first = Buffer.isBuffer(chunk) && chunk.length > 0 ? chunk[0]! : undefined
      if (first === undefined || FIRST_PACKET_TYPES.has(first >> 4)) return
      this.problem = TLS_RECORD_TYPES.has(first) ? 'tlsExpected' : 'notMqtt'
      found(this.reason(this.problem))
    })
  }

  /** A socket error with this code: the reason when the peer has a problem, undefined when the error says it better. */
  onError(code: unknown, everOnline: boolean): string | undefined {
    // A reset during the handshake is what a plain port does to a TLS hello, but also what a proxy
    // does while the broker behind it restarts: named only before this client ever connected.
    if (typeof code === 'string' && NOT_TLS_CODES.has(code) && this.tlsPending && !everOnline)
      this.problem = 'tlsUnexpected'
    // mqtt.js's parser error (`Invalid header flag bits…`) says less than what watch() found.
    return this.problem ? this.reason(this.problem, code) : undefined
  }

  /** The connection closed: the reason when the close itself names a problem. */
  onClose(everOnline: boolean): string | undefined {
    if (
      everOnline ||
      !this.reached ||
      this.answered ||
      this.problem ||
      !/^(mqtt|tcp):$/.test(new URL(this.brokerUrl).protocol)
    )
      return undefined
    // Accepted, then closed (or timed out) without a byte in answer to CONNECT: what a TLS listener
    // (mosquitto's, Node's) does with plain bytes, and what a port of some other silent protocol
    // does. A proxy whose broker is restarting does it too: named only before this client ever
    // connected, when the URL is the likely cause.
    this.problem = 'notMqtt'
    return this.reason('notMqtt')
  }

  /** The client's plain words for a peer problem. */
  private reason(problem: PeerProblem, code?: unknown): string {
    const url = new URL(this.brokerUrl)
    const peer = `${url.hostname}:${url.port || '(default port)'}`
    switch (problem) {
      case 'notMqtt':
        return (
          `${peer} gave no MQTT answer: check the broker URL's port (MQTT is usually 1883, MQTT over TLS ` +
          `8883), or use mqtts:// if the port expects TLS`
        )
      case 'tlsExpected':
        return `${peer} speaks TLS: use mqtts:// (or wss://) for this port, or the broker's plain MQTT port`
      case 'tlsUnexpected':
        return (
          `${peer} closed the TLS handshake${typeof code === 'string' ? ` (${code})` : ''}: the port may not ` +
          `speak TLS; use mqtt:// for it, or the broker's TLS port (usually 8883)`
        )
    }
  }
}

import { Socket } from 'node:net'
import type { MqttClient } from 'mqtt'
import { generate as generatePacket } from 'mqtt-packet'
import { encodePuback, encodePublish, type PublishPacket } from './publish-packet'

type Packet = PublishPacket

interface ClientInternals {
  stream?: unknown
  options: { protocolVersion?: number }
  noop?: unknown
  emit(event: 'packetsend', packet: Packet): boolean
  _writePacket?: (packet: Packet, cb?: () => void) => void
}

/**
 * Writes each packet mqtt.js sends as one Buffer, in one `write`.
 *
 * mqtt-packet writes a packet to the socket field by field (fixed header, length, topic, packet
 * id, each property's id, length and bytes, the payload): some twenty `write` calls for a PUBLISH
 * with a content type and two user properties, each one a chunk that Node's stream buffers and
 * libuv hands to `writev` as one more piece. In the emulator's profile at 2,000 SETs/s, those
 * writes were about a third of its CPU (its answer and its notification per SET). Here the same
 * bytes are made into one Buffer, a PUBLISH and its PUBACK by hand (publish-packet.ts), any other packet by
 * mqtt-packet's own `generate`; the stream is corked until the
 * next tick as mqtt-packet corks it (once for all the packets written before it: a `nextTick` per
 * packet was 2% of the emulator's CPU), so packets sent in one tick still leave in one system call. A
 * packet `generate` cannot make (mqtt-packet refuses it) takes the library's own path, which fails
 * it as before; so does an mqtt.js without this internal, and a stream that is not a socket (the
 * embedded broker's in-process connection, which makes one chunk of a tick's writes on its own).
 */
export function writeWholePackets(client: MqttClient): void {
  const c = client as unknown as ClientInternals
  const original = c._writePacket
  if (typeof original !== 'function') return
  c._writePacket = function (this: ClientInternals, packet, cb) {
    const stream = this.stream
    // A socket's writes are system calls; the in-process stream to the embedded broker joins a tick's writes itself.
    if (!(stream instanceof Socket)) return original.call(this, packet, cb)
    let bytes: Buffer
    try {
      bytes =
        encodePublish(packet, this.options.protocolVersion) ??
        encodePuback(packet, this.options.protocolVersion) ??
        generatePacket(packet as Parameters<typeof generatePacket>[0], this.options)
    } catch {
      return original.call(this, packet, cb)
    }
    this.emit('packetsend', packet)
    // Corked once until the next tick, however many packets are written before it.
    const held = stream as CorkedSocket
    if (!held[UNCORK_PENDING]) {
      held[UNCORK_PENDING] = true
      stream.cork()
      process.nextTick(uncork, held)
    }
    const flushed = stream.write(bytes)
    if (!flushed && cb && cb !== this.noop) stream.once('drain', cb)
    else cb?.()
  }
}

const UNCORK_PENDING = Symbol('uncork pending')
type CorkedSocket = Socket & { [UNCORK_PENDING]?: boolean }

function uncork(stream: CorkedSocket): void {
  stream[UNCORK_PENDING] = false
  stream.uncork()
}

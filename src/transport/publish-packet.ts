/**
 * An MQTT 5 PUBLISH with the properties the protocol's requests, answers and notifications carry,
 * encoded into one Buffer: the bytes mqtt-packet's `generate` makes for it (properties in the
 * object's order, each user property's values in theirs), without its twenty-odd pieces, its
 * per-field `debug` calls and the copy that joins them. The emulator sends two PUBLISHes per SET of
 * a watched key, and in its profile mqtt-packet's writing was a tenth of its CPU. Anything else (MQTT
 * 3.1.1, another property, a value of another type) returns null, for `generate` to make or refuse.
 */

export interface PublishPacket {
  cmd: string
  topic?: unknown
  payload?: unknown
  qos?: number
  dup?: boolean
  retain?: boolean
  messageId?: number
  properties?: Record<string, unknown>
}

/**
 * The PUBACK mqtt.js sends for a PUBLISH it took (reason code 0, no properties) in one Buffer: the
 * four bytes mqtt-packet makes for it. Anything else returns null, for `generate`.
 */
export function encodePuback(
  packet: PublishPacket & { reasonCode?: number },
  protocolVersion: number | undefined,
): Buffer | null {
  if (packet.cmd !== 'puback' || protocolVersion !== 5 || packet.reasonCode !== 0 || packet.properties !== undefined)
    return null
  const id = packet.messageId
  if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id > 0xffff) return null
  const out = Buffer.allocUnsafe(4)
  out[0] = 0x40
  out[1] = 0x02
  out.writeUInt16BE(id, 2)
  return out
}

/** Property identifiers (MQTT 5, section 2.2.2.2) of the properties encoded here. */
const PAYLOAD_FORMAT = 0x01
const MESSAGE_EXPIRY = 0x02
const CONTENT_TYPE = 0x03
const RESPONSE_TOPIC = 0x08
const CORRELATION_DATA = 0x09
const USER_PROPERTY = 0x26

const EMPTY = Buffer.alloc(0)

/** The PUBLISH as one Buffer, or null when it is not one this encodes. */
export function encodePublish(packet: PublishPacket, protocolVersion: number | undefined): Buffer | null {
  if (packet.cmd !== 'publish' || protocolVersion !== 5) return null
  const { topic, properties } = packet
  const payload = packet.payload ?? EMPTY
  const qos = packet.qos ?? 0
  if (typeof topic !== 'string' || topic.length === 0) return null
  if (!Buffer.isBuffer(payload) && typeof payload !== 'string') return null
  if (qos !== 0 && qos !== 1 && qos !== 2) return null
  if (qos > 0 && typeof packet.messageId !== 'number') return null

  // Sizes first (null: a property this does not encode).
  let propertiesLength = 0
  if (properties !== undefined) {
    if (properties === null || typeof properties !== 'object') return null
    for (const name in properties) {
      const value = properties[name]
      if (value === undefined) continue
      const size = propertySize(name, value)
      if (size < 0) return null
      propertiesLength += size
    }
  }
  const topicLength = Buffer.byteLength(topic)
  if (topicLength > 0xffff) return null
  const payloadLength = typeof payload === 'string' ? Buffer.byteLength(payload) : payload.length
  const remaining =
    2 + topicLength + (qos > 0 ? 2 : 0) + varIntSize(propertiesLength) + propertiesLength + payloadLength
  if (remaining > 268_435_455) return null

  const out = Buffer.allocUnsafe(1 + varIntSize(remaining) + remaining)
  let at = 0
  out[at++] = 0x30 | (packet.dup ? 0x08 : 0) | (qos << 1) | (packet.retain ? 0x01 : 0)
  at = writeVarInt(out, at, remaining)
  at = writeString(out, at, topic, topicLength)
  if (qos > 0) at = out.writeUInt16BE(packet.messageId!, at)
  at = writeVarInt(out, at, propertiesLength)
  if (properties) {
    for (const name in properties) {
      const value = properties[name]
      if (value !== undefined) at = writeProperty(out, at, name, value)
    }
  }
  if (typeof payload === 'string') out.write(payload, at)
  else payload.copy(out, at)
  return out
}

/** Bytes of one property as mqtt-packet writes it; -1 for one not encoded here. */
function propertySize(name: string, value: unknown): number {
  switch (name) {
    case 'payloadFormatIndicator':
      return typeof value === 'boolean' ? 2 : -1
    case 'messageExpiryInterval':
      return Number.isInteger(value) && (value as number) >= 0 && (value as number) <= 0xffffffff ? 5 : -1
    case 'contentType':
    case 'responseTopic':
      return typeof value === 'string' ? 1 + stringSize(value) : -1
    case 'correlationData':
      return Buffer.isBuffer(value) && value.length <= 0xffff ? 3 + value.length : -1
    case 'userProperties':
      return userPropertiesSize(value)
    default:
      return -1
  }
}

function userPropertiesSize(value: unknown): number {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return -1
  let size = 0
  for (const name of Object.getOwnPropertyNames(value)) {
    const v = (value as Record<string, unknown>)[name]
    const nameSize = stringSize(name)
    if (typeof v === 'string') size += 1 + nameSize + stringSize(v)
    else if (Array.isArray(v)) {
      for (const one of v) {
        if (typeof one !== 'string') return -1
        size += 1 + nameSize + stringSize(one)
      }
    } else return -1
    // A string too long for its 2-byte length makes a negative size.
    if (size < 0) return -1
  }
  // An empty map mqtt-packet refuses: so does generate here.
  return size > 0 ? size : -1
}

function writeProperty(out: Buffer, at: number, name: string, value: unknown): number {
  switch (name) {
    case 'payloadFormatIndicator':
      out[at++] = PAYLOAD_FORMAT
      out[at++] = value ? 1 : 0
      return at
    case 'messageExpiryInterval':
      out[at++] = MESSAGE_EXPIRY
      return out.writeUInt32BE(value as number, at)
    case 'contentType':
      out[at++] = CONTENT_TYPE
      return writeString(out, at, value as string)
    case 'responseTopic':
      out[at++] = RESPONSE_TOPIC
      return writeString(out, at, value as string)
    case 'correlationData':
      out[at++] = CORRELATION_DATA
      at = out.writeUInt16BE((value as Buffer).length, at)
      return at + (value as Buffer).copy(out, at)
    default: {
      const pairs = value as Record<string, string | string[]>
      for (const key of Object.getOwnPropertyNames(pairs)) {
        const v = pairs[key]!
        if (typeof v === 'string') at = writePair(out, at, key, v)
        else for (const one of v) at = writePair(out, at, key, one)
      }
      return at
    }
  }
}

function writePair(out: Buffer, at: number, name: string, value: string): number {
  out[at++] = USER_PROPERTY
  return writeString(out, writeString(out, at, name), value)
}

function writeString(out: Buffer, at: number, text: string, bytes = Buffer.byteLength(text)): number {
  at = out.writeUInt16BE(bytes, at)
  return at + out.write(text, at)
}

/** A length-prefixed UTF-8 string's bytes; far below zero for one longer than MQTT allows. */
function stringSize(text: string): number {
  const bytes = Buffer.byteLength(text)
  return bytes <= 0xffff ? 2 + bytes : -1e12
}

function varIntSize(n: number): number {
  return n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x20_0000 ? 3 : 4
}

function writeVarInt(out: Buffer, at: number, n: number): number {
  do {
    let byte = n % 0x80
    n = Math.floor(n / 0x80)
    if (n > 0) byte |= 0x80
    out[at++] = byte
  } while (n > 0)
  return at
}

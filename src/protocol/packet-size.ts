/**
 * The size on the wire of an MQTT 5 PUBLISH at QoS 1 or 2, to compare with the Maximum Packet Size
 * a broker announces in its CONNACK. A broker disconnects a client that sends a bigger packet, and
 * an MQTT client sends an unacknowledged PUBLISH again after reconnecting: without this check one
 * oversized request (or notification) makes its sender reconnect forever.
 */

/** The PUBLISH properties this package sends. */
export interface PublishPropertiesForSize {
  payloadFormatIndicator?: boolean
  messageExpiryInterval?: number
  contentType?: string
  responseTopic?: string
  correlationData?: Buffer
  topicAlias?: number
  userProperties?: Record<string, string | string[]>
}

/** Bytes of a Variable Byte Integer (MQTT 5, 1.5.5). */
function varIntBytes(n: number): number {
  return n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : 4
}

/** An MQTT UTF-8 string or binary field: a two-byte length, then the bytes. */
function field(text: string | Buffer): number {
  return 2 + (typeof text === 'string' ? Buffer.byteLength(text, 'utf8') : text.length)
}

export function publishPacketSize(
  topic: string,
  payloadBytes: number,
  properties: PublishPropertiesForSize = {},
): number {
  let props = 0
  if (properties.payloadFormatIndicator !== undefined) props += 1 + 1
  if (properties.messageExpiryInterval !== undefined) props += 1 + 4
  if (properties.topicAlias !== undefined) props += 1 + 2
  if (properties.contentType !== undefined) props += 1 + field(properties.contentType)
  if (properties.responseTopic !== undefined) props += 1 + field(properties.responseTopic)
  if (properties.correlationData !== undefined) props += 1 + field(properties.correlationData)
  for (const [name, value] of Object.entries(properties.userProperties ?? {})) {
    for (const v of Array.isArray(value) ? value : [value]) props += 1 + field(name) + field(v)
  }
  // topic, packet identifier, property length and properties, payload
  const remaining = field(topic) + 2 + varIntBytes(props) + props + payloadBytes
  return 1 + varIntBytes(remaining) + remaining
}

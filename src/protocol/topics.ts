import { PREVIEW_REQUEST_TOPIC, REQUEST_TOPIC, SERVICE_CLIENTS_PREFIX } from './constants'

/** Upper-case base16, as the service and the official clients write client ids and keys in topics. */
export function hexUpper(bytes: Buffer | string): string {
  return (typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : bytes).toString('hex').toUpperCase()
}

/** Strict base16 decoding (either case); null when the text is not hex. */
export function hexDecode(text: string): Buffer | null {
  if (text.length % 2 !== 0 || !/^[0-9A-Fa-f]*$/.test(text)) return null
  return Buffer.from(text, 'hex')
}

/** The response topic a client uses: under `clients/<clientId>/…`, never one of the service's. */
export function responseTopicFor(clientId: string): string {
  return `clients/${clientId}/services/${REQUEST_TOPIC}/response`
}

/**
 * Why a Response Topic may not be used on a state store request, or null when it may. The article
 * forbids the request topic (either dialect's: an answer there would come back as a request) and
 * anything under the service's notification prefix; a wildcard is not a topic name at all.
 */
export function responseTopicRefusal(topic: string): string | null {
  if (topic.length === 0) return 'it is empty'
  if (topic === REQUEST_TOPIC || topic === PREVIEW_REQUEST_TOPIC) return 'it is the request topic'
  if (topic.startsWith(SERVICE_CLIENTS_PREFIX))
    return `it begins with ${SERVICE_CLIENTS_PREFIX}, which belongs to the state store`
  if (/[+#]/.test(topic)) return 'it contains a wildcard'
  return null
}

/** An MQTT topic name is a UTF-8 string with a two-byte length prefix (MQTT 5, 1.5.4). */
export const MAX_TOPIC_BYTES = 65_535

/**
 * The longest key, in bytes, the service can notify this client about. The notification topic is
 * the client's prefix, a slash and the key in hex (two characters per byte, all ASCII), and the
 * whole topic must fit in MQTT's 65,535 bytes: about 32 KB, less a little for a long client id.
 */
export function maxNotifiedKeyBytes(clientId: string): number {
  return Math.max(0, Math.floor((MAX_TOPIC_BYTES - notificationPrefix(clientId).length - 1) / 2))
}

export function notificationTopic(clientId: string, key: Buffer): string {
  return `${notificationPrefix(clientId)}/${hexUpper(key)}`
}

/** The filter a client subscribes to for all its key notifications. */
export function notificationFilter(clientId: string): string {
  return `${notificationPrefix(clientId)}/+`
}

function notificationPrefix(clientId: string): string {
  return `${SERVICE_CLIENTS_PREFIX}/${hexUpper(clientId)}/command/notify`
}

/** Splits a notification topic into the client id and the key bytes; null if it is not one. */
export function parseNotificationTopic(topic: string): { clientId: string; key: Buffer } | null {
  if (!topic.startsWith(`${SERVICE_CLIENTS_PREFIX}/`)) return null
  const levels = topic.slice(SERVICE_CLIENTS_PREFIX.length + 1).split('/')
  if (levels.length !== 4 || levels[1] !== 'command' || levels[2] !== 'notify') return null
  const client = hexDecode(levels[0]!)
  const key = hexDecode(levels[3]!)
  if (!client || !key) return null
  return { clientId: client.toString('utf8'), key }
}

/**
 * MQTT matching of a topic's levels against a filter's: `+` one level, `#` the rest; `$` topics only match filters that
 * name their first level.
 */
export function topicMatches(filter: readonly string[], topic: readonly string[]): boolean {
  if (topic[0]?.startsWith('$') && (filter[0] === '+' || filter[0] === '#')) return false
  for (let i = 0; i < filter.length; i++) {
    if (filter[i] === '#') return true
    if (i >= topic.length) return false
    if (filter[i] !== '+' && filter[i] !== topic[i]) return false
  }
  return filter.length === topic.length
}

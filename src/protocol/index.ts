import * as constants from './constants'
import * as dialects from './dialect'
import * as packetSize from './packet-size'
import * as replies from './replies'
import * as requests from './requests'
import * as responses from './responses'
import * as topics from './topics'
import * as userProperties from './user-properties'

// Plain data properties rather than the getters `export { … } from` compiles to in CommonJS (see
// src/resp/index.ts; a destructuring export compiles to one assignment per name): every request of
// the client and every answer of the emulator goes through here.
export const {
  CONTENT_TYPE,
  PREVIEW_REQUEST_TOPIC,
  PROTOCOL_VERSION,
  Prop,
  REQUEST_TOPIC,
  SAT_AUTH_METHOD,
  SERVICE_CLIENTS_PREFIX,
  SERVICE_PROBE_KEY,
} = constants
export const {
  dialect,
  dialectOfRequestTopic,
  dialectPropertyName,
  isProtocolName,
  PROTOCOL_NAMES,
  REQUEST_TOPICS,
  responseUserProperties,
} = dialects
export type { Dialect, ProtocolName } from './dialect'
export const { Notification, Reply } = replies
export const { Request, requireExpiry, requireKey, toBytes } = requests
export type { Bytes, SetCondition, SetRequestOptions } from './requests'
export const {
  parseDeleteResponse,
  parseGetResponse,
  parseKeyNotifyResponse,
  parseNotification,
  parseScanResponse,
  parseSetResponse,
} = responses
export type { NotificationOperation, ScanPage } from './responses'
export const {
  hexDecode,
  hexUpper,
  MAX_TOPIC_BYTES,
  maxNotifiedKeyBytes,
  notificationFilter,
  notificationTopic,
  parseNotificationTopic,
  responseTopicFor,
  responseTopicRefusal,
  topicMatches,
} = topics
export const { publishPacketSize } = packetSize
export const { userProperty } = userProperties
export type { PublishPropertiesForSize } from './packet-size'

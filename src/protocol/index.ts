export { CONTENT_TYPE, PREVIEW_REQUEST_TOPIC, PROTOCOL_VERSION, Prop, REQUEST_TOPIC, SERVICE_CLIENTS_PREFIX } from './constants'
export {
  dialect,
  dialectOfRequestTopic,
  dialectPropertyName,
  isProtocolName,
  PROTOCOL_NAMES,
  REQUEST_TOPICS,
  responseUserProperties,
  type Dialect,
  type ProtocolName,
} from './dialect'
export { Notification, Reply } from './replies'
export { Request, requireExpiry, requireKey, toBytes, type Bytes, type SetCondition, type SetRequestOptions } from './requests'
export {
  parseDeleteResponse,
  parseGetResponse,
  parseKeyNotifyResponse,
  parseNotification,
  parseSetResponse,
  type NotificationOperation,
} from './responses'
export {
  hexDecode,
  hexUpper,
  isAllowedResponseTopic,
  MAX_TOPIC_BYTES,
  maxNotifiedKeyBytes,
  notificationFilter,
  notificationTopic,
  parseNotificationTopic,
  responseTopicFor,
} from './topics'
export { publishPacketSize, type PublishPropertiesForSize } from './packet-size'

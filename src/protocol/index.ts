export { CONTENT_TYPE, PROTOCOL_VERSION, Prop, REQUEST_TOPIC, SERVICE_CLIENTS_PREFIX } from './constants'
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

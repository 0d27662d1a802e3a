import * as constants from './constants'
import * as dialects from './dialect'
import * as packetSize from './packet-size'
import * as replies from './replies'
import * as requests from './requests'
import * as responses from './responses'
import * as topics from './topics'

// Plain data properties rather than the getters `export { … } from` compiles to in CommonJS (see
// src/resp/index.ts): every request of the client and every answer of the emulator goes through here.
export const CONTENT_TYPE = constants.CONTENT_TYPE
export const PREVIEW_REQUEST_TOPIC = constants.PREVIEW_REQUEST_TOPIC
export const PROTOCOL_VERSION = constants.PROTOCOL_VERSION
export const Prop = constants.Prop
export const REQUEST_TOPIC = constants.REQUEST_TOPIC
export const SERVICE_CLIENTS_PREFIX = constants.SERVICE_CLIENTS_PREFIX

export const dialect = dialects.dialect
export const dialectOfRequestTopic = dialects.dialectOfRequestTopic
export const dialectPropertyName = dialects.dialectPropertyName
export const isProtocolName = dialects.isProtocolName
export const PROTOCOL_NAMES = dialects.PROTOCOL_NAMES
export const REQUEST_TOPICS = dialects.REQUEST_TOPICS
export const responseUserProperties = dialects.responseUserProperties
export type { Dialect, ProtocolName } from './dialect'

export const Notification = replies.Notification
export const Reply = replies.Reply

export const Request = requests.Request
export const requireExpiry = requests.requireExpiry
export const requireKey = requests.requireKey
export const toBytes = requests.toBytes
export type { Bytes, SetCondition, SetRequestOptions } from './requests'

export const parseDeleteResponse = responses.parseDeleteResponse
export const parseGetResponse = responses.parseGetResponse
export const parseKeyNotifyResponse = responses.parseKeyNotifyResponse
export const parseNotification = responses.parseNotification
export const parseSetResponse = responses.parseSetResponse
export type { NotificationOperation } from './responses'

export const hexDecode = topics.hexDecode
export const hexUpper = topics.hexUpper
export const isAllowedResponseTopic = topics.isAllowedResponseTopic
export const MAX_TOPIC_BYTES = topics.MAX_TOPIC_BYTES
export const maxNotifiedKeyBytes = topics.maxNotifiedKeyBytes
export const notificationFilter = topics.notificationFilter
export const notificationTopic = topics.notificationTopic
export const parseNotificationTopic = topics.parseNotificationTopic
export const responseTopicFor = topics.responseTopicFor

export const publishPacketSize = packetSize.publishPacketSize
export type { PublishPropertiesForSize } from './packet-size'

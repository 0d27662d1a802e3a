/** The one topic every request is published to. */
export const REQUEST_TOPIC = 'statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke'
/** The request topic of the 2023 public preview's dialect (see dialect.ts). */
export const PREVIEW_REQUEST_TOPIC = '$services/statestore/_any_/command/invoke/request'
/** Topics under this prefix belong to the service; clients must never use them as response topics. */
export const SERVICE_CLIENTS_PREFIX = 'clients/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8'
export const PROTOCOL_VERSION = '1.0'
export const CONTENT_TYPE = 'application/octet-stream'

/** The MQTT 5 authentication method of a Kubernetes service-account token (AIO's SAT listeners). */
export const SAT_AUTH_METHOD = 'K8S-SAT'

/** User property names on requests, responses and notifications. */
export const Prop = {
  timestamp: '__ts',
  fencingToken: '__ft',
  sourceId: '__srcId',
  protocolVersion: '__protVer',
  status: '__stat',
  statusMessage: '__stMsg',
  persist: 'aio-persistence',
  partition: '$partition',
  highPriority: '$high_priority',
  invokerId: '__invId',
} as const

/**
 * The key a client's service check reads: read-only, and never a key anyone uses. A service answers
 * a GET of it at once (nil, or NotAuthorized under key rules: an answer either way).
 */
export const SERVICE_PROBE_KEY = '__aio-statestore/probe'

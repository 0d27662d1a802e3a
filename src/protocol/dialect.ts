import { Hlc } from '../hlc'
import { PREVIEW_REQUEST_TOPIC, PROTOCOL_VERSION, Prop, REQUEST_TOPIC } from './constants'
import { responseTopicFor } from './topics'

/**
 * The two dialects the state store has been spoken in. `v1` is the protocol of the official clients
 * and of the current article. `preview` is the one the article described during the 2023 public
 * preview: the same verbs and RESP3 payloads, but another request topic, the clock and the fencing
 * token in the user properties `Timestamp` and `FencingToken` (HLCs without zero padding, such as
 * `1696374425000:0:CLIENT`), no status or protocol-version headers, and no KEYNOTIFY.
 *
 * Everything that differs between them is here, for the client and the emulator alike.
 */
export type ProtocolName = 'v1' | 'preview'

export const PROTOCOL_NAMES: readonly ProtocolName[] = ['v1', 'preview']

export interface Dialect {
  readonly name: ProtocolName
  readonly requestTopic: string
  /** The user property that carries the request's clock and the version of a response. */
  readonly timestampProperty: string
  readonly fencingTokenProperty: string
  /** Whether responses carry `__stat` and `__protVer`, and requests `__srcId`, `__protVer` and `$partition`. */
  readonly statusHeaders: boolean
  /** Whether KEYNOTIFY exists (and with it key notifications). */
  readonly notifications: boolean
  responseTopic(clientId: string): string
  formatHlc(hlc: Hlc): string
}

const V1: Dialect = {
  name: 'v1',
  requestTopic: REQUEST_TOPIC,
  timestampProperty: Prop.timestamp,
  fencingTokenProperty: Prop.fencingToken,
  statusHeaders: true,
  notifications: true,
  responseTopic: responseTopicFor,
  formatHlc: (hlc) => hlc.toString(),
}

const PREVIEW: Dialect = {
  name: 'preview',
  requestTopic: PREVIEW_REQUEST_TOPIC,
  timestampProperty: 'Timestamp',
  fencingTokenProperty: 'FencingToken',
  statusHeaders: false,
  notifications: false,
  // The preview article's recommended response topic.
  responseTopic: (clientId) => `clients/${clientId}/services/statestore/_any_/command/invoke/response`,
  formatHlc: (hlc) => `${hlc.timestamp}:${hlc.counter}:${hlc.nodeId}`,
}

const BY_NAME: Record<ProtocolName, Dialect> = { v1: V1, preview: PREVIEW }

export function isProtocolName(value: unknown): value is ProtocolName {
  return typeof value === 'string' && Object.hasOwn(BY_NAME, value)
}

export function dialect(name: ProtocolName = 'v1'): Dialect {
  return BY_NAME[name]
}

/** The dialect whose request topic this is; undefined for any other topic. */
export function dialectOfRequestTopic(topic: string): Dialect | undefined {
  return topic === REQUEST_TOPIC ? V1 : topic === PREVIEW_REQUEST_TOPIC ? PREVIEW : undefined
}

/** The request topics a service subscribes to, one per dialect. */
export const REQUEST_TOPICS: readonly string[] = [REQUEST_TOPIC, PREVIEW_REQUEST_TOPIC]

/** A request property looked up by its v1 name (`__ts`, `__ft`) under the dialect's own name. */
export function dialectPropertyName(d: Dialect, v1Name: string): string {
  if (v1Name === Prop.timestamp) return d.timestampProperty
  if (v1Name === Prop.fencingToken) return d.fencingTokenProperty
  return v1Name
}

/**
 * The user properties of a successful response: its version (written the dialect's way) and, in v1, status and protocol
 * version.
 */
export function responseUserProperties(d: Dialect, version: string | undefined): Record<string, string> {
  const user: Record<string, string> = d.statusHeaders
    ? { [Prop.status]: '200', [Prop.protocolVersion]: PROTOCOL_VERSION }
    : {}
  if (version !== undefined) user[d.timestampProperty] = d === V1 ? version : d.formatHlc(Hlc.parse(version))
  return user
}

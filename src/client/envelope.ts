import type { IPublishPacket } from 'mqtt'
import { ProtocolError } from '../diagnostics/errors'
import { Hlc, HlcError, type HybridLogicalClock } from '../hlc'
import { CONTENT_TYPE, dialect as dialectNamed, PROTOCOL_VERSION, Prop, userProperty, type Dialect } from '../protocol'
import type { PublishProperties } from './transport'
import type { ResolvedOptions } from './options'

export interface RequestEnvelope {
  clientId: string
  responseTopic: string
  correlation: Buffer
  timestamp: Hlc
  expirySec: number
  fencingToken?: Hlc
  persist?: boolean
  /** The user property `persist` sends; aio-persistence: true when absent. */
  persistenceProperty?: { key: string; value: string }
  /** v1 when absent. */
  dialect?: Dialect
}

const V1 = dialectNamed('v1')

/** The MQTT 5 properties every request carries (protocol reference, section 2.1). */
export function requestProperties(e: RequestEnvelope): PublishProperties {
  const d = e.dialect ?? V1
  // Names in sorted order: the emulator's print of a request (request-print.ts) takes them as they come then.
  let user: Record<string, string>
  if (!d.statusHeaders) {
    user = { [d.timestampProperty]: d.formatHlc(e.timestamp) }
    if (e.fencingToken) user[d.fencingTokenProperty] = d.formatHlc(e.fencingToken)
  } else {
    user = { [Prop.highPriority]: '', [Prop.partition]: e.clientId }
    if (e.fencingToken) user[d.fencingTokenProperty] = d.formatHlc(e.fencingToken)
    user[Prop.protocolVersion] = PROTOCOL_VERSION
    user[Prop.sourceId] = e.clientId
    user[Prop.timestamp] = e.timestamp.toString()
  }
  if (e.persist && d.statusHeaders) {
    const p = e.persistenceProperty
    user[p?.key ?? Prop.persist] = p?.value ?? 'true'
  }
  return {
    responseTopic: e.responseTopic,
    correlationData: e.correlation,
    messageExpiryInterval: e.expirySec,
    contentType: CONTENT_TYPE,
    payloadFormatIndicator: false,
    userProperties: user,
  }
}

type Properties = IPublishPacket['properties']

/**
 * Checks a response's headers the way the official clients do: `__stat` required and below 400,
 * `__protVer` major 1 when present, and a `__ts` that parses and that the clock accepts (a drifted
 * one fails the call). Returns that `__ts`: the key's version (and, on a lease SET, the fencing
 * token); null when the response has none.
 */
export function readResponseVersion(properties: Properties, clock: HybridLogicalClock, d: Dialect = V1): Hlc | null {
  // The preview dialect has no status header: errors travel only as -ERR payloads.
  if (!d.statusHeaders) return readTimestamp(properties, clock, d.timestampProperty)
  const status = userProperty(properties, Prop.status)
  if (status === undefined) throw new ProtocolError(`the response has no ${Prop.status} header`)
  // The answer to nearly every request; the general checks below are for the rest.
  if (status === '200') {
    checkVersion(properties)
    return readTimestamp(properties, clock)
  }
  const code = Number(status)
  if (!/^[0-9]+$/.test(status) || !Number.isSafeInteger(code))
    throw new ProtocolError(`the response ${Prop.status} ${JSON.stringify(status)} is not a status code`)
  if (code >= 400) {
    const message = userProperty(properties, Prop.statusMessage)
    throw new ProtocolError(`the service answered status ${code}${message ? `: ${message}` : ''}`)
  }
  checkVersion(properties)
  return readTimestamp(properties, clock)
}

/** `__ts` of a response or notification, merged into the clock. */
export function readTimestamp(
  properties: Properties,
  clock: HybridLogicalClock,
  name: string = Prop.timestamp,
): Hlc | null {
  const text = userProperty(properties, name)
  if (text === undefined) return null
  try {
    const version = Hlc.parse(text)
    clock.update(version)
    return version
  } catch (err) {
    if (err instanceof HlcError)
      throw new ProtocolError(`bad ${name} ${JSON.stringify(text)}: ${err.message}`, {
        cause: err,
        ...(err.reason === 'clockDrift' ? { code: 'ClockSkew' as const } : {}),
      })
    throw err
  }
}

export function checkVersion(properties: Properties): void {
  const version = userProperty(properties, Prop.protocolVersion)
  if (version === undefined || version === PROTOCOL_VERSION) return
  const major = version.split('.')[0]
  if (major !== PROTOCOL_VERSION.split('.')[0])
    throw new ProtocolError(
      `unsupported protocol version ${JSON.stringify(version)} (this client speaks ${PROTOCOL_VERSION})`,
    )
}

/**
 * The protocol around a request's payload: where it goes, the MQTT 5 properties it carries, and
 * what a response's headers say. The state store's (below) by default; the emulator's admin channel
 * brings its own, so that it shares PendingRequests' correlation, timeouts and reconnect handling.
 */
export interface Envelope {
  readonly requestTopic: string
  /** The properties of a request's first send; what it throws (a clock that cannot stamp) fails the request. */
  properties(request: {
    correlation: Buffer
    responseTopic: string
    expirySec: number
    fencingToken?: Hlc
    persist?: boolean
  }): PublishProperties
  /** Checks a response's headers; returns its version, or null. What it throws fails the request. */
  readVersion(properties: IPublishPacket['properties']): Hlc | null
}

/** The state store's envelope (protocol reference, section 2): the client's clock stamps each request. */
export function stateStoreEnvelope(options: ResolvedOptions): Envelope {
  const { clock, dialect, clientId, persistenceProperty } = options
  return {
    requestTopic: dialect.requestTopic,
    properties: (r) => {
      let timestamp: Hlc
      try {
        timestamp = clock.tick()
      } catch (err) {
        throw err instanceof HlcError
          ? new ProtocolError(`the clock cannot stamp the request: ${err.message}`, { cause: err })
          : err
      }
      return requestProperties({
        clientId,
        dialect,
        timestamp,
        responseTopic: r.responseTopic,
        correlation: r.correlation,
        expirySec: r.expirySec,
        fencingToken: r.fencingToken,
        persist: r.persist,
        persistenceProperty,
      })
    },
    readVersion: (properties) => readResponseVersion(properties, clock, dialect),
  }
}

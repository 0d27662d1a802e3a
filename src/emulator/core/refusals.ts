import type { QuotaLimit, QuotaRefusal } from './keyspace'

/**
 * Requests the emulator refuses with a text of its own. No official client ever sends them (they
 * come from hand-made MQTT: mosquitto_rr, mosquitto_pub, scripts); the protocol article says such a
 * request fails but not with which text. The article asks clients to accept unknown `-ERR` texts, so
 * each one says what to do instead.
 */
export const EMULATOR_REFUSAL_TEXT = {
  /** Article: "If these properties aren't present or the request isn't of type QoS 1, the request fails." */
  NotQos1: 'the request must be published with QoS 1',
  /**
   * The RPC command cache: two requests with one correlation id must be the same request, or it is a protocol error.
   */
  CorrelationReused:
    'this correlation data belongs to a different request still remembered for re-sends; use new correlation data ' +
    'for every request',
  /** KEYNOTIFY needs the MQTT client id: it names the notification topic. */
  UnknownClient:
    'KEYNOTIFY needs your MQTT client id: send it in the user property __srcId, or use a response topic ' +
    'clients/<client id>/...',
  /** SCAN's tokens name a walk the emulator keeps (scan.ts); the real service's design leaves their meaning to it. */
  ScanTokenUnknown:
    'this SCAN continuation token is unknown: it has expired (60 s unused), belongs to another client or pattern, ' +
    'or the emulator restarted; start the scan again without a token',
} as const

export type EmulatorRefusalCode = keyof typeof EMULATOR_REFUSAL_TEXT

/**
 * A quota refusal in words, naming the bound by its CLI flag (the -ERR text is the service's own, which clients match
 * exactly).
 */
export function describeQuota(refusal: QuotaRefusal): string {
  const { max, needed } = refusal
  switch (refusal.limit) {
    case 'maxKeyBytes':
      return `the key is ${needed} bytes; --max-key-bytes allows ${max}`
    case 'maxValueBytes':
      return `the value is ${needed} bytes; --max-value-bytes allows ${max}`
    case 'maxKeys':
      return `the store holds ${max} keys, as many as --max-keys allows`
    case 'maxBytes':
      return `the store would hold ${needed} bytes with each key's bookkeeping; --max-bytes allows ${max}`
  }
}

/** The CLI flag of each bound. */
const QUOTA_FLAG: Record<QuotaLimit, string> = {
  maxKeys: '--max-keys',
  maxBytes: '--max-bytes',
  maxValueBytes: '--max-value-bytes',
  maxKeyBytes: '--max-key-bytes',
}

/** The bounds in force, by their flags (`none` for no bound), for the start's log line. */
export function describeBounds(bounds: Record<QuotaLimit, number>): string {
  return (Object.keys(QUOTA_FLAG) as QuotaLimit[])
    .map((limit) => `${QUOTA_FLAG[limit]} ${bounds[limit] === Infinity ? 'none' : bounds[limit]}`)
    .join(', ')
}

/**
 * Requests the emulator refuses with a text of its own. No official client ever sends them (they
 * come from hand-made MQTT: mosquitto_rr, mosquitto_pub, scripts); the protocol article says such a
 * request fails but not with which text. The article asks clients to accept unknown `-ERR` texts, so
 * each one says what to do instead.
 */
export const EMULATOR_REFUSAL_TEXT = {
  /** Article: "If these properties aren't present or the request isn't of type QoS 1, the request fails." */
  NotQos1: 'the request must be published with QoS 1',
  /** The RPC command cache: two requests with one correlation id must be the same request, or it is a protocol error. */
  CorrelationReused: 'this correlation data belongs to a different request still remembered for re-sends; use new correlation data for every request',
  /** KEYNOTIFY needs the MQTT client id: it names the notification topic. */
  UnknownClient: 'KEYNOTIFY needs your MQTT client id: send it in the user property __srcId, or use a response topic clients/<client id>/...',
  /** SCAN's tokens name a walk the emulator keeps (scan.ts); the real service's design leaves their meaning to it. */
  ScanTokenUnknown:
    'this SCAN continuation token is unknown: it has expired (60 s unused), belongs to another client or pattern, or the emulator restarted; start the scan again without a token',
} as const

export type EmulatorRefusalCode = keyof typeof EMULATOR_REFUSAL_TEXT

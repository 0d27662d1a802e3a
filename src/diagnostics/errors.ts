/**
 * Typed errors of the state store core. A program tells them apart by `kind` (or `instanceof`);
 * `code` narrows a service error to one entry of the catalogue.
 */
export type StateStoreErrorKind =
  'service' | 'timeout' | 'connection' | 'protocol' | 'argument' | 'cancelled' | 'overloaded' | 'notSupported'

/**
 * Whether a failed write took effect: `true` (the store holds what it wrote), `false` (it was
 * never executed, or the store holds no trace of it) or `unknown` (no read could tell).
 */
export type Written = boolean | 'unknown'

export abstract class StateStoreError extends Error {
  abstract readonly kind: StateStoreErrorKind
  /**
   * Set on the failure of a write (a SET, a DEL or VDEL, an update): whether it took effect. A failure after the
   * request was sent (a timeout, a lost connection) is read back first (docs/client.md).
   */
  written?: Written
}

const CLOCKS_SYNCHRONIZED = 'ensure that the client and broker system clocks are synchronized'

/** The service's `-ERR <text>` catalogue, with the names the official clients give each text. */
export const SERVICE_ERROR_TEXT = {
  TimestampSkew:
    'the request timestamp is too far in the future; ensure that the client and broker system clocks are synchronized',
  MissingFencingToken: 'a fencing token is required for this request',
  FencingTokenSkew: `the request fencing token timestamp is too far in the future; ${CLOCKS_SYNCHRONIZED}`,
  FencingTokenLowerVersion:
    'the request fencing token is a lower version than the fencing token protecting the resource',
  QuotaExceeded: 'the quota has been exceeded',
  SyntaxError: 'syntax error',
  NotAuthorized: 'not authorized',
  UnknownCommand: 'unknown command',
  WrongNumberOfArguments: 'wrong number of arguments',
  TimestampMissing: 'missing timestamp',
  TimestampMalformed: 'malformed timestamp',
  KeyLengthZero: 'the key length is zero',
} as const

export type ServiceErrorCode = keyof typeof SERVICE_ERROR_TEXT

const CODE_BY_TEXT = new Map<string, ServiceErrorCode>(
  Object.entries(SERVICE_ERROR_TEXT).map(([code, text]) => [text, code as ServiceErrorCode]),
)

/** An error the service answered with; `code` is `Unknown` for text outside the catalogue, kept verbatim. */
export class ServiceError extends StateStoreError {
  readonly kind = 'service'
  override readonly name = 'ServiceError'
  readonly code: ServiceErrorCode | 'Unknown'
  constructor(readonly text: string) {
    super(`state store error: ${text}`)
    this.code = CODE_BY_TEXT.get(text) ?? 'Unknown'
  }
}

export class TimeoutError extends StateStoreError {
  readonly kind = 'timeout'
  override readonly name = 'TimeoutError'
  constructor(
    readonly timeoutMs: number,
    what = 'request',
  ) {
    super(`${what} timed out after ${timeoutMs} ms`)
  }
}

/**
 * Why a ConnectionError happened, set where the error is made; a program decides by it, never by
 * the message text. The same codes reach a Catch node from the nodes and a Function node's
 * `stateStore()`:
 * - `ConnectionClosed`: the application closed the client; nothing more will succeed on it.
 * - `ConnectionLost`: the connection dropped under a request; the client reconnects by itself.
 * - `NotConnected`: the connection was down for as long as the caller allowed (its connection wait).
 * - `BrokerRefused`: the broker turned the request or the connection down (a PUBACK or CONNACK reason code).
 * - `NotAuthenticated`: the broker refused our credentials; the client keeps retrying with backoff.
 * - `NoService`: connected, but no state store service is behind the broker (NoServiceError).
 */
export const CONNECTION_ERROR_CODES = [
  'ConnectionClosed',
  'ConnectionLost',
  'NotConnected',
  'BrokerRefused',
  'NotAuthenticated',
  'NoService',
] as const

export type ConnectionErrorCode = (typeof CONNECTION_ERROR_CODES)[number]

/** Not connected, connection lost while waiting, or the client was closed: `code` says which. */
export class ConnectionError extends StateStoreError {
  readonly kind = 'connection'
  override readonly name = 'ConnectionError'
  constructor(
    readonly code: ConnectionErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options)
  }
}

/** A connection loss that the client's own reconnect ends: a caller with time left may try again. */
export function isTransient(err: unknown): boolean {
  return err instanceof ConnectionError && (err.code === 'ConnectionLost' || err.code === 'NotConnected')
}

/**
 * Connected, but no state store service is behind the broker: it said nobody is subscribed to the
 * request topic (PUBACK 0x10), as a plain MQTT broker does. `code` tells it from other connection errors.
 */
export class NoServiceError extends ConnectionError {
  constructor(message: string) {
    super('NoService', message)
  }
}

/**
 * The peer broke the protocol: an unparseable payload, a missing or bad header, a drifted clock.
 * `code` `ClockSkew`: the answer's version is further ahead of this machine's clock than the
 * client accepts (a broker whose clock runs ahead), the other half of the service's TimestampSkew.
 */
export class ProtocolError extends StateStoreError {
  readonly kind = 'protocol'
  override readonly name = 'ProtocolError'
  readonly code: 'ClockSkew' | undefined
  constructor(message: string, options?: ErrorOptions & { code?: 'ClockSkew' }) {
    super(message, options)
    this.code = options?.code
  }
}

/** Refused before anything was sent: empty key, negative expiry, and the like. */
export class ArgumentError extends StateStoreError {
  readonly kind = 'argument'
  override readonly name = 'ArgumentError'
}

export class CancelledError extends StateStoreError {
  readonly kind = 'cancelled'
  override readonly name = 'CancelledError'
}

/** The client option whose bound refused a request: the wait queue's memory, or its count when one is set. */
export type OverloadBound = 'maxQueuedBytes' | 'maxQueued'

/**
 * maxInFlight requests are in flight and the wait queue behind them is full: `bound` names the option that bounds it.
 */
export class OverloadedError extends StateStoreError {
  readonly kind = 'overloaded'
  override readonly name = 'OverloadedError'
  constructor(
    message: string,
    readonly bound: OverloadBound = 'maxQueuedBytes',
    /** The bound's value: bytes for maxQueuedBytes, requests for maxQueued. */
    readonly limit = 0,
  ) {
    super(message)
  }
}

/** The state store answered that it does not know the command: a verb this broker does not have yet (SCAN). */
export class NotSupportedError extends StateStoreError {
  readonly kind = 'notSupported'
  override readonly name = 'NotSupportedError'
  constructor(
    /** The verb the broker does not know. */
    readonly verb: string,
    options?: ErrorOptions,
  ) {
    super(
      `this state store does not support ${verb} (it answered "unknown command"); the released AIO broker has no ` +
        `${verb} yet, the emulator has`,
      options,
    )
  }
}

/** The code of every other kind of error: a kind without a code of its own does not compile. */
export const CODE_BY_KIND = {
  timeout: 'Timeout',
  protocol: 'ProtocolError',
  argument: 'InvalidArgument',
  cancelled: 'Cancelled',
  overloaded: 'Overloaded',
  notSupported: 'NotSupported',
} as const satisfies Record<Exclude<StateStoreErrorKind, 'service' | 'connection'>, string>

export type KindCode = (typeof CODE_BY_KIND)[keyof typeof CODE_BY_KIND]

/** Every code a state store error carries to a flow or a program, PascalCase (CONTRIBUTING.md). */
export type FlowCode = ConnectionErrorCode | ServiceErrorCode | KindCode | 'ClockSkew' | 'Unknown'

/**
 * The code a flow sees for a state store error (the nodes' `msg.error.code`, the Function-node
 * access's `err.code`): the client's own codes are the flow's, so one Catch check sees both.
 */
export function flowCode(err: StateStoreError): FlowCode {
  if (err instanceof ConnectionError || err instanceof ServiceError) return err.code
  if (err instanceof ProtocolError && err.code) return err.code
  return (CODE_BY_KIND as Partial<Record<StateStoreErrorKind, KindCode>>)[err.kind] ?? 'Unknown'
}

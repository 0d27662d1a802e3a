import {
  CODE_BY_KIND,
  CONNECTION_ERROR_CODES,
  flowCode,
  SERVICE_ERROR_TEXT,
  StateStoreError,
  type ConnectionErrorCode,
  type KindCode,
  type ServiceErrorCode,
  type StateStoreErrorKind,
  type Written,
} from '../../src/diagnostics/errors'

/**
 * The codes of a msg (or node setting) the node cannot act on. Every code a node fails with
 * (`NODE_ERROR_CODES`) has its short text under `common.failure` in each language's ss-config.json
 * and its row in docs/nodes.md (test/unit/error-codes.test.ts checks both).
 */
export const INPUT_ERROR_CODES = [
  'KeyMissing',
  'KeyEmpty',
  'KeyNotString',
  'KeyTooLong',
  'ValueMissing',
  'ValueInvalid',
  'ValueNotJson',
  'ValueNotNdjson',
  'DatasetInvalid',
  'ExpiryInvalid',
  'FencingTokenInvalid',
  'ConditionInvalid',
  'ActionUnknown',
  'ActionUnsupported',
  'ControlRefused',
  'PatternNotWatchable',
  'WatchLimit',
  'PropertyFailed',
  'ExpressionInvalid',
  'ExpressionFailed',
  'LockQueueFull',
  'HoldEnded',
  'TooManyKeys',
  'TooManyKeyBytes',
  'ExpressionTimeout',
  'ExpressionTooDeep',
  'ValueTooLarge',
  'KeyValuesInvalid',
  'NoConfig',
] as const

export type InputErrorCode = (typeof INPUT_ERROR_CODES)[number]

/** Every code a node hands a Catch node in `msg.error.code`, PascalCase as the service's own (CONTRIBUTING.md). */
export type NodeErrorCode = InputErrorCode | ConnectionErrorCode | KindCode | ServiceErrorCode | 'ClockSkew' | 'Unknown' | 'Internal'

export const NODE_ERROR_CODES: readonly NodeErrorCode[] = [
  ...INPUT_ERROR_CODES,
  ...CONNECTION_ERROR_CODES,
  ...Object.values(CODE_BY_KIND),
  ...(Object.keys(SERVICE_ERROR_TEXT) as ServiceErrorCode[]),
  'ClockSkew',
  'Unknown',
  'Internal',
]

/**
 * What a Catch node finds in `msg.error.cause` (Node-RED rebuilds `msg.error` itself and copies only
 * `message`, `code`, `stack` and `cause` from the error handed to `done`).
 */
export interface ErrorInfo {
  /** `service`, `timeout`, `connection`, `protocol`, `argument`, `cancelled`, `overloaded`, `notSupported`, `input` for a bad msg, or `internal`. */
  kind: StateStoreErrorKind | 'input' | 'internal'
  /** A service error's catalogue name (`FencingTokenLowerVersion`, ...), or a name for the problem (`KeyEmpty`, `Timeout`, ...). */
  code: NodeErrorCode
  message: string
  /**
   * A failed write's outcome, the client's answer (`err.written`): `true` it was written, `false` it
   * was not (a retry writes it once), `"unknown"` no read could tell. Absent where nothing was to be written.
   */
  written?: Written
}

/** A msg (or node setting) the node cannot act on; found before anything is sent. */
export class InputError extends Error {
  override readonly name = 'InputError'
  constructor(
    readonly code: InputErrorCode,
    message: string,
  ) {
    super(message)
  }
}

export function describeError(err: unknown): ErrorInfo {
  if (err instanceof NodeFailure) return { kind: err.cause.kind, code: err.code, message: err.message }
  if (err instanceof InputError) return { kind: 'input', code: err.code, message: err.message }
  // The client's codes are the nodes' codes: a flow tells a wait that ran out (`NotConnected`) from a closed client or refused credentials.
  if (err instanceof StateStoreError) {
    const info: ErrorInfo = { kind: err.kind, code: flowCode(err), message: err.message }
    if (err.written !== undefined) info.written = err.written
    return info
  }
  if (err instanceof Error) return { kind: 'internal', code: 'Internal', message: err.message }
  return { kind: 'internal', code: 'Internal', message: String(err) }
}

/**
 * What a node hands to `done(err)` / `node.error(err, msg)`. With a Catch node, the runtime copies its
 * own `code` and `cause` into the Catch node's `msg.error`, and `toString()` becomes the message.
 * Without one, the runtime logs it and the Debug sidebar shows it. Deliberately not an Error: the
 * runtime encodes an Error for the sidebar as an object (name, message, code, `String(cause)`,
 * which reads "[object Object]"); any other object is shown through `toString()`, as one line.
 */
export class NodeFailure {
  /** An own property, so `done(err)` takes it as an Error-shaped value; not on the prototype, where the runtime looks for "Error". */
  readonly name = 'NodeFailure'
  readonly message: string
  readonly code: NodeErrorCode
  readonly cause: ErrorInfo
  constructor(info: ErrorInfo) {
    this.message = info.message
    this.code = info.code
    // A copy with a readable String(): where something stringifies the cause it says what it is.
    this.cause = Object.defineProperty({ ...info }, 'toString', { value: () => `${info.kind} ${info.code}: ${info.message}`, enumerable: false })
  }

  toString(): string {
    return this.message
  }
}

export function toFailure(err: unknown): NodeFailure {
  return err instanceof NodeFailure ? err : new NodeFailure(describeError(err))
}

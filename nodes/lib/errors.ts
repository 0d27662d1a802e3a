import { StateStoreError } from '../../src/errors'

/**
 * What a Catch node finds in `msg.error.cause` (Node-RED rebuilds `msg.error` itself and copies only
 * `message`, `code`, `stack` and `cause` from the error handed to `done`).
 */
export interface ErrorInfo {
  /** `service`, `timeout`, `connection`, `protocol`, `argument`, `cancelled`, `overloaded`, or `input` for a bad msg. */
  kind: string
  /** A service error's catalogue name (`FencingTokenLowerVersion`, ...), or a name for the problem (`KeyEmpty`, `Timeout`, ...). */
  code: string
  message: string
}

/** A msg (or node setting) the node cannot act on; found before anything is sent. */
export class InputError extends Error {
  override readonly name = 'InputError'
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message)
  }
}

const CODE_BY_KIND: Record<string, string> = {
  timeout: 'Timeout',
  connection: 'NotConnected',
  protocol: 'ProtocolError',
  argument: 'InvalidArgument',
  cancelled: 'Cancelled',
  overloaded: 'Overloaded',
}

export function describeError(err: unknown): ErrorInfo {
  if (err instanceof InputError) return { kind: 'input', code: err.code, message: err.message }
  if (err instanceof StateStoreError) {
    const code = 'code' in err && typeof err.code === 'string' ? err.code : (CODE_BY_KIND[err.kind] ?? 'Unknown')
    return { kind: err.kind, code, message: err.message }
  }
  if (err instanceof Error) return { kind: 'internal', code: 'Internal', message: err.message }
  return { kind: 'internal', code: 'Internal', message: String(err) }
}

/** The error for `done(err)` / `node.error(err, msg)`: its own `code` and `cause` land in the Catch node's `msg.error`. */
export class NodeFailure extends Error {
  override readonly name = 'NodeFailure'
  readonly code: string
  override readonly cause: ErrorInfo
  constructor(info: ErrorInfo) {
    super(info.message)
    this.code = info.code
    this.cause = info
    // The runtime copies an own `stack` into msg.error; for these errors it is noise, not diagnosis.
    delete (this as { stack?: string }).stack
  }

  /** The runtime logs and reports `toString()`; the bare message reads better than "NodeFailure: ...". */
  override toString(): string {
    return this.message
  }
}

export function toFailure(err: unknown): NodeFailure {
  return err instanceof NodeFailure ? err : new NodeFailure(describeError(err))
}

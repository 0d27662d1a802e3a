import { ArgumentError, CancelledError } from '../diagnostics/errors'
import { Hlc, HlcError } from '../hlc'
import { maxNotifiedKeyBytes, toBytes, type Bytes } from '../protocol'

/** A value must be bytes or a string; anything else is a programming error caught before sending. */
export function requireValue(value: Bytes, what = 'value'): Buffer {
  return toBytes(requireBytes(value, what))
}

/**
 * requireValue without the conversion, for a value that goes straight into a request (which encodes strings itself).
 */
export function requireBytes(value: Bytes, what = 'value'): Bytes {
  if (typeof value !== 'string' && !Buffer.isBuffer(value))
    throw new ArgumentError(`the ${what} must be a Buffer or a string`)
  return value
}

/**
 * A key this client can watch: its notification topic must fit in an MQTT topic. Refused at once,
 * because the service would accept the registration and then have nowhere to publish.
 */
export function requireNotifiableKey(key: Buffer, clientId: string): Buffer {
  const max = maxNotifiedKeyBytes(clientId)
  if (key.length > max) {
    throw new ArgumentError(
      `the key is ${key.length} bytes long; a watched key can be at most ${max} bytes for client id ` +
        `${JSON.stringify(clientId)} (the notification topic carries it in hex, and an MQTT topic is at most 65,535 ` +
        `bytes)`,
    )
  }
  return key
}

/** A fencing token as an Hlc; a string must parse as one. */
export function requireFencingToken(token: Hlc | string | undefined): Hlc | undefined {
  if (token === undefined) return undefined
  if (token instanceof Hlc) return token
  if (typeof token !== 'string') throw new ArgumentError('the fencing token must be an Hlc or its string form')
  try {
    return Hlc.parse(token)
  } catch (err) {
    if (err instanceof HlcError)
      throw new ArgumentError(`bad fencing token ${JSON.stringify(token)}: ${err.message}`, { cause: err })
    throw err
  }
}

/** A request's options, when given, are an object: `null` or a number is a programming error. */
export function requireOptions(options: unknown): void {
  if (options === null || typeof options !== 'object')
    throw new ArgumentError(`the options must be an object, got ${options === null ? 'null' : typeof options}`)
}

/** Milliseconds that must be a positive whole number when given. */
export function requirePositive(value: number | undefined, name: string): number | undefined {
  if (value === undefined) return undefined
  if (!Number.isFinite(value) || value <= 0)
    throw new ArgumentError(`${name} must be a positive number of milliseconds, got ${value}`)
  return value
}

/** The CancelledError for an aborted signal, keeping a caller-supplied reason as the cause. */
export function cancelledBy(signal: AbortSignal, what: string): CancelledError {
  const reason: unknown = signal.reason
  const detail = reason instanceof Error && reason.name !== 'AbortError' ? `: ${reason.message}` : ''
  return new CancelledError(`${what} was cancelled${detail}`, { cause: reason })
}

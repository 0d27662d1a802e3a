import type { KeyDetails, KeyPage, KeyQuery } from './key-browser'
import { ADMIN_REQUEST_TOPIC, ADMIN_RESPONSE_ROOT, ADMIN_TOPIC_ROOT } from '../core/admin-topics'

/**
 * The admin channel over MQTT (what `--admin` serves): JSON request/response on topics of its own,
 * beside the state store's and never on them, so the service's wire behaviour is unchanged.
 * A request is published to ADMIN_REQUEST_TOPIC with a response topic and correlation data, as a
 * state store request is; the answer goes to that response topic with the same correlation data.
 * The emulator's server and the sidebar's client both take their shapes from here.
 */

export { ADMIN_REQUEST_TOPIC, ADMIN_RESPONSE_ROOT, ADMIN_TOPIC_ROOT }

/** Where a client with this id takes its answers. */
export function adminResponseTopic(clientId: string): string {
  return `${ADMIN_RESPONSE_ROOT}/${clientId.replace(/[+#/]/g, '_')}`
}

/** A request as parsed; on the wire the fields of `query` sit beside `op` (`{"op":"listKeys","pattern":"a*"}`). */
export type AdminRequest =
  /** Whether an admin-enabled emulator serves on this broker, and which. */
  | { op: 'hello' }
  | { op: 'listKeys'; query: Omit<KeyQuery, 'signal'> }
  | { op: 'inspect'; keyHex: string; clientId?: string }

export interface AdminHello {
  nodeId: string
  keyCount: number
}

/** KeyDetails with the value as base64 (JSON carries no bytes). */
export type WireKeyDetails = Omit<KeyDetails, 'value'> & { valueBase64: string }

export type AdminReply =
  { ok: true; result: AdminHello | KeyPage | WireKeyDetails | null } | { ok: false; error: string }

export class AdminRequestError extends Error {}

const HEX = /^(?:[0-9a-f]{2})*$/i
const MAX_PATTERN = 4096

function optionalString(body: Record<string, unknown>, name: string): string | undefined {
  const v = body[name]
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'string') throw new AdminRequestError(`"${name}" must be a string`)
  return v
}

/** A request as the server takes it: anything else is an AdminRequestError saying what is wrong. */
export function parseAdminRequest(payload: Buffer): AdminRequest {
  let body: unknown
  try {
    body = JSON.parse(payload.toString('utf8'))
  } catch {
    throw new AdminRequestError('the request is not JSON')
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new AdminRequestError('the request must be a JSON object')
  const b = body as Record<string, unknown>
  switch (b.op) {
    case 'hello':
      return { op: 'hello' }
    case 'listKeys': {
      const query: Omit<KeyQuery, 'signal'> = {}
      const pattern = optionalString(b, 'pattern')
      if (pattern !== undefined) {
        if (pattern.length > MAX_PATTERN)
          throw new AdminRequestError(`"pattern" is longer than ${MAX_PATTERN} characters`)
        query.pattern = pattern
      }
      const after = optionalString(b, 'after')
      if (after !== undefined) {
        if (!HEX.test(after)) throw new AdminRequestError('"after" must be the hex key of the previous page\'s "next"')
        query.after = after
      }
      if (b.limit !== undefined && b.limit !== null) {
        if (typeof b.limit !== 'number' || !Number.isInteger(b.limit) || b.limit < 1 || b.limit > 1000)
          throw new AdminRequestError('"limit" must be a whole number from 1 to 1000')
        query.limit = b.limit
      }
      return { op: 'listKeys', query }
    }
    case 'inspect': {
      const keyHex = optionalString(b, 'keyHex')
      if (!keyHex || !HEX.test(keyHex)) throw new AdminRequestError('"keyHex" must be the key\'s bytes as hex')
      const clientId = optionalString(b, 'clientId')
      return clientId !== undefined ? { op: 'inspect', keyHex, clientId } : { op: 'inspect', keyHex }
    }
    default:
      throw new AdminRequestError(`unknown "op" ${JSON.stringify(b.op ?? null)}: expected hello, listKeys or inspect`)
  }
}

export function toWireDetails(details: KeyDetails): WireKeyDetails {
  const { value, ...rest } = details
  return { ...rest, valueBase64: value.toString('base64') }
}

export function fromWireDetails(details: WireKeyDetails): KeyDetails {
  const { valueBase64, ...rest } = details
  return { ...rest, value: Buffer.from(valueBase64, 'base64') }
}

import { decodeExact, RespProtocolError, type RespValue } from '../resp'
import { ProtocolError, ServiceError } from '../diagnostics/errors'

/** Parsers that turn a response payload into a typed result; `-ERR` becomes a `ServiceError`. */

/** SET: `+OK` applied, `:-1` not applied (NX/NEX condition false). */
export function parseSetResponse(payload: Buffer): boolean {
  const v = reply(payload, 'SET')
  if (v.kind === 'simple' && v.value === 'OK') return true
  if (v.kind === 'integer' && v.value === -1) return false
  throw unexpected('SET', v)
}

/** GET: the value, or null when the key does not exist. */
export function parseGetResponse(payload: Buffer): Buffer | null {
  const v = reply(payload, 'GET')
  if (v.kind === 'bulk') return v.value
  if (v.kind === 'null') return null
  throw unexpected('GET', v)
}

/**
 * DEL and VDEL: the number of keys deleted (1 today, 0 no such key), -1 (VDEL) the value did not
 * match. Larger counts are accepted, as all three official clients accept them.
 */
export function parseDeleteResponse(payload: Buffer, verb: 'DEL' | 'VDEL' = 'DEL'): number {
  const v = reply(payload, verb)
  if (v.kind === 'integer' && typeof v.value === 'number' && v.value >= -1) return v.value
  throw unexpected(verb, v)
}

/** KEYNOTIFY and KEYNOTIFY STOP: `+OK` true; `:0` false (STOP for a key that was not registered). */
export function parseKeyNotifyResponse(payload: Buffer): boolean {
  const v = reply(payload, 'KEYNOTIFY')
  if (v.kind === 'simple' && v.value === 'OK') return true
  if (v.kind === 'integer' && v.value === 0) return false
  throw unexpected('KEYNOTIFY', v)
}

export interface ScanPage {
  /** The keys of this page, as text: SCAN never returns a key that is not UTF-8. */
  keys: string[]
  /** The continuation token for the next page; null on the last page. */
  token: Buffer | null
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true })

/** SCAN: `*1 [keys]` (the last page) or `*2 [keys] <token>`. A key that is not UTF-8 breaks the protocol. */
export function parseScanResponse(payload: Buffer): ScanPage {
  const v = reply(payload, 'SCAN')
  if (v.kind === 'array' && (v.value.length === 1 || v.value.length === 2)) {
    const [page, token] = v.value
    if (
      page!.kind === 'array' &&
      page!.value.every((k) => k.kind === 'bulk') &&
      (token === undefined || token.kind === 'bulk')
    ) {
      const keys: string[] = []
      for (const k of page!.value as Array<{ value: Buffer }>) {
        try {
          keys.push(strictUtf8.decode(k.value))
        } catch {
          throw new ProtocolError(`SCAN returned a key that is not UTF-8 (${k.value.toString('hex').slice(0, 64)})`)
        }
      }
      return { keys, token: token ? (token as { value: Buffer }).value : null }
    }
  }
  throw unexpected('SCAN', v)
}

export type NotificationOperation = { operation: 'SET'; value: Buffer } | { operation: 'DELETE' }

/** `NOTIFY SET VALUE <v>` or `NOTIFY DELETE`. */
export function parseNotification(payload: Buffer): NotificationOperation {
  const v = reply(payload, 'notification')
  if (v.kind === 'array') {
    const words = v.value
    if (words.every((w) => w.kind === 'bulk') && words.length > 0) {
      const text = (i: number) => (words[i] as { value: Buffer }).value.toString('latin1')
      if (text(0) === 'NOTIFY') {
        if (words.length === 2 && text(1) === 'DELETE') return { operation: 'DELETE' }
        if (words.length === 4 && text(1) === 'SET' && text(2) === 'VALUE') {
          return { operation: 'SET', value: (words[3] as { value: Buffer }).value }
        }
      }
    }
  }
  throw unexpected('notification', v)
}

function reply(payload: Buffer, what: string): RespValue {
  if (payload.length === 0) throw new ProtocolError(`empty ${what} response payload`)
  let value: RespValue
  try {
    value = decodeExact(payload)
  } catch (err) {
    if (err instanceof RespProtocolError)
      throw new ProtocolError(`bad ${what} response payload: ${err.message}`, { cause: err })
    throw err
  }
  if (value.kind === 'error') throw new ServiceError(serviceText(value.value))
  return value
}

/** The catalogue text after the `ERR ` prefix; other text verbatim. */
function serviceText(text: string): string {
  return text.startsWith('ERR ') ? text.slice(4) : text
}

function unexpected(what: string, v: RespValue): ProtocolError {
  return new ProtocolError(`unexpected ${what} response: ${describe(v)}`)
}

function describe(v: RespValue): string {
  switch (v.kind) {
    case 'simple':
      return `+${v.value}`
    case 'integer':
      return `:${v.value}`
    case 'bulk':
      return `a ${v.value.length}-byte bulk string`
    default:
      return `a ${v.kind} value`
  }
}

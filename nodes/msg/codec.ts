import { decodeNdjson, encodeNdjson, NdjsonError } from '../../src/formats/ndjson'
import { decodeAuto } from '../../src/formats/value'
import { InputError } from '../lib/errors'
import type { Translate } from '../lib/i18n'
import { typeName } from './props'

/**
 * The one place values cross between Node-RED and the store. The store holds bytes: Buffers go as
 * they are, strings as UTF-8, and everything else JSON can represent as JSON. Reading back with the
 * matching decoding returns what was written (Buffers byte for byte, JSON structurally).
 */
export type Decoding = 'auto' | 'utf8' | 'buffer' | 'json' | 'ndjson'

export const DECODINGS: readonly Decoding[] = ['auto', 'utf8', 'buffer', 'json', 'ndjson']

/** How ss-set writes a value: as it is (objects as JSON), or an array of objects as NDJSON (a dataflow dataset). */
export type Encoding = 'auto' | 'ndjson'

export function isEncoding(value: unknown): value is Encoding {
  return value === 'auto' || value === 'ndjson'
}

/** The bytes ss-set stores for a value in the chosen encoding. */
export function encodeAs(value: unknown, encoding: Encoding, t: Translate): Buffer {
  if (encoding === 'auto') return encodePayload(value, t)
  try {
    return encodeNdjson(value)
  } catch (err) {
    if (!(err instanceof NdjsonError)) throw err
    if (err.reason === 'notAnArray')
      throw new InputError('DatasetInvalid', t('errors.datasetNotArray', { type: typeName(value) }))
    throw new InputError(
      'DatasetInvalid',
      t('errors.datasetRecord', { n: err.line ?? 0, type: typeName((value as unknown[])[err.line! - 1]) }),
    )
  }
}

export function encodePayload(value: unknown, t: Translate): Buffer {
  if (Buffer.isBuffer(value)) return value
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength)
  if (typeof value === 'string') return Buffer.from(value, 'utf8')
  if (value === undefined || value === null)
    throw new InputError('ValueMissing', t('errors.valueMissing', { type: typeName(value) }))
  if (typeof value === 'number' && !Number.isFinite(value))
    throw new InputError('ValueInvalid', t('errors.valueNotFinite', { value: String(value) }))
  // JSON.stringify writes a Map or a Set as {}: refuse it rather than store something else than was given.
  if (value instanceof Map || value instanceof Set)
    throw new InputError('ValueInvalid', t('errors.valueType', { type: value.constructor.name }))
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'object') {
    let json: string | undefined
    try {
      json = JSON.stringify(value)
    } catch (err) {
      // circular structures and BigInts
      throw new InputError(
        'ValueInvalid',
        t('errors.valueNotJson', { error: err instanceof Error ? err.message : String(err) }),
      )
    }
    if (json !== undefined) return Buffer.from(json, 'utf8')
  }
  throw new InputError('ValueInvalid', t('errors.valueType', { type: typeName(value) }))
}

export function isDecoding(value: unknown): value is Decoding {
  return typeof value === 'string' && (DECODINGS as readonly string[]).includes(value)
}

/** `auto`: JSON if the bytes parse as JSON, else a string if they are valid UTF-8, else the Buffer. */
export function decodePayload(bytes: Buffer, decoding: Decoding, t: Translate): unknown {
  switch (decoding) {
    case 'buffer':
      return bytes
    case 'utf8':
      return bytes.toString('utf8')
    case 'json':
      try {
        return JSON.parse(bytes.toString('utf8'))
      } catch {
        throw new InputError('ValueNotJson', t('errors.decodeJson'))
      }
    case 'auto':
      return decodeAuto(bytes)
    case 'ndjson':
      try {
        return decodeNdjson(bytes)
      } catch (err) {
        if (err instanceof NdjsonError)
          throw new InputError('ValueNotNdjson', t('errors.decodeNdjson', { line: err.line ?? 0 }))
        throw err
      }
  }
}

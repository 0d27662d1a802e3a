import { InputError } from '../lib/errors'
import type { Translate } from '../lib/i18n'
import { parseKey, typeName } from './props'

/** How many keys one msg may name or gather unless the node says otherwise. */
export const DEFAULT_MAX_KEYS = 10_000
/** Requests one msg keeps in flight at once unless the node says otherwise. */
export const DEFAULT_IN_FLIGHT = 8
/**
 * Bytes of key names one msg may name in all: with the count alone, 10,000 keys of 60,000 bytes were 600 MB of
 * requests.
 */
export const MAX_KEY_LIST_BYTES = 4 * 1024 * 1024

/**
 * The keys of an array from the msg, each checked as one key is, once each in their order. A bad
 * entry fails the msg before anything is sent, naming its place in the array.
 */
export function parseKeyList(value: readonly unknown[], maxKeys: number, t: Translate): string[] {
  if (value.length > maxKeys) throw tooMany(value.length, maxKeys, t)
  const keys = new Set<string>()
  const bytes = byteBound(t)
  value.forEach((entry, index) => keys.add(bytes(checked(entry, index, t))))
  return [...keys]
}

/** The key → value pairs of an object from the msg (set key with several keys). */
export function parseKeyValues(value: unknown, maxKeys: number, t: Translate): Array<[string, unknown]> {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || Buffer.isBuffer(value)) {
    throw new InputError('KeyValuesInvalid', t('errors.keyValues', { type: typeName(value) }))
  }
  const entries = Object.entries(value)
  if (entries.length > maxKeys) throw tooMany(entries.length, maxKeys, t)
  const bytes = byteBound(t)
  entries.forEach(([key], index) => bytes(checked(key, index, t)))
  return entries
}

/**
 * Counts the bytes of the keys it is given and refuses, naming the limit, the one that takes them past
 * MAX_KEY_LIST_BYTES.
 */
function byteBound(t: Translate): (key: string) => string {
  let total = 0
  return (key) => {
    total += Buffer.byteLength(key)
    if (total > MAX_KEY_LIST_BYTES)
      throw new InputError('TooManyKeyBytes', t('errors.tooManyKeyBytes', { max: MAX_KEY_LIST_BYTES }))
    return key
  }
}

export function tooMany(count: number, max: number, t: Translate): InputError {
  return new InputError('TooManyKeys', t('errors.tooManyKeys', { count, max }))
}

function checked(entry: unknown, index: number, t: Translate): string {
  try {
    return parseKey(entry, t)
  } catch (err) {
    if (!(err instanceof InputError)) throw err
    throw new InputError(err.code, t('errors.keyInList', { index, error: err.message }))
  }
}

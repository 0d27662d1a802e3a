import { InputError } from '../lib/errors'
import type { Translate } from '../lib/i18n'
import { holdTimeLeft } from './holds'

/**
 * The request time a write under the hold a msg carries may take: only while the hold surely lasts,
 * as Lock.edit writes. Refused (HoldEnded) when the hold has ended; no bound when the msg carries no
 * hold of this runtime.
 */
export function writeTimeUnderHold(lock: unknown, key: string, t: Translate): { timeoutMs?: number } {
  const left = holdTimeLeft(lock)
  if (left === undefined) return {}
  if (left < 1)
    throw new InputError('HoldEnded', t('node-red-contrib-aio-statestore/ss-lock:ss-lock.errors.holdEnded', { key }))
  return { timeoutMs: left }
}

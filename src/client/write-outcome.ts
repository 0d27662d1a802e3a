import type { Written } from '../diagnostics/errors'
import { Hlc } from '../hlc'
import type { GetResult } from './types'
import type { SentWrite } from './pending-requests'

/**
 * After the broker's expiry of the last send, plus this: the broker's clock started the expiry when
 * it received the publish, a little after we sent it.
 */
const EXPIRY_MARGIN_MS = 250

export interface WriteReadBack {
  /** A GET of the written key, on the same connection (so behind the write on the request topic). */
  read: () => Promise<GetResult>
  /** The value the write set. */
  value: Buffer
  /** The write set an expiry: a missing key may have been written and expired since. */
  expiring: boolean
}

/**
 * Whether a SET whose answer never came was written, read back once nothing can execute it any
 * more (its Message Expiry is over): the key holds its value with a version above the clock's
 * reading before it was sent → `true` (a SET always makes a version above its own `__ts`); the key
 * is missing, or holds a version no later than that reading → `false` (nothing was written since
 * it was made); any other value written since → `unknown` (it may have come before or after), as
 * is a read that fails. A key deleted after the write reads as `false` (it is not there: writing it
 * again is what the caller wants), an expiring one as `unknown`.
 */
export async function readBackWrite(w: WriteReadBack, sent: SentWrite): Promise<Written> {
  await expiry(sent)
  let held: GetResult
  try {
    held = await w.read()
  } catch {
    return 'unknown'
  }
  if (held.value === null) return w.expiring ? 'unknown' : false
  const since = held.version !== null && Hlc.compare(held.version, sent.before) > 0
  if (!since) return false
  return held.value.equals(w.value) ? true : 'unknown'
}

export interface DeleteReadBack {
  /** A GET of the deleted key, on the same connection (so behind the delete on the request topic). */
  read: () => Promise<GetResult>
}

/**
 * Whether a DEL or VDEL whose answer never came took effect, read back once nothing can execute it
 * any more (its Message Expiry is over): the key is missing → `true` (it is gone, as the delete asked:
 * this delete or something since removed it, and deleting again finds nothing to delete); the key
 * holds a version no later than the clock's reading before it was sent → `false` (nothing changed
 * it since, so the delete never ran, or a VDEL found another value and left it); a value written
 * since → `unknown` (the delete may have run before it), as is a read that fails.
 */
export async function readBackDelete(d: DeleteReadBack, sent: SentWrite): Promise<Written> {
  await expiry(sent)
  let held: GetResult
  try {
    held = await d.read()
  } catch {
    return 'unknown'
  }
  if (held.value === null) return true
  if (held.version === null) return 'unknown'
  return Hlc.compare(held.version, sent.before) > 0 ? 'unknown' : false
}

/** Waits until the broker has dropped the last send unexecuted. */
async function expiry(sent: SentWrite): Promise<void> {
  const wait = sent.expiresAt + EXPIRY_MARGIN_MS - performance.now()
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
}

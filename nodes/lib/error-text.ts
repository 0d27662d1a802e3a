import { describeError, InputError, NodeFailure } from './errors'
import type { Translate } from './i18n'

/**
 * A state store error (or an internal one) as a flow reads it (Catch node, Debug sidebar, log): the key it happened to
 * and what to do, from the catalogue (`explain.<code>`, the error's own message as `__reason__`),
 * as the CLI words its refusals. A msg the node could not read (InputError) and a failure already
 * worded pass as they are: their catalogue texts name the msg property at fault.
 */
export function worded(err: unknown, key: string | undefined, t: Translate): unknown {
  if (err instanceof InputError || err instanceof NodeFailure) return err
  const info = describeError(err)
  const hint = t(`explain.${info.code}`, { reason: info.message })
  // A runtime without the catalogue (node-red-node-test-helper's) answers the key: the error's own words stay.
  if (hint.endsWith(`explain.${info.code}`)) return err
  const message = key === undefined ? hint : t('explain.onKey', { key: JSON.stringify(key), hint })
  return new NodeFailure({ ...info, message })
}

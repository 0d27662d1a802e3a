import type { NodeAPI } from 'node-red'

/**
 * Strings every node uses live once, in the `common` section of the ss-config catalogue. A key with
 * an explicit namespace reaches it from any node set's `RED._` (and from the editor's `RED._`).
 */
export const COMMON_NS = 'node-red-contrib-aio-statestore/ss-config:common.'

export type Translate = (key: string, substitutions?: Record<string, string | number>) => string

/** `t('status.notFound')` → the shared text; `t('node-red:common.status.ok')` passes through. */
export function commonTranslator(RED: NodeAPI): Translate {
  const translate = RED._
  return (key, substitutions) => translate(key.includes(':') ? key : COMMON_NS + key, substitutions)
}

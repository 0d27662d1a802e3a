import { createHash } from 'node:crypto'

/** What a run-once claim key starts with when the id is derived from the msg. */
export const CLAIM_PREFIX = 'once/'

/**
 * The claim key of a msg when the node's Key is blank, from what stays the same when MQTT delivers
 * the msg again (msg._msgid does not: each delivery is a new msg): the publisher's MQTT 5 user
 * property `id`, else its correlation data, else a SHA-256 of the topic and the payload (two msgs
 * equal in both are then one msg).
 */
export function derivedClaimKey(msg: Record<string, unknown>): string {
  const props = msg.userProperties as Record<string, unknown> | undefined
  const id = props && (typeof props.id === 'string' || typeof props.id === 'number') ? String(props.id) : undefined
  if (id !== undefined && id !== '') return `${CLAIM_PREFIX}id/${id}`
  const cd = msg.correlationData
  if (Buffer.isBuffer(cd) && cd.length > 0) return `${CLAIM_PREFIX}cd/${cd.toString('hex')}`
  if (typeof cd === 'string' && cd !== '') return `${CLAIM_PREFIX}cd/${Buffer.from(cd).toString('hex')}`
  const hash = createHash('sha256')
  hash.update(typeof msg.topic === 'string' ? msg.topic : JSON.stringify(msg.topic ?? ''))
  hash.update('\u0000')
  const p = msg.payload
  hash.update(Buffer.isBuffer(p) ? p : typeof p === 'string' ? p : JSON.stringify(p ?? null))
  return `${CLAIM_PREFIX}sha256/${hash.digest('hex')}`
}

import { dialect, PROTOCOL_NAMES, REQUEST_TOPIC, SERVICE_CLIENTS_PREFIX } from '../../protocol'
import { ADMIN_RESPONSE_ROOT } from '../core/admin-topics'

/**
 * Topics only the state store service publishes to: its key notifications (everything under its
 * clients prefix) and the response topics its clients name: the dialects'
 * (`clients/<id>/services/…/response`) and the SDKs' (Go: `clients/<id in hex>/<request topic>/response`,
 * .NET: `clients/<id>/<request topic>`, spec 1.2). A client that could publish there could forge a
 * notification (a version a year ahead poisons every cache that watches the key) or an answer.
 */
const RESPONSE_SUFFIXES = [
  ...PROTOCOL_NAMES.map((name) => {
    const [, suffix] = dialect(name).responseTopic('\u0000').split('\u0000')
    return suffix!
  }),
  `/${REQUEST_TOPIC}/response`,
  `/${REQUEST_TOPIC}`,
]

/** Why a client other than the service may not publish to this topic, or null when it may. */
export function serviceTopicRefusal(topic: string): string | null {
  if (topic.startsWith(`${SERVICE_CLIENTS_PREFIX}/`) || topic === SERVICE_CLIENTS_PREFIX)
    return "the state store notification topics carry the service's messages alone"
  if (topic.startsWith('clients/') && RESPONSE_SUFFIXES.some((suffix) => topic.endsWith(suffix)))
    return "the state store response topics carry the service's answers alone"
  // The admin channel's answers (`export --admin`, a remote sidebar's key list) are the emulator's too.
  if (topic.startsWith(`${ADMIN_RESPONSE_ROOT}/`))
    return "the admin channel's response topics carry the emulator's answers alone"
  return null
}

/**
 * The admin channel's topics (what `--admin` serves), beside the state store's and never on them:
 * the service keeps the response root for the emulator alone, and the admin channel serves there.
 */
export const ADMIN_TOPIC_ROOT = 'aio-statestore-emulator/admin/v1'
export const ADMIN_REQUEST_TOPIC = `${ADMIN_TOPIC_ROOT}/request`
/** Where answers go: the emulator alone publishes under it (service/service-topics.ts). */
export const ADMIN_RESPONSE_ROOT = `${ADMIN_TOPIC_ROOT}/response`

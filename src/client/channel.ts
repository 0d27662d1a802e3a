/**
 * The client's side door, for another protocol over the client's own kind of connection: the
 * emulator's admin channel (src/emulator/admin/client.ts) is the one room that may open it
 * (test/unit/architecture.test.ts); it is no part of the package's API.
 */
/** One MQTT 5 connection made as the client makes its own (TLS, SAT, TCP_NODELAY, reconnects). */
export { Connection } from './connection'
/** The client's request/response correlation, with the protocol around a payload as an `Envelope`. */
export { PendingRequests } from './pending-requests'
export type { Envelope } from './envelope'
export { resolveOptions, type ResolvedOptions } from './options'

/**
 * The client's front door: everything outside src/client (locks, observe, context, the emulator's
 * admin tool, the nodes) uses the client through this file only. The package's public API
 * (src/index.ts) is a part of it: CLIENT_DEFAULTS and the connection are for the package's own rooms.
 */
export { StateStoreClient, type ClientEvents } from './client'
export { KeyScan } from './scan'
export { defaultClientId } from './client-id'
export type { ServiceCheck } from './service-check'
export type {
  ClientOptions,
  ConnectionProblem,
  ConnectionState,
  ConnectionStatus,
  DeleteOptions,
  DeleteResult,
  GetResult,
  KeyNotification,
  Logger,
  LogLevel,
  NotificationListener,
  Observation,
  RequestOptions,
  RequestRecorder,
  SetOptions,
  SetResult,
  TlsOptions,
} from './types'
export { CLIENT_DEFAULTS, resolveOptions, type ResolvedOptions } from './options'
/*
 * For the package's own rooms, not for users: the emulator's admin tool (src/emulator/admin/client.ts)
 * speaks its own protocol over the client's connection and correlation. They stay here because the
 * architecture test lets a room outside src/client open src/client/index.ts only.
 */
/** One MQTT 5 connection made as the client makes its own (TLS, SAT, TCP_NODELAY, reconnects), for another protocol on the same broker. */
export { Connection } from './connection'
/** The client's request/response correlation, for another protocol on the same kind of connection (the emulator's admin channel). */
export { PendingRequests } from './pending-requests'
export type { Envelope } from './envelope'
/** The AIO SDKs' connection environment (AIO_BROKER_HOSTNAME, AIO_SAT_FILE, …), read once for the CLI, the context store and the config node. */
export {
  AIO_VARIABLES,
  EnvironmentError,
  environmentAuth,
  environmentTls,
  readAioEnvironment,
  type AioEnvironment,
  type AioVariable,
  type EnvironmentProblem,
} from './environment'

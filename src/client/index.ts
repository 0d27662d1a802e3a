/**
 * The client's front door: everything outside src/client (locks, observe, context, the CLI, the
 * nodes) uses the client through this file only; the emulator's admin channel alone also opens the
 * side door, channel.ts. The package's public API (src/index.ts) is a part of it: CLIENT_DEFAULTS,
 * the client id and the environment are for the package's own rooms.
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
  PersistenceProperty,
  SetOptions,
  SetResult,
  TlsOptions,
} from './types'
export { CLIENT_DEFAULTS, parsePersistenceProperty } from './options'
/**
 * The AIO SDKs' connection environment (AIO_BROKER_HOSTNAME, AIO_SAT_FILE, …), read once for the CLI, the context store
 * and the config node.
 */
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

export { StateStoreClient, type ClientEvents } from './client'
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
  SetOptions,
  SetResult,
  TlsOptions,
} from './types'

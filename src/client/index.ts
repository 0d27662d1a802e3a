export { StateStoreClient, type ClientEvents } from './client'
export { downCode } from './connection'
export type {
  ClientOptions,
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

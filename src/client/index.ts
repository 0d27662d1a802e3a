export { StateStoreClient, type ClientEvents } from './client'
export { KeyScan } from './scan'
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

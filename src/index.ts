/**
 * node-red-contrib-aio-statestore, usable without Node-RED: the client, leases, locks and leader
 * election, the errors and the hybrid logical clock. The emulator is
 * `node-red-contrib-aio-statestore/emulator`; the RESP codec and the protocol builders are internal.
 */
export * from './errors'
export * from './hlc'
export {
  StateStoreClient,
  type ClientEvents,
  type ClientOptions,
  type ConnectionState,
  type ConnectionStatus,
  type DeleteOptions,
  type DeleteResult,
  type GetResult,
  type KeyNotification,
  type Logger,
  type LogLevel,
  type NotificationListener,
  type Observation,
  type RequestOptions,
  type RequestRecorder,
  type SetOptions,
  type SetResult,
  type TlsOptions,
} from './client'
export * from './locks'
export { stateStore, StoreAccessError, MAX_LISTED_KEYS, type StoreAccess, type StoreLock, type UpdateAccessOptions } from './shared-stores'
export type { Bytes, SetCondition } from './protocol'

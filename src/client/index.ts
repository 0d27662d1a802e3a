export { StateStoreClient, type ClientEvents } from './client'
export { Lease, DEFAULT_LEASE_MS, type HolderChange, type LeaseEvents, type LeaseOptions } from './lease'
export { Lock, type LockOptions } from './lock'
export { LeaderElection, type LeaderElectionEvents, type LeaderElectionOptions } from './leader'
export type { WaitOptions } from './acquire'
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

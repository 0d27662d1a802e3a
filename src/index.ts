/**
 * node-red-contrib-aio-statestore, usable without Node-RED: the client, leases, locks and leader
 * election, the errors and the hybrid logical clock. The emulator is
 * `node-red-contrib-aio-statestore/emulator`; the RESP codec and the protocol builders are internal.
 *
 * Every export is named here: what is not listed is internal (the service's error texts, the
 * clock's limits, the lock key's suffix). api/index.api.md keeps the result on record, and
 * test/unit/api-report.test.ts fails on a change to it that the report does not show.
 */
export {
  ArgumentError,
  CancelledError,
  ConnectionError,
  isTransient,
  NoServiceError,
  NotSupportedError,
  OverloadedError,
  ProtocolError,
  ServiceError,
  StateStoreError,
  TimeoutError,
  type ConnectionErrorCode,
  type ServiceErrorCode,
  type StateStoreErrorKind,
  type OverloadBound,
  type Written,
} from './diagnostics/errors'
export { Hlc, HlcError, HybridLogicalClock, type ClockOptions, type HlcErrorReason } from './hlc'
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
  type PersistenceProperty,
  type RequestOptions,
  type RequestRecorder,
  type SetOptions,
  type SetResult,
  type TlsOptions,
} from './client'
export {
  DEFAULT_LEASE_MS,
  keyLockName,
  Lease,
  LeaderElection,
  Lock,
  updateKey,
  claimOnce,
  parseClaim,
  Claim,
  Semaphore,
  Permit,
  type PermitOptions,
  type SemaphoreOptions,
  type ClaimOptions,
  type ClaimOutcome,
  type ClaimRecord,
  type EditContext,
  type HolderChange,
  type LeaderElectionEvents,
  type LeaderElectionOptions,
  type LeaderLoss,
  type LeaderLossReason,
  type LeaseEvents,
  type LeaseLoss,
  type LeaseLossReason,
  type LeaseOptions,
  type LockOptions,
  type StandOptions,
  type Updated,
  type UpdateOptions,
  type WaitOptions,
} from './locks'
/** The AIO SDKs' connection environment, for settings.js files that make a client of their own (deploy/overlays/ha). */
export { environmentAuth, environmentTls, readAioEnvironment, EnvironmentError, type AioEnvironment } from './client'
export { stateStore, StoreAccessError, MAX_LISTED_KEYS, type StoreAccess, type StoreLock, type UpdateAccessOptions } from './function-nodes/shared-stores'
export type { Bytes, SetCondition } from './protocol'

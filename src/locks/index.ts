/**
 * Leases, locks and leader election on top of the state store client's public API (as the Go
 * SDK's `leasedlock` sits on top of `statestore`).
 */
export { Lease, DEFAULT_LEASE_MS, type HolderChange, type LeaseEvents, type LeaseLoss, type LeaseOptions } from './lease'
export type { LeaseLossReason } from './lease-state'
export { Lock, type EditContext, type LockOptions } from './lock'
export { keyLockName, KEY_LOCK_SUFFIX } from './key-lock'
export { updateKey, type Updated, type UpdateOptions } from './update-key'
export { LeaderElection, type LeaderElectionEvents, type LeaderLoss, type LeaderLossReason, type LeaderElectionOptions, type StandOptions } from './leader'
export type { WaitOptions } from './acquire'
export { claimOnce, parseClaim, Claim, DEFAULT_KEEP_MS, type ClaimOptions, type ClaimOutcome, type ClaimRecord } from './claim'
export { Semaphore, Permit, SLOT_SEPARATOR, type PermitOptions, type SemaphoreOptions } from './semaphore'

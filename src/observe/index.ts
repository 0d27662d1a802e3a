export { StoreActivity, type ActivityChange, type ActivityEvents, type LockKind, type LockRecord, type WatchRecord } from './activity'
export { Coalescer } from './coalescer'
export { ConnectionMetrics, type ConnectionFigures, type RecentError, type RequestRecorder } from './metrics'
export { keyText, viewValue, type ValueView } from './value'

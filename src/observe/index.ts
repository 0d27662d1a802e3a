export {
  StoreActivity,
  type ActivityChange,
  type ActivityEvents,
  type LockKind,
  type LockRecord,
  type WatchRecord,
} from './activity'
export { Coalescer } from './coalescer'
export {
  Timeline,
  TIMELINE_WINDOW_MS,
  holderName,
  type HoldSpan,
  type LockTimelineView,
  type TimelineView,
  type ValueTimelineView,
} from './timeline'
export { ConnectionMetrics, type ConnectionFigures, type RecentError } from './metrics'
export { viewValue, type ValueView } from './value'
export { LiveFeed, type LiveFeedOptions, type StoreUpdate } from './feed'
export { lockView, watchView, type ConnectionView, type LockView, type WatchView } from './views'
export { ScanKeyBrowser, type ScannedKey, type ScannedPage } from './scan-browser'
export { LockFollower } from './lock-follower'

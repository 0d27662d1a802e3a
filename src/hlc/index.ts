export { DEFAULT_MAX_CLOCK_DRIFT_MS, Hlc, HlcError, HybridLogicalClock, MAX_HLC_COUNTER, type ClockOptions, type HlcErrorReason } from './hlc'

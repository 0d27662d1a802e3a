import * as hlc from './hlc'

// Plain data properties rather than the getters `export { … } from` compiles to in CommonJS (see
// src/resp/index.ts): every request stamps and every response parses an HLC through this module.
export const { DEFAULT_MAX_CLOCK_DRIFT_MS, MAX_HLC_COUNTER, Hlc, HlcError, HybridLogicalClock } = hlc
export type Hlc = hlc.Hlc
export type HlcError = hlc.HlcError
export type HybridLogicalClock = hlc.HybridLogicalClock
export type { ClockOptions, HlcErrorReason } from './hlc'

import { rateLimited, type Logger, type LogLevel } from '../diagnostics/log'

/** The least important level written, or `silent` for nothing. */
export type LogThreshold = 'silent' | LogLevel

const RANK: Record<LogThreshold, number> = { silent: 0, error: 1, warn: 2, info: 3, debug: 4 }

export function isLogThreshold(text: string): text is LogThreshold {
  return Object.hasOwn(RANK, text)
}

/** Writes to stderr with a timestamp: the default sink. */
export const stderrSink: Logger = (level, message) => {
  process.stderr.write(`${new Date().toISOString()} ${level.padEnd(5)} ${message}\n`)
}

/** A Logger that filters by threshold, and tells whether a level would be written. */
export interface FilteredLogger extends Logger {
  /** Whether a message of this level would be written; lets callers skip building it. */
  enabled(level: LogLevel): boolean
}

/** Lines of one kind written per 10 s before the rest are only counted (a flood of refusals). */
const BURST = 20

export function makeLogger(level: LogThreshold, sink: Logger = stderrSink, burst = BURST): FilteredLogger {
  const max = RANK[level]
  const limited = burst === Infinity ? sink : rateLimited(sink, { burst })
  const log = ((l: LogLevel, message: string) => {
    if (RANK[l] <= max) limited(l, message)
  }) as FilteredLogger
  log.enabled = (l) => RANK[l] <= max
  return log
}

export type LogLevel = 'silent' | 'error' | 'warn' | 'info' | 'debug'
export type MessageLevel = Exclude<LogLevel, 'silent'>
export type LogSink = (level: MessageLevel, message: string) => void

const RANK: Record<LogLevel, number> = { silent: 0, error: 1, warn: 2, info: 3, debug: 4 }

export function isLogLevel(text: string): text is LogLevel {
  return Object.hasOwn(RANK, text)
}

/** Writes to stderr with a timestamp: the default sink. */
export const stderrSink: LogSink = (level, message) => {
  process.stderr.write(`${new Date().toISOString()} ${level.padEnd(5)} ${message}\n`)
}

export interface Logger {
  (level: MessageLevel, message: string): void
  /** Whether a message of this level would be written; lets callers skip building it. */
  enabled(level: MessageLevel): boolean
}

export function makeLogger(level: LogLevel, sink: LogSink = stderrSink): Logger {
  const max = RANK[level]
  const log = ((l: MessageLevel, message: string) => {
    if (RANK[l] <= max) sink(l, message)
  }) as Logger
  log.enabled = (l) => RANK[l] <= max
  return log
}

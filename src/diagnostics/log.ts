/** The one logger shape of the core: the client, the emulator and the nodes' embedded emulator all take it. */
export type LogLevel = 'error' | 'warn' | 'info' | 'debug'
export type Logger = (level: LogLevel, message: string) => void

/**
 * A URL as a log line, an error, a ready line or the sidebar shows it: without its user info (a
 * broker URL may carry `user:password@`). Only `scheme://…` text is taken as a URL (`user:pass@host`
 * parses as a URL of scheme `user:`); in any other text, everything up to the last `@` before the
 * first `/` is cut as well.
 */
export function shownUrl(text: string): string {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) return text.replace(/^[^/]*@/, '')
  try {
    const url = new URL(text)
    if (url.username === '' && url.password === '') return text
    url.username = ''
    url.password = ''
    return url.toString().replace(/\/$/, '')
  } catch {
    return text.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/]*@/i, '$1')
  }
}

/** The longest log line written whole; the rest is cut (a 40,000-character client id made 40 KB lines). */
export const MAX_LOG_LINE = 1000

export interface RateLimitOptions {
  /** Lines of one kind written per window; the rest are counted. Default 5. */
  burst?: number
  /** Default 10 s. */
  windowMs?: number
  now?: () => number
  /** Arms the timer that reports what a window held back; default an unref'd setTimeout. */
  schedule?: (fn: () => void, ms: number) => void
  /**
   * Kinds counted at once; beyond, lines of a new kind share one count (text a peer chose cannot grow the map). Default
   * 1000.
   */
  maxKinds?: number
}

/** The kind of every line once `maxKinds` kinds are counted. */
const OVERFLOW_KIND = '(lines of more kinds than are counted apart)'

/**
 * A logger that cannot be flooded: lines of one kind (the message with its quoted strings and
 * numbers taken out) are written at most `burst` times a window; the rest are counted and reported
 * in one line when the window ends (`… 34471 more like it in 10 s; the last: …`). Every line is cut
 * to MAX_LOG_LINE characters. Errors are never held back, nor debug lines (asked for to see everything).
 * Text a peer chooses (an id, a key, a topic) goes in quotes, so that it does not make a kind of its
 * own; `maxKinds` bounds the kinds all the same.
 */
export function rateLimited(logger: Logger, options: RateLimitOptions = {}): Logger {
  const burst = options.burst ?? 5
  const windowMs = options.windowMs ?? 10_000
  const now = options.now ?? Date.now
  const schedule =
    options.schedule ??
    ((fn: () => void, ms: number) => {
      setTimeout(fn, ms).unref()
    })
  const maxKinds = options.maxKinds ?? 1000
  const kinds = new Map<string, { since: number; written: number; held: number; last: string; level: LogLevel }>()
  let nextSweep = -Infinity
  return (level, message) => {
    const line = cut(message)
    if (level === 'error' || level === 'debug') return logger(level, line)
    let kind = `${level} ${line.replace(/"(?:[^"\\]|\\.)*"?/g, '""').replace(/[0-9a-f]{6,}|\d+/gi, '#')}`
    const t = now()
    let k = kinds.get(kind)
    if (!k && kinds.size >= maxKinds) {
      // Forget kinds of long ago (a kind still counting is reported by its timer first), a few times a window at most.
      if (t >= nextSweep) {
        nextSweep = t + windowMs / 10
        for (const [key, v] of kinds) if (t - v.since >= windowMs && v.held === 0) kinds.delete(key)
      }
      if (kinds.size >= maxKinds) {
        kind = `${level} ${OVERFLOW_KIND}`
        k = kinds.get(kind)
      }
    }
    if (!k || t - k.since >= windowMs) {
      k = { since: t, written: 0, held: 0, last: '', level }
      kinds.set(kind, k)
    }
    if (k.written < burst) {
      k.written++
      return logger(level, line)
    }
    if (k.held++ === 0) {
      const window = k
      schedule(
        () => {
          if (window.held > 0)
            logger(
              window.level,
              cut(`… ${window.held} more like it in ${Math.round(windowMs / 1000)} s; the last: ${window.last}`),
            )
          window.held = 0
          if (kinds.get(kind) === window) kinds.delete(kind)
        },
        windowMs - (t - k.since),
      )
    }
    k.last = line
  }
}

/** The longest quoted string (an id, a key, a topic) kept whole in a log line. */
const MAX_QUOTED = 200

/** A line with every long quoted string cut in its middle, then cut to MAX_LOG_LINE characters. */
function cut(message: string): string {
  if (message.length <= MAX_QUOTED) return message
  let out = ''
  let i = 0
  while (i < message.length) {
    const open = message.indexOf('"', i)
    if (open < 0) break
    // The closing quote: the next one not escaped by a backslash.
    let close = open + 1
    while (close < message.length && message[close] !== '"') close += message[close] === '\\' ? 2 : 1
    if (close >= message.length) break
    out += message.slice(i, open + 1)
    const inner = close - open - 1
    out +=
      inner <= MAX_QUOTED
        ? message.slice(open + 1, close)
        : `${message.slice(open + 1, open + 1 + MAX_QUOTED)}…(${inner} characters)`
    out += '"'
    i = close + 1
  }
  out += message.slice(i)
  return out.length <= MAX_LOG_LINE
    ? out
    : `${out.slice(0, MAX_LOG_LINE)}… (${out.length - MAX_LOG_LINE} more characters)`
}

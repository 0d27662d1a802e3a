import { randomUUID } from 'node:crypto'

/** Largest counter we keep exact; the wire allows more (u64), JavaScript numbers do not. */
export const MAX_HLC_COUNTER = Number.MAX_SAFE_INTEGER
export const DEFAULT_MAX_CLOCK_DRIFT_MS = 60_000

export type HlcErrorReason = 'malformed' | 'clockDrift' | 'counterOverflow'

export class HlcError extends Error {
  override readonly name = 'HlcError'
  constructor(
    readonly reason: HlcErrorReason,
    message: string,
  ) {
    super(message)
  }
}

/**
 * One hybrid-logical-clock reading: wall-clock milliseconds, a counter that orders events within a
 * millisecond, and the id of the node that made it. Immutable; it is also a key's version and a
 * fencing token.
 */
export class Hlc {
  constructor(
    readonly timestamp: number,
    readonly counter: number,
    readonly nodeId: string,
  ) {}

  /** `%015d:%05d:<nodeId>`; the widths are minimums. */
  toString(): string {
    // Every request is stamped, and readings in the same millisecond share the timestamp's text.
    if (this.timestamp !== lastTimestamp) {
      lastTimestamp = this.timestamp
      lastTimestampText = String(this.timestamp).padStart(15, '0')
    }
    const counter = this.counter < 10 ? `0000${this.counter}` : String(this.counter).padStart(5, '0')
    return `${lastTimestampText}:${counter}:${this.nodeId}`
  }

  toJSON(): string {
    return this.toString()
  }

  static parse(text: string): Hlc {
    // Every response and notification parses one `__ts`: the well-formed text is read in place, without
    // splitting it into an array of strings or converting its fields with Number(); anything else
    // (including fields too long to be summed exactly) takes the general path with its errors.
    const first = text.indexOf(':')
    const second = first < 0 ? -1 : text.indexOf(':', first + 1)
    if (
      second > first + 1 &&
      first > 0 &&
      first <= 15 &&
      second - first - 1 <= 15 &&
      second < text.length - 1 &&
      text.indexOf(':', second + 1) < 0
    ) {
      const timestamp = shortDecimal(text, 0, first)
      const counter = shortDecimal(text, first + 1, second)
      if (timestamp >= 0 && counter >= 0) return new Hlc(timestamp, counter, text.slice(second + 1))
    }
    return Hlc.parseFields(text)
  }

  private static parseFields(text: string): Hlc {
    const fields = text.split(':')
    if (fields.length !== 3) {
      throw new HlcError(
        'malformed',
        `HLC ${JSON.stringify(text)} must have three fields separated by ":", it has ${fields.length}`,
      )
    }
    const [ts, counter, nodeId] = fields as [string, string, string]
    const timestamp = decimal(ts, 'timestamp', text)
    const count = decimal(counter, 'counter', text)
    if (nodeId.length === 0) throw new HlcError('malformed', `HLC ${JSON.stringify(text)} has an empty node id`)
    return new Hlc(timestamp, count, nodeId)
  }

  /** Negative, zero or positive as `a` is before, equal to or after `b`: time, counter, then node id (ordinal). */
  static compare(a: Hlc, b: Hlc): number {
    if (a.timestamp !== b.timestamp) return a.timestamp < b.timestamp ? -1 : 1
    if (a.counter !== b.counter) return a.counter < b.counter ? -1 : 1
    return a.nodeId === b.nodeId ? 0 : a.nodeId < b.nodeId ? -1 : 1
  }

  equals(other: Hlc): boolean {
    return Hlc.compare(this, other) === 0
  }

  isZero(): boolean {
    return this.timestamp === 0 && this.counter === 0
  }
}

let lastTimestamp = -1
let lastTimestampText = ''

/** The value of text[start, end), at most 15 decimal digits (so exact); -1 when a character is not a digit. */
function shortDecimal(text: string, start: number, end: number): number {
  let n = 0
  for (let i = start; i < end; i++) {
    const d = text.charCodeAt(i) - 0x30
    if (d < 0 || d > 9) return -1
    n = n * 10 + d
  }
  return n
}

function decimal(field: string, name: string, text: string): number {
  // A loop rather than a regular expression: every response and notification parses one `__ts`.
  let digits = field.length > 0
  for (let i = 0; digits && i < field.length; i++) {
    const c = field.charCodeAt(i)
    digits = c >= 0x30 && c <= 0x39
  }
  if (!digits) {
    throw new HlcError('malformed', `HLC ${JSON.stringify(text)}: the ${name} must be decimal digits`)
  }
  const n = Number(field)
  if (!Number.isSafeInteger(n)) throw new HlcError('malformed', `HLC ${JSON.stringify(text)}: the ${name} is too large`)
  return n
}

export interface ClockOptions {
  /** This node's id; a fresh UUID by default. Must not contain ":". */
  nodeId?: string
  /** How far ahead of the wall clock a reading may be before it is refused (strict `>`). */
  maxDriftMs?: number
  /** The wall clock in ms; injectable for tests. */
  now?: () => number
}

/**
 * The mutable clock of an application (or of the service). It moves forward only; an update that
 * would drift too far ahead or overflow the counter throws and leaves the clock as it was.
 */
export class HybridLogicalClock {
  readonly nodeId: string
  readonly maxDriftMs: number
  private readonly now: () => number
  private reading: Hlc

  constructor(options: ClockOptions = {}) {
    this.nodeId = options.nodeId ?? randomUUID()
    if (this.nodeId.includes(':') || this.nodeId.length === 0) {
      throw new HlcError('malformed', `node id ${JSON.stringify(this.nodeId)} must be non-empty and contain no ":"`)
    }
    this.maxDriftMs = options.maxDriftMs ?? DEFAULT_MAX_CLOCK_DRIFT_MS
    this.now = options.now ?? Date.now
    this.reading = new Hlc(Math.trunc(this.now()), 0, this.nodeId)
  }

  get current(): Hlc {
    return this.reading
  }

  /** Advances against the wall clock, as before stamping an outgoing message; returns the new reading. */
  tick(): Hlc {
    const wall = Math.trunc(this.now())
    const self = this.reading
    const next =
      wall > self.timestamp
        ? new Hlc(wall, 0, this.nodeId)
        : new Hlc(self.timestamp, increment(self.counter), this.nodeId)
    this.reading = this.checked(next, wall)
    return this.reading
  }

  /** Merges a reading received from elsewhere (a `__ts`); readings from this node are ignored. */
  update(other: Hlc): Hlc {
    if (other.nodeId === this.nodeId) return this.reading
    const wall = Math.trunc(this.now())
    const self = this.reading
    let next: Hlc
    if (wall > self.timestamp && wall > other.timestamp) next = new Hlc(wall, 0, this.nodeId)
    else if (self.timestamp === other.timestamp)
      next = new Hlc(self.timestamp, increment(Math.max(self.counter, other.counter)), this.nodeId)
    else if (self.timestamp > other.timestamp) next = new Hlc(self.timestamp, increment(self.counter), this.nodeId)
    else next = new Hlc(other.timestamp, increment(other.counter), this.nodeId)
    this.reading = this.checked(next, wall)
    return this.reading
  }

  /** Whether a reading is within the allowed drift of this clock's wall time. */
  validate(reading: Hlc): void {
    this.checked(reading, Math.trunc(this.now()))
  }

  private checked(next: Hlc, wall: number): Hlc {
    if (next.timestamp - wall > this.maxDriftMs) {
      throw new HlcError(
        'clockDrift',
        `HLC ${next} is ${next.timestamp - wall} ms ahead of the wall clock (maximum ${this.maxDriftMs} ms)`,
      )
    }
    return next
  }
}

function increment(counter: number): number {
  if (counter >= MAX_HLC_COUNTER) throw new HlcError('counterOverflow', 'integer overflow in HLC counter')
  return counter + 1
}

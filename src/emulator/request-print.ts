import { createHash } from 'node:crypto'

type UserProperties = Record<string, string | string[]>

/** Payloads up to this size are kept as they are; larger ones as a digest. */
const INLINE_BYTES = 1024

/**
 * What makes a request the one it is, to tell an MQTT re-send (the same PUBLISH again) from another
 * request under the same correlation data: its payload and its user properties (`__ts`, `__ft`,
 * `aio-persistence`…), which a re-send carries unchanged. Not the Message Expiry, which a broker
 * counts down on redelivery.
 *
 * Built for every request but compared only when correlation data comes back, so building is cheap:
 * a small payload is copied out as a latin1 string (never kept as a view into a network read), a
 * large one is hashed; the user properties object is kept as parsed.
 */
export class RequestPrint {
  private constructor(
    private readonly body: string,
    private readonly hashed: boolean,
    private readonly props: UserProperties | undefined,
  ) {}

  static of(payload: Buffer, userProperties: UserProperties | undefined): RequestPrint {
    const hashed = payload.length > INLINE_BYTES
    return new RequestPrint(hashed ? createHash('sha256').update(payload).digest().toString('latin1') : payload.toString('latin1'), hashed, userProperties)
  }

  /** Roughly what it holds, for the cache's byte budget. */
  get bytes(): number {
    let n = this.body.length
    // Counted for every request the cache keeps: a plain loop, no arrays of entries.
    const props = this.props
    for (const name in props) {
      const v = props[name]!
      n += name.length + (Array.isArray(v) ? v.reduce((s, x) => s + x.length, 0) : v.length)
    }
    return n
  }

  equals(other: RequestPrint): boolean {
    return this.hashed === other.hashed && this.body === other.body && sameProperties(this.props ?? {}, other.props ?? {})
  }
}

/** The same names with the same values, in any order of names; repeated values in their order. */
function sameProperties(a: UserProperties, b: UserProperties): boolean {
  const names = Object.keys(a)
  if (names.length !== Object.keys(b).length) return false
  for (const name of names) {
    if (!Object.hasOwn(b, name)) return false
    const x = a[name]!
    const y = b[name]!
    if (Array.isArray(x) !== Array.isArray(y)) return false
    if (Array.isArray(x) && Array.isArray(y)) {
      if (x.length !== y.length || x.some((v, i) => v !== y[i])) return false
    } else if (x !== y) return false
  }
  return true
}

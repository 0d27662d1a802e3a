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
 * large one is hashed. The user properties are kept as one string (names in order, with their
 * values), not as the parsed object: a print lives as long as the request's expiry (ten seconds and
 * 20,000 requests at 2,000/s), and one string is one object for the garbage collector to copy and
 * promote where the parsed object is one per property and itself (the bytes barely differ).
 */
export class RequestPrint {
  private constructor(
    private readonly body: string,
    private readonly hashed: boolean,
    private readonly props: string,
  ) {}

  static of(payload: Buffer, userProperties: UserProperties | undefined): RequestPrint {
    const hashed = payload.length > INLINE_BYTES
    return new RequestPrint(
      hashed ? createHash('sha256').update(payload).digest().toString('latin1') : payload.toString('latin1'),
      hashed,
      propertiesKey(userProperties),
    )
  }

  /** Roughly what it holds, for the cache's byte budget. */
  get bytes(): number {
    return this.body.length + this.props.length
  }

  /** For the journal: a re-send after a restart is told from a conflict as before it. */
  serialize(): string {
    return JSON.stringify([this.body, this.hashed, this.props])
  }

  static parse(text: string): RequestPrint {
    const [body, hashed, props] = JSON.parse(text) as [string, boolean, string]
    return new RequestPrint(body, hashed, currentPropertiesKey(props))
  }

  equals(other: RequestPrint): boolean {
    return this.hashed === other.hashed && this.body === other.body && this.props === other.props
  }
}

/**
 * The user properties as one string, equal for the same names with the same values in any order of
 * names (repeated values in their order): the properties with their names in sorted order, in JSON,
 * which tells a string from a list and needs no escaping of its own. Names that come sorted (our
 * client sends them so) are written as they are, without a sorted copy: this is built for every request.
 */
function propertiesKey(props: UserProperties | undefined): string {
  if (!props) return ''
  let previous: string | undefined
  let sorted = true
  for (const name in props) {
    if (previous !== undefined && !(previous < name)) {
      sorted = false
      break
    }
    previous = name
  }
  if (previous === undefined) return ''
  if (sorted) return JSON.stringify(props)
  // Array#sort, n log n: a request chooses how many names it carries (200,000 in 2.6 MB), so no
  // quadratic sort, however few names a request usually has.
  const names = Object.keys(props).sort()
  // No prototype: a property named __proto__ is a property like any other.
  const ordered = Object.create(null) as UserProperties
  for (const name of names) ordered[name] = props[name]!
  return JSON.stringify(ordered)
}

/** A print's properties as an earlier version's journal kept them, (name, value) pairs in JSON, as they are now. */
function currentPropertiesKey(props: string): string {
  if (!props.startsWith('[')) return props
  const pairs = JSON.parse(props) as Array<string | string[]>
  const object = Object.create(null) as UserProperties
  for (let i = 0; i + 1 < pairs.length; i += 2) object[pairs[i] as string] = pairs[i + 1]!
  return propertiesKey(object)
}

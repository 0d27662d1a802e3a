import { describeError, NodeFailure, type ErrorInfo } from '../lib/errors'
import type { Translate } from '../lib/i18n'

/**
 * The failures of some keys of a msg that named several. Each key's failure is kept as a Catch node
 * would see it alone; the msg's failure carries the first one's kind and code, and a message naming
 * that key and how many of the msg's keys failed.
 */
export class KeyFailures {
  private readonly failed = new Map<string, ErrorInfo>()

  /** `explain` puts a connection error in the catalogue's words (the node's StatusView.explain). */
  constructor(private readonly explain: (err: unknown) => unknown) {}

  get size(): number {
    return this.failed.size
  }

  add(key: string, err: unknown): ErrorInfo {
    const info = describeError(this.explain(err))
    this.failed.set(key, info)
    return info
  }

  /** `msg.errors`: key → { kind, code, message }. */
  byKey(): Record<string, ErrorInfo> {
    return Object.fromEntries(this.failed)
  }

  /** What the msg fails with, or null when no key failed. */
  failure(total: number, t: Translate): NodeFailure | null {
    const first = this.failed.entries().next()
    if (first.done) return null
    const [key, info] = first.value
    return oneKeyFailure(key, info, t, this.failed.size, total)
  }
}

/** A failure naming the key it happened to (`failed` of `total` keys of the msg). */
export function oneKeyFailure(key: string, info: ErrorInfo, t: Translate, failed = 1, total = 1): NodeFailure {
  return new NodeFailure({
    kind: info.kind,
    code: info.code,
    message: t('errors.keyFailed', { key: JSON.stringify(key), error: info.message, failed, total }),
  })
}

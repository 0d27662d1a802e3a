import type { NodeMessage } from 'node-red'
import type { KeyScan } from '../../src/client'
import { settleEach } from '../../src/lang/bounded'
import type { Send } from './handler'
import { KeyFailures, oneKeyFailure } from './key-failures'
import { tooMany } from './key-list'
import type { NodeContext, Output } from './many-keys'

/** A key's value as the node outputs it, and its version. */
export interface ReadValue {
  value: unknown
  version: string | undefined
}

/** `all`: one msg with every key; `page`: one msg per SCAN page; `key`: one msg per key. */
export type PatternSendAs = 'all' | 'page' | 'key'

export interface PatternRead {
  scan: KeyScan
  sendAs: PatternSendAs
  inFlight: number
  /** Keys one msg may gather (`all` and `page`); past it the msg fails with TooManyKeys. */
  maxKeys: number
  /** A key's value, or null when it is gone since the page listed it (it is then left out). */
  read(key: string): Promise<ReadValue | null>
  /** What to send for a msg with results (the node's outputs). */
  route(msg: NodeMessage, found: boolean): Output
  /** Keys read so far, for the status. */
  progress(read: number): void
}

/**
 * The keys matching a pattern with their values. Pages come one request at a time (the scan keeps
 * the token), each page's keys are read with a bound in flight before the next page is asked for,
 * so at most one page of keys and `inFlight` reads are held at once (all of them with `all`). A key
 * that fails to read is reported as runKeys reports it: its own msg to Catch with one msg per key;
 * with pages or all in one, in `msg.errors`, and the msg fails once the scan is done.
 */
export async function readPattern(ctx: NodeContext, msg: NodeMessage, send: Send, spec: PatternRead): Promise<void> {
  const { RED, node, status, t } = ctx
  const failures = new KeyFailures(status.explain)
  const gathered = new Map<string, ReadValue>()
  let read = 0
  let pageNo = 0
  for (let keys = await spec.scan.next(); keys !== null; keys = await spec.scan.next()) {
    // An empty page is sent only as the last page (msg.complete), so a page-wise flow always learns the end.
    if (keys.length === 0 && !(spec.sendAs === 'page' && spec.scan.complete)) continue
    if (spec.sendAs !== 'key' && (spec.sendAs === 'page' ? 0 : gathered.size) + keys.length > spec.maxKeys) {
      throw tooMany((spec.sendAs === 'page' ? 0 : gathered.size) + keys.length, spec.maxKeys, t)
    }
    const page = spec.sendAs === 'page' ? new Map<string, ReadValue>() : gathered
    const pageFailures = spec.sendAs === 'page' ? new KeyFailures(status.explain) : failures
    await settleEach(
      keys,
      spec.inFlight,
      (key) => spec.read(key),
      (key, outcome) => {
        read++
        if (outcome.ok) {
          if (outcome.value === null) return
          if (spec.sendAs === 'key') {
            const copy = RED.util.cloneMessage(msg)
            copy.key = key
            copy.payload = outcome.value.value
            copy.version = outcome.value.version
            copy.found = true
            send(spec.route(copy, true))
          } else {
            page.set(key, outcome.value)
          }
          return
        }
        const info = failures.add(key, outcome.error)
        if (pageFailures !== failures) pageFailures.add(key, outcome.error)
        if (spec.sendAs === 'key') {
          const copy = RED.util.cloneMessage(msg)
          copy.key = key
          const failure = oneKeyFailure(key, info, t)
          status.failure(failure)
          node.error(failure, copy)
        }
      },
    )
    spec.progress(read)
    if (spec.sendAs === 'page') {
      const copy = RED.util.cloneMessage(msg)
      fill(copy, page, pageFailures)
      copy.page = pageNo++
      copy.complete = spec.scan.complete
      send(spec.route(copy, page.size > 0))
    }
  }
  if (spec.sendAs === 'all') {
    fill(msg, gathered, failures)
    send(spec.route(msg, gathered.size > 0))
  }
  const failure = spec.sendAs === 'key' ? null : failures.failure(read, t)
  // A NodeFailure, deliberately not an Error (nodes/lib/errors.ts): the handler passes it to done() as it is.
  // eslint-disable-next-line @typescript-eslint/only-throw-error
  if (failure) throw failure
}

/** payload: key → value, version: key → version, key: the keys, sorted; errors when some failed. */
function fill(msg: NodeMessage, values: Map<string, ReadValue>, failures: KeyFailures): void {
  const keys = [...values.keys()].sort()
  const payload: Record<string, unknown> = {}
  const version: Record<string, string | undefined> = {}
  for (const key of keys) {
    const v = values.get(key) as ReadValue
    payload[key] = v.value
    version[key] = v.version
  }
  msg.payload = payload
  msg.key = keys
  msg.version = version
  msg.found = keys.length > 0
  if (failures.size > 0) msg.errors = failures.byKey()
  else delete msg.errors
}

import type { Node, NodeAPI, NodeMessage } from 'node-red'
import { settleEach } from '../../src/lang/bounded'
import type { Send } from './handler'
import { KeyFailures, oneKeyFailure } from './key-failures'
import type { Translate } from '../lib/i18n'
import type { StatusView } from '../lib/status'

/** `all`: one msg with every key's result; `key`: one msg per key, in the order the answers come. */
export type SendAs = 'all' | 'key'
export type Output = Parameters<Send>[0]

/** A node's work on each key of a msg that names several. */
export interface ManyKeys<R> {
  keys: readonly string[]
  inFlight: number
  sendAs: SendAs
  run(key: string): Promise<R>
  /** Fills a copy of the msg with one key's result and says what to send. */
  one(msg: NodeMessage, key: string, result: R): Output
  /** Fills the msg with the results of every key that did not fail and says what to send. */
  all(msg: NodeMessage, results: Map<string, R>): Output
}

export interface NodeContext {
  RED: NodeAPI
  node: Node
  status: StatusView
  t: Translate
}

/**
 * Runs a node's work on several keys with a bound in flight. The protocol has no request for
 * several keys, so each key is its own request and nothing is atomic across them. A key that fails
 * loses nothing of the others: with one msg per key, its own msg goes to Catch with the error naming
 * it; with one msg for all, the msg is sent with the others' results and `msg.errors` (key → { kind,
 * code, message }), then fails with the first failed key's code and a message naming it.
 */
export async function runKeys<R>(ctx: NodeContext, msg: NodeMessage, send: Send, spec: ManyKeys<R>): Promise<void> {
  const { RED, node, status, t } = ctx
  const failures = new KeyFailures(status.explain)
  if (spec.sendAs === 'key') {
    await settleEach(
      spec.keys,
      spec.inFlight,
      (key) => spec.run(key),
      (key, outcome) => {
        const copy = RED.util.cloneMessage(msg)
        copy.key = key
        if (outcome.ok) {
          send(spec.one(copy, key, outcome.value))
          return
        }
        const failure = oneKeyFailure(key, failures.add(key, outcome.error), t)
        status.failure(failure)
        node.error(failure, copy)
      },
    )
    return
  }
  const results = new Map<string, R>()
  const outcomes = await settleEach(spec.keys, spec.inFlight, (key) => spec.run(key))
  outcomes.forEach((outcome, i) => {
    const key = spec.keys[i] as string
    if (outcome.ok) results.set(key, outcome.value)
    else failures.add(key, outcome.error)
  })
  msg.key = [...spec.keys]
  // A previous node's msg.errors would read as this node's.
  if (failures.size > 0) msg.errors = failures.byKey()
  else delete msg.errors
  send(spec.all(msg, results))
  const failure = failures.failure(spec.keys.length, t)
  // A NodeFailure, deliberately not an Error (nodes/lib/errors.ts): the handler passes it to done() as it is.
  // eslint-disable-next-line @typescript-eslint/only-throw-error
  if (failure) throw failure
}

import type { Node, NodeMessage, NodeMessageInFlow } from 'node-red'
import { toFailure } from '../lib/errors'
import { keyUsedBy } from './msg-key'
import type { StatusView } from '../lib/status'

export type Send = (msg: NodeMessage | Array<NodeMessage | NodeMessage[] | null>) => void
export type InputHandler = (msg: NodeMessageInFlow, send: Send) => Promise<void>

/**
 * Registers an async input handler that can never reject: the runtime calls input handlers inside
 * a plain try/catch, so a rejected promise would be an unhandled rejection and stop Node-RED. Every
 * failure goes to `done(err)` exactly once, with the msg as it arrived, so a Catch node gets both.
 */
export function onInput(node: Node, status: StatusView, handler: InputHandler): void {
  node.on('input', (msg, send, done) => {
    void (async () => {
      let failure: unknown = undefined
      let failed = false
      try {
        await handler(msg, send)
      } catch (err) {
        failed = true
        failure = err
      }
      try {
        if (failed) {
          const key = keyUsedBy(msg)
          const explained = status.explain(failure, key)
          status.failure(explained, key)
          done(toFailure(explained))
        } else {
          done()
        }
      } catch (err) {
        // Nothing may escape: this promise has no one to reject to.
        node.error(err)
      }
    })()
  })
}

/** For work outside an input (watch notifications, leadership changes): report with the msg so Catch still sees it. */
export function reportError(node: Node, status: StatusView, err: unknown, msg: NodeMessage = {}): void {
  const key = keyUsedBy(msg)
  const explained = status.explain(err, key)
  status.failure(explained, key)
  node.error(toFailure(explained), msg)
}

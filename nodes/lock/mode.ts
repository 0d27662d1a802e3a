import type { Node, NodeAPI, NodeMessage } from 'node-red'
import type { StateStoreClient } from '../../src/client'
import { ConnectionError } from '../../src/diagnostics/errors'
import type { StoreConfigNode } from '../config/config-node'
import type { Translate } from '../lib/i18n'
import type { SettingsOf } from '../config/schemas'
import type { StatusView } from '../lib/status'

/** What a msg asks of ss-lock: the choices of its Action setting. */
export type Action = SettingsOf<'ss-lock'>['action']

/** Sends the msg on output 1 (ok) or output 2, with the lock name it used as msg.key. */
export type Out = (ok: boolean, msg: NodeMessage) => void

/** What a mode needs from its node: the settings, the status and the node itself. */
export interface ModeContext {
  readonly RED: NodeAPI
  readonly node: Node
  readonly store: StoreConfigNode | null
  readonly status: StatusView
  readonly t: Translate
  /** The holder name: the setting, or `<client id>/<node id>`. */
  readonly holder: string
  readonly leaseMs: number
  readonly renewPeriodMs: number | undefined
  readonly timeoutMs: number
  /** Lock mode: the longest a msg may hold the lock; 0 for no limit. */
  readonly holdMs: number
  /** Lock mode: how many msgs may wait for one lock name. */
  readonly queueSize: number
  /** Lock mode: how many msgs may hold one lock name at once, across runtimes (a semaphore above 1); default 1. */
  readonly limit?: number
  readonly closing: () => boolean
}

/**
 * One mode of ss-lock. Lease and leader mode hold a name per node (one holder, renewed); lock mode
 * holds it per msg (each msg its own hold, the others waiting in order).
 */
export interface LockMode {
  act(client: StateStoreClient, action: Action, name: string, msg: NodeMessage, out: Out): Promise<void>
  /** The node is closing: release what it holds, end what waits. */
  close(): Promise<void>
  /** The store's connection is up (again). */
  connected?(): void
}

export const text = (b: Buffer | null | undefined): string | null => (b ? b.toString('utf8') : null)

/**
 * Who holds it, told on a "not acquired" msg; undefined when the store cannot be reached to ask:
 * a lock wait that ran out during an outage is still "not acquired", not an error that would stop
 * a flow that waits again.
 */
export async function holderIfReachable(client: StateStoreClient, name: string): Promise<string | null | undefined> {
  try {
    return text((await client.get(name)).value)
  } catch (err) {
    if (err instanceof ConnectionError && err.code !== 'ConnectionClosed') return undefined
    throw err
  }
}

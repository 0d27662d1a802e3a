import type { Node, NodeAPI } from 'node-red'
import type { ClientOptions, ConnectionStatus, StateStoreClient } from '../../src/client'
import type { StoreActivity } from '../../src/observe'
import { InputError } from '../lib/errors'
import { commonTranslator, type Translate } from '../lib/i18n'
import { StatusView } from '../lib/status'

/** A node that uses a state store config node; it hears about every connection change. */
export interface StoreUser {
  readonly id: string
  onConnection(status: ConnectionStatus): void
}

/** What the `ss-config` node offers its users (see nodes/ss-config.ts). */
export interface StoreConfigNode extends Node {
  readonly clientId: string
  readonly connection: ConnectionStatus
  /** What this connection and its users do, for the editor's sidebar. */
  readonly activity: StoreActivity
  /** The broker connected to ('' until the embedded emulator has started). */
  readonly brokerUrl: string
  readonly embedded: boolean
  /** The client once created (null before the first user registers and after the last leaves). */
  readonly client: Promise<StateStoreClient> | null
  /** The options the client connects with ('' broker: null), for another connection to the same broker. */
  clientOptions(): ClientOptions | null
  register(user: StoreUser): void
  /** `removed`: the user was deleted or disabled (not just stopped); the last removed user disconnects. */
  deregister(user: StoreUser, removed: boolean): Promise<void>
  /**
   * The client once started, connected or not: its requests wait for a connection that is down
   * (the node's connection wait, applied by the client) and fail with a ConnectionError after it.
   */
  started(): Promise<StateStoreClient>
  /** A ConnectionError in the catalogue's words, with the reason the connection is down; any other error as it is. */
  explain(err: unknown): unknown
}

export interface Attachment {
  readonly store: StoreConfigNode | null
  readonly status: StatusView
  readonly t: Translate
  /** The started client, or a clear error (no config node, no client). */
  readonly client: () => Promise<StateStoreClient>
}

export interface AttachOptions {
  /** Connection changes, after the node's status shows them. */
  onConnection?(status: ConnectionStatus): void
  /** Work to finish before the node leaves the config node (releasing a lock, stopping watches). */
  beforeClose?(removed: boolean): Promise<void>
}

/**
 * The common life of every palette node: find the config node, register with it so its status
 * follows the connection, and deregister on close (always, whether or not the config node closes too).
 */
export function attach(RED: NodeAPI, node: Node, storeId: string | undefined, options: AttachOptions = {}): Attachment {
  const t = commonTranslator(RED)
  const found = storeId ? (RED.nodes.getNode(storeId) as StoreConfigNode | null) : null
  const store = found && found.type === 'ss-config' ? found : null
  const label = node.name || node.type
  const status = new StatusView(
    node,
    t,
    store
      ? (err, key) =>
          store.activity.metrics.msgFailed(label, err, { nodeId: node.id, ...(key !== undefined ? { key } : {}) })
      : undefined,
    store ? (err) => store.explain(err) : undefined,
  )
  const user: StoreUser = {
    id: node.id,
    onConnection(s) {
      status.onConnection(s)
      options.onConnection?.(s)
    },
  }
  if (store) store.register(user)
  else status.misconfigured('status.noConfig')

  node.on('close', (removed: boolean, done: () => void) => {
    void (async () => {
      try {
        await options.beforeClose?.(removed)
      } catch (err) {
        node.warn(err instanceof Error ? err.message : String(err))
      }
      store?.activity.forget(node.id)
      try {
        await store?.deregister(user, removed)
      } catch (err) {
        node.warn(err instanceof Error ? err.message : String(err))
      }
      done()
    })()
  })

  return {
    store,
    status,
    t,
    async client() {
      if (!store) throw new InputError('NoConfig', t('errors.noConfig'))
      return store.started()
    },
  }
}

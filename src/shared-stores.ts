import { ArgumentError } from './errors'
import type {
  ConnectionStatus,
  DeleteOptions,
  DeleteResult,
  GetResult,
  KeyScan,
  NotificationListener,
  Observation,
  RequestOptions,
  SetOptions,
  SetResult,
  StateStoreClient,
} from './client'
import { Lease, LeaderElection, Lock, type LeaderElectionOptions, type LeaseOptions, type LockOptions } from './locks'
import type { Bytes } from './protocol'

/** A connection Node-RED's state store config node shares with Function nodes (nodes/lib/function-access.ts). */
export interface SharedConnection {
  /** The config node's id and name. */
  readonly id: string
  readonly name: string
  /** The config node's client, started (created on first use); fails with a ConnectionError once the config node has closed. */
  client(): Promise<StateStoreClient>
  readonly status: ConnectionStatus
}

/**
 * One map per process, whatever copy of the package loads it: Node-RED loads the nodes from the
 * package it installed, a Function node's Modules from the user directory's node_modules, which
 * are the same files in the usual install but need not be.
 */
const KEY = Symbol.for('node-red-contrib-aio-statestore/shared-connections')
function connections(): Map<string, SharedConnection> {
  const holder = globalThis as { [KEY]?: Map<string, SharedConnection> }
  return (holder[KEY] ??= new Map<string, SharedConnection>())
}

/** Offers a connection to Function nodes until the returned function withdraws it. */
export function shareConnection(connection: SharedConnection): () => void {
  connections().set(connection.id, connection)
  return () => {
    if (connections().get(connection.id) === connection) connections().delete(connection.id)
  }
}

function find(nameOrId: string): SharedConnection {
  if (typeof nameOrId !== 'string' || nameOrId === '') throw new ArgumentError('stateStore() takes the name or the id of a state store config node')
  const all = connections()
  const byId = all.get(nameOrId)
  if (byId) return byId
  const named = [...all.values()].filter((c) => c.name === nameOrId)
  if (named.length === 1) return named[0]!
  if (named.length > 1)
    throw new ArgumentError(
      `${named.length} state store config nodes are named ${JSON.stringify(nameOrId)}: use the id of one (${named.map((c) => c.id).join(', ')})`,
    )
  throw new ArgumentError(
    `no state store config node named ${JSON.stringify(nameOrId)} is deployed (known: ${[...all.values()].map((c) => c.name || c.id).join(', ') || 'none'})`,
  )
}

/**
 * The state store of a config node, by its name or id, for code in a Function node that lists this
 * package in its Modules: the config node's own connection, never a second one. Each call finds the
 * config node as deployed now, so a store kept across msgs follows a redeploy; what it made (locks,
 * observations) stays with the connection it was made on and ends when that config node closes.
 */
export function stateStore(nameOrId: string): SharedStore {
  return new SharedStore(find(nameOrId).id)
}

/** The client's verbs over a shared connection; it has no close(): the config node owns the connection. */
export class SharedStore {
  constructor(readonly id: string) {}

  private client(): Promise<StateStoreClient> {
    return find(this.id).client()
  }

  get status(): ConnectionStatus {
    return find(this.id).status
  }

  async get(key: Bytes, options?: RequestOptions): Promise<GetResult> {
    return (await this.client()).get(key, options)
  }

  async set(key: Bytes, value: Bytes, options?: SetOptions): Promise<SetResult> {
    return (await this.client()).set(key, value, options)
  }

  async del(key: Bytes, options?: DeleteOptions): Promise<DeleteResult> {
    return (await this.client()).del(key, options)
  }

  async vdel(key: Bytes, value: Bytes, options?: DeleteOptions): Promise<DeleteResult> {
    return (await this.client()).vdel(key, value, options)
  }

  /** The keys matching a glob, a page per `next()` (see StateStoreClient.scan). */
  async scan(pattern: Bytes, options?: RequestOptions): Promise<KeyScan> {
    return (await this.client()).scan(pattern, options)
  }

  /** Notifications of a key's changes until `stop()`: stop it in the Function node's On Stop, or it lasts as long as the connection. */
  async observe(key: Bytes, listener: NotificationListener, options?: RequestOptions): Promise<Observation> {
    return (await this.client()).observe(key, listener, options)
  }

  /** A lock (`acquire`, `release`, `edit`) on this connection. */
  async lock(name: Bytes, options?: LockOptions): Promise<Lock> {
    return new Lock(await this.client(), name, options)
  }

  async lease(name: Bytes, options?: LeaseOptions): Promise<Lease> {
    return new Lease(await this.client(), name, options)
  }

  async leaderElection(name: Bytes, options?: LeaderElectionOptions): Promise<LeaderElection> {
    return new LeaderElection(await this.client(), name, options)
  }
}

import { randomUUID } from 'node:crypto'
import { ArgumentError, flowCode, StateStoreError, type StateStoreErrorKind } from '../diagnostics/errors'
import type {
  ConnectionStatus,
  DeleteOptions,
  DeleteResult,
  GetResult,
  RequestOptions,
  SetOptions,
  SetResult,
  StateStoreClient,
} from '../client'
import type { Hlc } from '../hlc'
import {
  DEFAULT_LEASE_MS,
  Lock,
  updateKey,
  type EditContext,
  type LockOptions,
  type Updated,
  type WaitOptions,
} from '../locks'
import type { Bytes } from '../protocol'

/** A connection Node-RED's state store config node shares with Function nodes (nodes/config/function-access.ts). */
export interface SharedConnection {
  /** The config node's id and name. */
  readonly id: string
  readonly name: string
  /** The tab the config node is scoped to; empty (or absent) for a global one. */
  readonly scope?: string
  /**
   * The config node's client, started (created on first use); fails with a ConnectionError once the config node has
   * closed.
   */
  client(): Promise<StateStoreClient>
  readonly status: ConnectionStatus
}

/**
 * The flows a Function node sits in (its tab, then any subflow instances), by the node's id; undefined for no such
 * node.
 */
export type FlowsOf = (functionNodeId: string) => readonly string[] | undefined

interface Registry {
  connections: Map<string, SharedConnection>
  flowsOf: FlowsOf
}

/**
 * This copy's registry, in a module variable: nothing a flow can read leads to it. Node-RED loads
 * the nodes from the package it installed, a Function node's Modules from the user directory's
 * node_modules (or its externalModules), which are the same files in the usual install but need
 * not be; so the copy that shares connections puts its `stateStore` (never the registry) on a
 * global symbol, fixed once set, and `stateStore()` of any other copy calls that. Code that finds
 * the symbol gets what `stateStore()` gives: a store of its own flow's.
 */
const registry: Registry = { connections: new Map<string, SharedConnection>(), flowsOf: () => undefined }
const DOOR = Symbol.for('node-red-contrib-aio-statestore/state-store')
type Door = (nameOrId: string) => StoreAccess

function door(): Door | undefined {
  return (globalThis as { [DOOR]?: Door })[DOOR]
}

/** Makes this copy the one every copy's `stateStore()` calls, unless one already is. */
function claimDoor(): void {
  if (door()) return
  Object.defineProperty(globalThis, DOOR, {
    value: Object.freeze(openStore),
    enumerable: false,
    writable: false,
    configurable: false,
  })
}

/** Offers a connection to Function nodes until the returned function withdraws it. */
export function shareConnection(connection: SharedConnection): () => void {
  claimDoor()
  const { connections } = registry
  connections.set(connection.id, connection)
  return () => {
    if (connections.get(connection.id) === connection) connections.delete(connection.id)
  }
}

/** How the runtime's glue tells which flows a Function node is in. */
export function setFlowsOf(flowsOf: FlowsOf): void {
  claimDoor()
  registry.flowsOf = flowsOf
}

/**
 * Node-RED names a Function node's scripts `Function node:<id>`, `Function node setup:<id>`, `Function node
 * cleanup:<id>`.
 */
const FUNCTION_FRAME = /\(?Function node(?: setup| cleanup)?:([^\s:[\]()]+)/g

/**
 * The flows the code calling `stateStore()` may use: those of the Function node whose script is on
 * the stack. Code that is no Function node's, or frames of two Function nodes, see global config
 * nodes only. This scopes ordinary code; it is no sandbox against code written to escape one (nor is
 * Node-RED's Function node).
 */
function callerFlows(): ReadonlySet<string> {
  const holder: { stack?: string } = {}
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 64
  Error.captureStackTrace(holder, openStore)
  Error.stackTraceLimit = limit
  const ids = new Set([...(holder.stack ?? '').matchAll(FUNCTION_FRAME)].map((m) => m[1]!))
  if (ids.size !== 1) return new Set()
  return new Set(registry.flowsOf([...ids][0]!) ?? [])
}

function visibleFrom(flows: ReadonlySet<string>): (c: SharedConnection) => boolean {
  return (c) => !c.scope || flows.has(c.scope)
}

function find(nameOrId: string, visible: (c: SharedConnection) => boolean): SharedConnection {
  if (typeof nameOrId !== 'string' || nameOrId === '')
    throw new ArgumentError('stateStore() takes the name or the id of a state store config node')
  const all = [...registry.connections.values()].filter(visible)
  const byId = all.find((c) => c.id === nameOrId)
  if (byId) return byId
  const named = all.filter((c) => c.name === nameOrId)
  if (named.length === 1) return named[0]!
  if (named.length > 1)
    throw new ArgumentError(
      `${named.length} state store config nodes are named ${JSON.stringify(nameOrId)}: use the id of one ` +
        `(${named.map((c) => c.id).join(', ')})`,
    )
  // Names no other config node: the ones other flows use are not this flow's to learn.
  throw new ArgumentError(
    `no state store config node named ${JSON.stringify(nameOrId)} is deployed for this flow (global or on its tab)`,
  )
}

/**
 * An error as a flow sees it: the client's error with its code spelled as the nodes spell it (`NotConnected`), the
 * original as `cause`.
 */
export class StoreAccessError extends StateStoreError {
  readonly kind: StateStoreErrorKind
  readonly code: string
  override readonly name: string
  constructor(err: StateStoreError) {
    super(err.message, { cause: err })
    this.kind = err.kind
    this.code = flowCode(err)
    this.name = err.name
  }
}

async function flowErrors<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (err) {
    throw err instanceof StateStoreError && !(err instanceof StoreAccessError) ? new StoreAccessError(err) : err
  }
}

/** A lock of a Function node's store: its operations, nothing that reaches the connection. */
export interface StoreLock {
  /** Waits until the lock is this one's; the fencing token. */
  acquire(options?: WaitOptions): Promise<Hlc>
  release(options?: RequestOptions): Promise<boolean>
  /**
   * Read-modify-write under the lock (see Lock.edit): `fn` gets the current value, returns the new one (null deletes
   * the key).
   */
  edit(
    key: Bytes,
    fn: (current: Buffer | null, context: EditContext) => Bytes | null | Promise<Bytes | null>,
    options?: WaitOptions,
  ): Promise<SetResult | DeleteResult>
}

export interface UpdateAccessOptions {
  /** How long the update may wait for the key's lock and try again; default 10 s. */
  timeoutMs?: number
  leaseMs?: number
  persist?: boolean
}

/** What a Function node gets: the store's operations only; no client, credentials or broker are reachable from it. */
export interface StoreAccess {
  get(key: Bytes, options?: RequestOptions): Promise<GetResult>
  set(key: Bytes, value: Bytes, options?: SetOptions): Promise<SetResult>
  delete(key: Bytes, options?: DeleteOptions): Promise<DeleteResult>
  /** The keys matching a glob, every page; more than `MAX_LISTED_KEYS` fail with InvalidArgument. */
  keys(pattern: Bytes, options?: RequestOptions): Promise<string[]>
  lock(name: Bytes, options?: LockOptions): Promise<StoreLock>
  /** Read-modify-write of `key` under its lock `<key>.lock`, as the *update key* node does it. */
  update(
    key: string,
    fn: (current: Buffer | null, version: Hlc | null) => Bytes | Promise<Bytes>,
    options?: UpdateAccessOptions,
  ): Promise<Updated>
}

/** The most keys `keys()` gathers: a listing bigger than that belongs in `aio-statestore export`. */
export const MAX_LISTED_KEYS = 100_000

/**
 * The state store of a config node, by its name or id, for code in a Function node that lists this
 * package in its Modules: the config node's own connection, never a second one, among the config
 * nodes the Function node's flow may use (global ones and its own tab's). Each call of an operation
 * finds the config node as deployed now, so a store kept across msgs follows a redeploy. The object
 * holds only closures: a walk over its properties reaches no client, password or broker.
 */
export function stateStore(nameOrId: string): StoreAccess {
  const shared = door()
  return shared && shared !== openStore ? shared(nameOrId) : openStore(nameOrId)
}

/** `stateStore()` over this copy's registry. */
function openStore(nameOrId: string): StoreAccess {
  const visible = visibleFrom(callerFlows())
  let id: string
  try {
    id = find(nameOrId, visible).id
  } catch (err) {
    throw err instanceof StateStoreError ? new StoreAccessError(err) : err
  }
  const client = () => find(id, visible).client()
  const access: StoreAccess = {
    get: (key, options) => flowErrors(async () => (await client()).get(key, options)),
    set: (key, value, options) => flowErrors(async () => (await client()).set(key, value, options)),
    delete: (key, options) => flowErrors(async () => (await client()).del(key, options)),
    keys: (pattern, options) =>
      flowErrors(async () => {
        const keys: string[] = []
        for await (const page of (await client()).scan(pattern, options)) {
          keys.push(...page)
          if (keys.length > MAX_LISTED_KEYS)
            throw new ArgumentError(
              `more than ${MAX_LISTED_KEYS} keys match: narrow the pattern, or use aio-statestore export`,
            )
        }
        return keys
      }),
    lock: (name, options) => flowErrors(async () => lockAccess(new Lock(await client(), name, options))),
    update: (key, fn, options = {}) =>
      flowErrors(async () =>
        updateKey(await client(), key, fn, {
          holdValue: () => `function-node/${randomUUID()}`,
          leaseMs: options.leaseMs ?? DEFAULT_LEASE_MS,
          timeoutMs: options.timeoutMs ?? 10_000,
          persist: options.persist === true,
        }),
      ),
  }
  return Object.freeze(access)
}

function lockAccess(lock: Lock): StoreLock {
  return Object.freeze({
    acquire: (options?: WaitOptions) => flowErrors(() => lock.acquire(options)),
    release: (options?: RequestOptions) => flowErrors(() => lock.release(options)),
    edit: (key: Bytes, fn: Parameters<StoreLock['edit']>[1], options?: WaitOptions) =>
      flowErrors(() => lock.edit(key, fn, options)),
  })
}

import { EventEmitter } from 'node:events'
import { StateStoreClient } from '../../../src/client'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { TcpRelay } from '../../support/relay'
import { describeLimit, scaled } from '../../support/deadline'

/** Node methods are sinon spies on Node.prototype during a test: calls of every node, told apart by thisValue. */
export interface Spy {
  (...args: unknown[]): void
  getCalls(): Array<{ args: unknown[]; thisValue: unknown }>
}

/** The parts of node-red-node-test-helper these tests use (it ships no types). */
export interface TestNode extends EventEmitter {
  id: string
  type: string
  receive(msg: Record<string, unknown>): void
  status: Spy
  error: Spy
  warn: Spy
}
export interface TestHelper {
  init(path: string, settings?: Record<string, unknown>): void
  load(modules: unknown[], flow: unknown[], credentials?: Record<string, unknown>): Promise<void>
  setFlows(flow: unknown[], type: 'full' | 'flows' | 'nodes', credentials?: Record<string, unknown>): Promise<void>
  unload(): Promise<void>
  getNode(id: string): TestNode
  settings(s: Record<string, unknown>): void
}

// eslint-disable-next-line @typescript-eslint/no-require-imports
export const helper = require('node-red-node-test-helper') as TestHelper

/**
 * The Node-RED the node tests run in: 5, or 4 on a Node.js below 5's floor of 22.9 (CI's Node.js 20
 * run), the Node-RED a user of that Node.js has.
 */
const [nodeMajor = 0, nodeMinor = 0] = process.versions.node.split('.').map(Number)
export const NODE_RED_MAJOR = nodeMajor > 22 || (nodeMajor === 22 && nodeMinor >= 9) ? 5 : 4
const RED = require.resolve(NODE_RED_MAJOR === 5 ? 'node-red' : 'node-red-v4')
helper.init(RED)

/**
 * The helper's setFlows waits a fixed 300 ms for the flows to start after a deploy, which a busy
 * machine overruns (a partial deploy at load 16): the same wait on the suite's time scale, heard
 * from before the deploy.
 */
const internals = helper as unknown as {
  _redNodes: { setFlows(flow: unknown[], credentials: object, type: string): Promise<unknown> }
  _events: { on(event: string, f: () => void): void; off(event: string, f: () => void): void }
}
const STARTED_MS = 2000
helper.setFlows = async (flow: unknown[], type: 'full' | 'flows' | 'nodes', credentials?: Record<string, unknown>) => {
  let heard: () => void = () => {}
  const started = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the flows did not start within ${describeLimit(STARTED_MS, scaled(STARTED_MS))}`)),
      scaled(STARTED_MS),
    )
    heard = () => {
      clearTimeout(timer)
      resolve()
    }
    internals._events.on('flows:started', heard)
  })
  try {
    await internals._redNodes.setFlows(flow, credentials ?? {}, type || 'full')
    await started
  } finally {
    internals._events.off('flows:started', heard)
    started.catch(() => {})
  }
}

/** A module of the Node-RED the tests run in: a core node, its util. */
export function redModule(path: string): unknown {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require(require.resolve(path, { paths: [RED] }))
}

/* eslint-disable @typescript-eslint/no-require-imports */
export const modules = {
  config: require('../../../nodes/ss-config'),
  get: require('../../../nodes/ss-get'),
  set: require('../../../nodes/ss-set'),
  del: require('../../../nodes/ss-del'),
  lock: require('../../../nodes/ss-lock'),
  update: require('../../../nodes/ss-update'),
  watch: require('../../../nodes/ss-watch'),
}
export const ALL = Object.values(modules)
/* eslint-enable @typescript-eslint/no-require-imports */

export const COMMON = 'node-red-contrib-aio-statestore/ss-config:common.'

export interface Store {
  emulator: Emulator
  proxy: TcpRelay
  url: string
  stop(): Promise<void>
}

export async function startStore(): Promise<Store> {
  const emulator = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, logLevel: 'error' })
  const proxy = await TcpRelay.start(emulator.brokerUrl)
  return {
    emulator,
    proxy,
    url: proxy.url,
    async stop() {
      await proxy.stop()
      await emulator.stop()
    },
  }
}

/**
 * A store for the enclosing describe block: started before its tests and stopped after them, with the
 * flows unloaded after each test. Its properties are read when a test runs, once the store is up.
 */
export function useStore(): Store {
  let current: Store | null = null
  before(async () => {
    current = await startStore()
  })
  after(async () => {
    await current?.stop()
    current = null
  })
  afterEach(() => helper.unload())
  const started = (): Store => {
    if (!current) throw new Error('the store is started in before(); use it inside a test or hook')
    return current
  }
  return {
    get emulator() {
      return started().emulator
    },
    get proxy() {
      return started().proxy
    },
    get url() {
      return started().url
    },
    stop: () => started().stop(),
  }
}

interface Mailbox {
  queue: Array<Record<string, unknown>>
  waiter: ((msg: Record<string, unknown>) => void) | null
}
const mailboxes = new WeakMap<TestNode, Mailbox>()

/**
 * Every msg a helper node receives, in order. One permanent listener per node: Node-RED nodes keep
 * input listeners in their own list, where EventEmitter's once/removeListener pairs do not work.
 */
function mailbox(node: TestNode): Mailbox {
  let box = mailboxes.get(node)
  if (!box) {
    const created: Mailbox = { queue: [], waiter: null }
    node.on('input', (msg: Record<string, unknown>) => {
      if (created.waiter) created.waiter(msg)
      else created.queue.push(msg)
    })
    mailboxes.set(node, created)
    box = created
  }
  return box
}

/** A client of its own on `url` (its id starts with `name`) for the length of `work`, closed after. */
export async function withClient<T>(
  url: string,
  work: (c: StateStoreClient) => Promise<T>,
  name = 'test-client',
): Promise<T> {
  const client = new StateStoreClient({ brokerUrl: url, clientId: `${name}-${Math.random().toString(36).slice(2)}` })
  try {
    await client.ready({ timeoutMs: scaled(5000) })
    return await work(client)
  } finally {
    await client.close()
  }
}

/** Resolves with the next msg the helper node receives (queued if it came already), or rejects after `ms`. */
export function nextMessage(node: TestNode, ms = 3000): Promise<Record<string, unknown>> {
  const box = mailbox(node)
  const queued = box.queue.shift()
  if (queued) return Promise.resolve(queued)
  const limit = scaled(ms)
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      box.waiter = null
      reject(new Error(`no msg at ${node.id} within ${describeLimit(ms, limit)}`))
    }, limit)
    // The loser of a race between two nodes must not keep mocha from exiting.
    timer.unref()
    box.waiter = (msg) => {
      clearTimeout(timer)
      box.waiter = null
      resolve(msg)
    }
  })
}

/** Asserts that no msg arrives at `node` for `ms` (used only where absence is the outcome). */
export async function noMessage(node: TestNode, ms = 300): Promise<void> {
  const box = mailbox(node)
  await new Promise((r) => setTimeout(r, ms))
  if (box.queue.length > 0) throw new Error(`unexpected msg at ${node.id}: ${JSON.stringify(box.queue[0])}`)
}

/** Starts recording a helper node's msgs now (so nothing sent before the first nextMessage is lost). */
export function listen(...nodes: TestNode[]): void {
  for (const n of nodes) mailbox(n)
}

/** The last status a node showed. */
export function lastStatus(node: TestNode): { fill?: string; shape?: string; text?: string } {
  const calls = statuses(node)
  return calls.length ? calls[calls.length - 1]! : {}
}

export function statuses(node: TestNode): Array<{ fill?: string; shape?: string; text?: string }> {
  return node.status
    .getCalls()
    .filter((c) => c.thisValue === node)
    .map((c) => c.args[0] as { fill?: string; shape?: string; text?: string })
}

export const TAB = { id: 'tab', type: 'tab', label: 'test' }

export function configNode(url: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { id: 'cfg', type: 'ss-config', name: 'store', broker: url, clientId: '', requestTimeout: '3000', ...extra }
}

/**
 * A flow node on the test tab. It needs x/y: the runtime treats a node without them as a config node
 * (and then mistakes a property value that equals its id, such as type "catch", for a reference).
 */
export function onTab(node: Record<string, unknown>): Record<string, unknown> {
  return { z: 'tab', x: 100, y: 100, wires: [], ...node }
}

/** A palette node plus the helper sinks for its outputs and a Catch node for its errors. */
export function flowWith(
  url: string,
  node: Record<string, unknown>,
  outputs = 1,
  configExtra: Record<string, unknown> = {},
): unknown[] {
  const sinks = Array.from({ length: outputs }, (_, i) => onTab({ id: `out${i + 1}`, type: 'helper' }))
  return [
    TAB,
    configNode(url, configExtra),
    onTab({ store: 'cfg', wires: sinks.map((s) => [s.id]), ...node }),
    ...sinks,
    onTab({ id: 'catcher', type: 'catch', scope: null, uncaught: false, wires: [['caught']] }),
    onTab({ id: 'caught', type: 'helper' }),
  ]
}

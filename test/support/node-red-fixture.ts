/**
 * One Node-RED runtime for a describe block, as users run it: Node-RED 5's own `red.js` in a child
 * process, this package from the working tree, an emulator, the flows given, and the editor's
 * /comms websocket open. `withNodeRed` registers the `before` and `after` hooks; the fields are
 * there from the first test on.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  FROM_WORKING_TREE,
  RED_JS,
  runtimeSettings,
  startNodeRed,
  writeSettings,
  type NodeRedChild,
} from '../../dev/node-red'
import { freePort } from '../../dev/ports'
import { StateStoreClient } from '../../src/client'
import { startEmulator, type Emulator } from '../../src/emulator'
import { EmulatorCli } from './emulator-cli'
import { Comms } from './node-red-comms'

export interface NodeRedOptions {
  /** Names the work folder, the runtime's credential secret and the test's own client. */
  name: string
  /** The runtime's flows, given the emulator's broker URL. */
  flows: (brokerUrl: string) => unknown[]
  /** The runtime's `aioStateStore` settings. */
  aioStateStore?: Record<string, unknown>
  /**
   * Where the emulator runs: in this process (the default), or in its own, as users run it, so that
   * the test's clock times Node-RED and not the emulator's work.
   */
  emulator?: 'inProcess' | 'ownProcess'
}

export interface NodeRedRuntime {
  readonly red: NodeRedChild
  readonly comms: Comms
  readonly brokerUrl: string
  /** A client of the test's own on the emulator. */
  readonly client: StateStoreClient
  /** Presses an inject node's button, as the editor does. */
  inject(id: string): Promise<void>
}

export function withNodeRed(options: NodeRedOptions): NodeRedRuntime {
  let work = ''
  let inProcess: Emulator | undefined
  let ownProcess: EmulatorCli | undefined
  let client: StateStoreClient | undefined
  let started: Omit<NodeRedRuntime, 'inject'> | undefined
  const get = (): Omit<NodeRedRuntime, 'inject'> => {
    if (!started) throw new Error(`the ${options.name} runtime is not started (withNodeRed's before hook)`)
    return started
  }

  before(async () => {
    work = mkdtempSync(join(tmpdir(), `aio-ss-${options.name}-`))
    let brokerUrl: string
    if (options.emulator === 'ownProcess') {
      ownProcess = await EmulatorCli.start(['--listen', '127.0.0.1:0', '--log-level', 'warn'])
      brokerUrl = /ready on (mqtt:\/\/\S+)/.exec(ownProcess.stdout)![1]!
    } else {
      inProcess = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, logLevel: 'error' })
      brokerUrl = inProcess.brokerUrl
    }
    client = new StateStoreClient({ brokerUrl, clientId: `${options.name}-test` })
    await client.ready({ timeoutMs: 10_000 })
    const settingsFile = join(work, 'settings.js')
    const settings = { ...FROM_WORKING_TREE, credentialSecret: `${options.name}-test` }
    writeSettings(
      settingsFile,
      runtimeSettings(options.aioStateStore ? { ...settings, aioStateStore: options.aioStateStore } : settings),
    )
    writeFileSync(join(work, 'flows.json'), JSON.stringify(options.flows(brokerUrl)))
    const red = await startNodeRed({
      redJs: RED_JS[5],
      userDir: work,
      port: await freePort(),
      settingsFile,
      ready: async (url, log) => (await fetch(`${url}/settings`)).ok && log.includes('connected to the state store'),
    })
    const comms = new Comms(red.url.replace('http://', 'ws://') + '/comms')
    started = { red, comms, brokerUrl, client }
    await comms.open()
  })

  after(async () => {
    started?.comms.close()
    await started?.red.stop()
    await client?.close()
    await inProcess?.stop()
    await ownProcess?.kill()
    if (work) rmSync(work, { recursive: true, force: true })
  })

  return {
    get red() {
      return get().red
    },
    get comms() {
      return get().comms
    },
    get brokerUrl() {
      return get().brokerUrl
    },
    get client() {
      return get().client
    },
    async inject(id: string) {
      const res = await fetch(`${get().red.url}/inject/${id}`, { method: 'POST' })
      if (res.status !== 200) throw new Error(`inject ${id}: HTTP ${res.status}`)
    },
  }
}

/** A flow node on the tab `tab`, placed: the runtime takes a node without x and y for a config node. */
export const onTab = (n: Record<string, unknown>): Record<string, unknown> => ({ x: 100, y: 100, z: 'tab', ...n })

/** An inject node whose button (`inject(id)`) sends msg.topic `topic` to `wires`. */
export const injectTopic = (id: string, topic: string, wires: string[]): Record<string, unknown> => ({
  id,
  type: 'inject',
  z: 'tab',
  topic,
  props: [{ p: 'topic', vt: 'str' }],
  wires: [wires],
})

/** A debug node showing `msg.<complete>` in the sidebar, where `comms.debug` reads it. */
export const debugOf = (id: string, complete: string): Record<string, unknown> => ({
  id,
  type: 'debug',
  z: 'tab',
  active: true,
  tosidebar: true,
  complete,
  wires: [],
})

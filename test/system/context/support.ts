import { startEmulator, type Emulator } from '../../../src/emulator'
import { StateStoreContext } from '../../../src/context/state-store-context'
import type { ContextStoreConfig } from '../../../src/context/config'
import type { LogLevel } from '../../../src/client'
import type { StateStoreClient } from '../../../src/client'
import { BUCKETS } from '../../../src/context/index-format'
import { Mosquitto, mosquittoPath } from '../../support/mosquitto'
import { scaled } from '../../support/deadline'

/** Node-RED's own memory store: the reference every behaviour here is compared with. */
// eslint-disable-next-line @typescript-eslint/no-require-imports
export const memoryStore = require('@node-red/runtime/lib/nodes/context/memory') as (config: object) => NodeRedStore

/** The Store API as Node-RED calls it. */
export interface NodeRedStore {
  open(): Promise<void>
  close(): Promise<void>
  get(scope: string, key: string | string[], callback?: (err?: Error | null, ...values: unknown[]) => void): unknown
  set(scope: string, key: string | string[], value: unknown, callback?: (err?: Error | null) => void): void
  keys(scope: string, callback?: (err: Error | null, keys?: string[]) => void): unknown
  delete(scope: string): Promise<void>
  clean(activeNodes: string[]): Promise<void>
}

export interface LogLine {
  level: LogLevel
  message: string
}

/** mosquitto with the emulator attached; each test file gets its own, on free ports. */
export class Backend {
  private constructor(
    readonly mosquitto: Mosquitto,
    public emulator: Emulator,
  ) {}

  static async start(ctx: Mocha.Context): Promise<Backend> {
    if (!mosquittoPath()) {
      if (process.env.CI) throw new Error('CI must provide mosquitto')
      console.warn('      (skipped: mosquitto is not installed; apt-get install mosquitto to run these tests)')
      ctx.skip()
    }
    const mosquitto = await Mosquitto.start()
    const emulator = await startEmulator({ brokerUrl: mosquitto.url, logLevel: 'error' })
    return new Backend(mosquitto, emulator)
  }

  get url(): string {
    return this.mosquitto.url
  }

  async stop(): Promise<void> {
    await this.emulator.stop()
    await this.mosquitto.stop()
  }
}

export interface TestStore extends NodeRedStore {
  readonly logs: LogLine[]
  readonly inner: StateStoreContext
}

/** A context store as Node-RED would create it, its log captured. */
export function contextStore(config: ContextStoreConfig): TestStore {
  const logs: LogLine[] = []
  // 3 s on a quiet machine, stretched by the suite's time scale.
  const inner = new StateStoreContext({
    requestTimeout: scaled(3000),
    logger: (level, message) => logs.push({ level, message }),
    ...config,
  })
  return Object.assign(inner as unknown as NodeRedStore, { logs, inner })
}

/** The callback form as a promise: resolves with the values after the error argument. */
export function call<T extends unknown[]>(
  fn: (cb: (err?: Error | null, ...values: unknown[]) => void) => void,
): Promise<T> {
  return new Promise((resolve, reject) => {
    fn((err, ...values) => (err ? reject(err) : resolve(values as T)))
  })
}

let counter = 0
/** A prefix no other test uses, so tests on one emulator never see each other's keys. */
export function uniquePrefix(): string {
  counter += 1
  return `test/${process.pid}-${counter}/`
}

/**
 * The key index as any client reads it: every bucket `<prefix>#keys/<00..ff>` merged, then the delta
 * `<prefix>#keys/delta` (`{"<scope>": {"<key>": true|false}}`) applied over it; each scope's keys sorted.
 */
export async function readIndex(client: StateStoreClient, prefix: string): Promise<Record<string, string[]>> {
  const merged = new Map<string, Set<string>>()
  const values = await Promise.all(
    Array.from({ length: BUCKETS }, (_, i) => client.get(`${prefix}#keys/${i.toString(16).padStart(2, '0')}`)),
  )
  for (const { value } of values) {
    if (value === null) continue
    for (const [scope, tops] of Object.entries(JSON.parse(value.toString('utf8')) as Record<string, string[]>)) {
      for (const top of tops) merged.set(scope, (merged.get(scope) ?? new Set()).add(top))
    }
  }
  const delta = (await client.get(`${prefix}#keys/delta`)).value
  if (delta !== null) {
    for (const [scope, tops] of Object.entries(
      JSON.parse(delta.toString('utf8')) as Record<string, Record<string, boolean>>,
    )) {
      for (const [top, exists] of Object.entries(tops)) {
        if (exists) merged.set(scope, (merged.get(scope) ?? new Set()).add(top))
        else merged.get(scope)?.delete(top)
      }
    }
  }
  const listed = [...merged].filter(([, tops]) => tops.size > 0).sort(([a], [b]) => (a < b ? -1 : 1))
  return Object.fromEntries(listed.map(([scope, tops]) => [scope, [...tops].sort()]))
}

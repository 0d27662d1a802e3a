// Types for dev/node-red.js (plain CommonJS so the benchmarks use it without a build step).
export const RED_JS: { readonly 5: string; readonly 4: string }
export function nodeBinary(): string
export const FROM_WORKING_TREE: { nodesDir: string[]; externalModules: { palette: { allowList: string[] } } }
export function runtimeSettings(more?: Record<string, unknown>): Record<string, unknown>
export function writeSettings(file: string, settings: Record<string, unknown>, moreSource?: string): void

export interface StartOptions {
  /** Default: Node-RED 5. */
  redJs?: string
  userDir: string
  port: number
  settingsFile: string
  env?: NodeJS.ProcessEnv
  /** Asked every 100 ms until it answers true; a throw counts as not yet. */
  ready: (url: string, log: string) => boolean | Promise<boolean>
  /** Default 30000. */
  timeoutMs?: number
  /** Each chunk of the runtime's stdout and stderr. */
  onOutput?: (chunk: string) => void
}

export interface NodeRedChild {
  readonly url: string
  readonly pid: number | undefined
  /** Everything it printed so far. */
  readonly log: string
  readonly running: boolean
  readonly exited: Promise<void>
  stop(): Promise<void>
  kill(): Promise<void>
}

export function startNodeRed(options: StartOptions): Promise<NodeRedChild>

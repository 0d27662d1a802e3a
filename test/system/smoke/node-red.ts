// What the smoke test needs to treat Node-RED as a black box: pack and install the package as a
// user would, run the real `red.js` CLI as a child process, and talk to it only through its admin
// HTTP API and the editor's /comms websocket.
import { execFileSync, spawn } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import {
  runtimeSettings,
  startNodeRed,
  writeSettings as writeSettingsFile,
  type NodeRedChild,
} from '../../../dev/node-red'
import { scaled } from '../../support/deadline'

export { nodeBinary, RED_JS } from '../../../dev/node-red'
import { Comms } from '../../support/node-red-comms'
export { Comms, debugValue, formatDebug, type DebugMessage, type NodeStatus } from '../../support/node-red-comms'

export const repoRoot = join(__dirname, '..', '..', '..')

/** The environment for child processes, minus what the outer `npm test` exported for itself. */
function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env)) {
    // npm_config_* would steer the nested npm (prefix, lockfile, ...) to the outer project.
    if (/^npm_/i.test(k) || k === 'INIT_CWD') continue
    env[k] = v
  }
  return env
}

/** childEnv() without AIO_* as well: a runtime that sees only the AIO settings its test gives it. */
export function childEnvWithoutAio(): NodeJS.ProcessEnv {
  const env = childEnv()
  for (const k of Object.keys(env)) if (k.startsWith('AIO_')) delete env[k]
  return env
}

export interface RunResult {
  code: number | null
  stdout: string
  stderr: string
}

export function run(command: string, args: string[], cwd: string, timeoutMs: number): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    const timer = setTimeout(() => child.kill('SIGKILL'), scaled(timeoutMs))
    child.once('error', (err) => {
      clearTimeout(timer)
      reject(err)
    })
    child.once('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}

/** npm as the outer `npm test` ran it (same version), or the one on PATH. */
function npm(): { command: string; prefix: string[] } {
  const cli = process.env.npm_execpath
  if (cli && /\.c?js$/.test(cli)) return { command: process.execPath, prefix: [cli] }
  return { command: 'npm', prefix: [] }
}

export async function npmRun(args: string[], cwd: string, timeoutMs: number): Promise<string> {
  const { command, prefix } = npm()
  const result = await run(command, [...prefix, ...args], cwd, timeoutMs)
  if (result.code !== 0) {
    throw new Error(`npm ${args.join(' ')} (in ${cwd}) exited with ${result.code}\n${result.stdout}\n${result.stderr}`)
  }
  return result.stdout
}

/**
 * `npm pack` of the working tree as built (dist/, by `npm test`'s pretest) into dir; the tarball's
 * path. Without prepack, which empties dist/ and builds it again under the specs running beside.
 */
export async function pack(dir: string): Promise<string> {
  const out = await npmRun(['pack', '--json', '--ignore-scripts', '--pack-destination', dir], repoRoot, 60000)
  const [info] = JSON.parse(out.slice(out.indexOf('['))) as Array<{ filename: string }>
  if (!info) throw new Error(`npm pack printed no file: ${out}`)
  return join(dir, info.filename)
}

/**
 * A copy of the working tree's files (git's tracked and unignored ones), node_modules linked, in a
 * fresh folder: where `npm pack` may run prepack as `npm publish` does (dist/ emptied and built
 * again) without touching the working tree's dist/.
 */
export function treeCopy(): string {
  const copy = mkdtempSync(join(tmpdir(), 'aio-ss-tree-'))
  const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard', '-z'], {
    cwd: repoRoot,
    encoding: 'utf8',
  })
  for (const file of files.split('\0').filter(Boolean)) {
    if (file === 'dist' || file.startsWith('dist/') || !existsSync(join(repoRoot, file))) continue
    mkdirSync(dirname(join(copy, file)), { recursive: true })
    copyFileSync(join(repoRoot, file), join(copy, file))
  }
  symlinkSync(join(repoRoot, 'node_modules'), join(copy, 'node_modules'), 'dir')
  return copy
}

/** A fresh Node-RED user directory with the tarball installed the way the palette manager does. */
export async function installIntoUserDir(userDir: string, tarball: string): Promise<void> {
  mkdirSync(userDir, { recursive: true })
  writeFileSync(
    join(userDir, 'package.json'),
    JSON.stringify({ name: 'node-red-project', version: '0.0.1', private: true }) + '\n',
  )
  await npmRun(['install', '--no-audit', '--no-fund', '--prefer-offline', tarball], userDir, 120000)
}

/** Settings for a throwaway runtime; `moreSource`: further properties as JavaScript source, for what JSON can't say (a `require`). */
export function writeSettings(file: string, moreSource = ''): void {
  writeSettingsFile(file, runtimeSettings({ credentialSecret: 'smoke-test' }), moreSource)
}

export interface NodeSetInfo {
  id: string
  name: string
  types: string[]
  enabled: boolean
  loaded: boolean
  module: string
  version: string
  err?: string
}

/** A Node-RED runtime started from its CLI in a child process; it can be stopped and started again. */
export class NodeRedProcess {
  /** Its output over every start. */
  log = ''
  private child: NodeRedChild | null = null

  constructor(
    readonly redJs: string,
    readonly userDir: string,
    readonly port: number,
    readonly settingsFile: string,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`
  }

  async start(timeoutMs: number): Promise<void> {
    this.child = await startNodeRed({
      redJs: this.redJs,
      userDir: this.userDir,
      port: this.port,
      settingsFile: this.settingsFile,
      env: childEnv(),
      timeoutMs: scaled(timeoutMs),
      onOutput: (d) => (this.log += d),
      // red.js listens only after the runtime has loaded every node set, so an answering admin API
      // means registration is over.
      ready: async (url) => (await fetch(`${url}/settings`, { headers: { Accept: 'application/json' } })).ok,
    })
  }

  async stop(): Promise<void> {
    const child = this.child
    this.child = null
    await child?.stop()
  }

  /** `kill -9`: no flow is closed and no lease released, as when the machine dies. */
  async kill(): Promise<void> {
    const child = this.child
    this.child = null
    await child?.kill()
  }

  async getJson<T>(path: string): Promise<T> {
    const res = await fetch(this.url + path, { headers: { Accept: 'application/json' } })
    if (!res.ok) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`)
    return (await res.json()) as T
  }

  /**
   * A full deploy: replaces every flow. The admin API answers once the flows are saved, before
   * they start; the runtime then announces the started revision on the editor connection.
   */
  async deploy(nodes: unknown[], comms: Comms): Promise<void> {
    const seen = comms.deploys.length
    const res = await fetch(`${this.url}/flows`, {
      method: 'POST',
      // API v2 answers with the new revision (v1 answers 204).
      headers: { 'Content-Type': 'application/json', 'Node-RED-API-Version': 'v2', 'Node-RED-Deployment-Type': 'full' },
      body: JSON.stringify({ flows: nodes }),
    })
    if (!res.ok) throw new Error(`POST /flows: ${res.status} ${await res.text()}`)
    const { rev } = (await res.json()) as { rev: string }
    await comms.waitFor(
      () => (comms.deploys.slice(seen).includes(rev) ? true : undefined),
      10000,
      `start of flow revision ${rev}`,
    )
  }

  /** Presses an inject node's button, as the editor does. */
  async inject(id: string): Promise<void> {
    const res = await fetch(`${this.url}/inject/${id}`, { method: 'POST' })
    if (!res.ok) throw new Error(`POST /inject/${id}: ${res.status} ${await res.text()}`)
  }

  /** The editor's websocket, subscribed to debug output. */
  async comms(): Promise<Comms> {
    const comms = new Comms(`ws://127.0.0.1:${this.port}/comms`)
    await comms.open()
    return comms
  }
}

export function readJson<T>(file: string): T {
  return JSON.parse(readFileSync(file, 'utf8')) as T
}

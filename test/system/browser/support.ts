// What the browser suite needs around the editor: `npm start` as a child process on free ports with
// a throwaway user dir, Debian's chromium driven by playwright-core (never a downloaded browser),
// and a record of everything that went wrong in the page.
import { spawn, type ChildProcess } from 'node:child_process'
import { accessSync, constants, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  chromium,
  type BrowserContext,
  type ConsoleMessage,
  type Page,
  type Request,
  type Response,
} from 'playwright-core'
import { describeLimit, scaled } from '../../support/deadline'
import { nodeBinary, repoRoot } from '../smoke/node-red'

/** Debian's chromium; CHROMIUM_PATH points elsewhere on machines that keep it somewhere else. */
export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium'

export function chromiumInstalled(): boolean {
  try {
    accessSync(CHROMIUM, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/** Screenshots land here (git-ignored), one folder per suite. */
export const ARTIFACTS = join(repoRoot, 'artifacts', 'browser')

const READY = /editor ready at (http:\/\/127\.0\.0\.1:\d+)/

/** `npm start` (scripts/start.mjs, built by `npm test`'s pretest) on free ports with its own user dir. */
export class StartedEditor {
  output = ''
  url = ''
  private child: ChildProcess | null = null
  private exited: Promise<number | null> = Promise.resolve(null)
  private constructor(readonly userDir: string) {}

  /** `args`: npm start's own (`--memory`). */
  static async start(timeoutMs: number, args: string[] = []): Promise<StartedEditor> {
    const started = new StartedEditor(mkdtempSync(join(tmpdir(), 'aio-ss-browser-red-')))
    await started.spawn(timeoutMs, args)
    return started
  }

  private spawn(timeoutMs: number, args: string[]): Promise<void> {
    return new Promise((resolve, reject) => {
      const env = {
        ...process.env,
        PORT: '0',
        MQTT_PORT: '0',
        NODE_RED_USER_DIR: this.userDir,
        EMULATOR_LOG_LEVEL: 'warn',
      }
      const child = spawn(nodeBinary(), [join(repoRoot, 'scripts', 'start.mjs'), ...args], {
        cwd: repoRoot,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      this.child = child
      this.exited = new Promise((r) => child.once('exit', (code) => r(code)))
      const limit = scaled(timeoutMs)
      const timer = setTimeout(
        () => reject(new Error(`npm start was not ready within ${describeLimit(timeoutMs, limit)}:\n${this.output}`)),
        limit,
      )
      child.stdout.on('data', (d: Buffer) => {
        this.output += d
        const url = READY.exec(this.output)?.[1]
        if (url && !this.url) {
          this.url = url
          clearTimeout(timer)
          resolve()
        }
      })
      child.stderr.on('data', (d: Buffer) => (this.output += d))
      void this.exited.then((code) => {
        clearTimeout(timer)
        reject(new Error(`npm start exited (${code}) before it was ready:\n${this.output}`))
      })
    })
  }

  /** Node-RED's log lines at error level, and anything npm start itself reports as a failure. */
  errors(): string[] {
    return this.output.split('\n').filter((l) => / - \[error\] |^\[npm start\] (WARNING|failed)/.test(l))
  }

  async stop(): Promise<void> {
    const child = this.child
    this.child = null
    if (child && child.exitCode === null && child.signalCode === null) {
      const killer = setTimeout(() => child.kill('SIGKILL'), scaled(15000))
      child.kill('SIGTERM')
      await this.exited
      clearTimeout(killer)
    }
    rmSync(this.userDir, { recursive: true, force: true })
  }
}

/** A fresh chromium profile per run, so no cached editor state, cookies or settings carry over. */
export class Browser {
  private constructor(
    readonly context: BrowserContext,
    readonly page: Page,
    private readonly profile: string,
  ) {}

  /**
   * `editorLanguage` is Node-RED's own language setting (User settings > View > Language), which the
   * editor keeps in the browser's localStorage as `editor-language`: set before the editor loads.
   */
  static async launch(options: { editorLanguage?: string } = {}): Promise<Browser> {
    const profile = mkdtempSync(join(tmpdir(), 'aio-ss-browser-profile-'))
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1440, height: 900 },
      deviceScaleFactor: 1,
      locale: 'en-US',
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--no-first-run',
        '--disable-sync',
        '--disable-quic',
        // Containers often give /dev/shm 64 MB, which crashes chromium; Debian's wrapper adds this
        // only when it can measure the space.
        '--disable-dev-shm-usage',
      ],
    })
    if (options.editorLanguage) {
      await context.addInitScript(
        (lang) => window.localStorage.setItem('editor-language', lang),
        options.editorLanguage,
      )
    }
    const page = context.pages()[0] ?? (await context.newPage())
    // Every step here takes well under a second on a quiet machine; a wait that runs longer than
    // its scaled limit has found a fault. Playwright's timeout error names what it waited for.
    page.setDefaultTimeout(scaled(8000))
    return new Browser(context, page, profile)
  }

  async close(): Promise<void> {
    await this.context.close()
    rmSync(this.profile, { recursive: true, force: true })
  }
}

/**
 * Node-RED 5.0.7's debug sidebar (21-debug.html, handleDebugMessage) looks up the flow of each
 * debug message it receives. The editor's websocket connects before the flows are loaded, so a
 * debug message that arrives in that gap (the examples print some seconds after deploy) throws
 * on `RED.nodes.workspace(id).label`; RED.comms catches it and logs two console warnings, and the
 * editor carries on (the same race as node-red/node-red#3588). Tolerated only while the editor
 * loads; after that the same warning is a failure.
 */
export const LOAD_RACE = [
  /^console warning: Uncaught error from RED\.comms\.subscribe: TypeError: Cannot read properties of undefined \(reading 'label'\)/,
  /^console warning: TypeError: Cannot read properties of undefined \(reading 'label'\)\n[\s\S]*handleDebugMessage/,
]

/**
 * Every sign of trouble in the page: console errors and warnings, uncaught exceptions, requests
 * that failed, and responses with an error status. take() returns what arrived since the last call.
 */
export class PageProblems {
  private seen: string[] = []
  /** What matched a tolerated pattern while it was tolerated, for the record. */
  readonly tolerated: string[] = []
  private tolerate: RegExp[] = []

  constructor(page: Page) {
    page.on('console', (m: ConsoleMessage) => {
      if (m.type() === 'error' || m.type() === 'warning')
        this.add(`console ${m.type()}: ${m.text()} (${m.location().url})`)
    })
    page.on('pageerror', (e: Error) => this.add(`page error: ${e.stack ?? e.message}`))
    page.on('requestfailed', (r: Request) =>
      this.add(`request failed: ${r.method()} ${r.url()}: ${r.failure()?.errorText}`),
    )
    page.on('response', (r: Response) => {
      if (r.status() >= 400) this.add(`HTTP ${r.status()}: ${r.request().method()} ${r.url()}`)
    })
  }

  /** Runs step while the given known problems are tolerated. */
  async tolerating<T>(patterns: RegExp[], step: () => Promise<T>): Promise<T> {
    this.tolerate = patterns
    try {
      return await step()
    } finally {
      this.tolerate = []
    }
  }

  private add(problem: string): void {
    if (this.tolerate.some((p) => p.test(problem))) this.tolerated.push(problem)
    else this.seen.push(problem)
  }

  take(): string[] {
    return this.seen.splice(0)
  }
}

/**
 * Empties the screenshot folder, so it holds only what this run saw. Under `npm test` the lanes'
 * runner empties it once before the lanes start (TEST_LANES), since spec files run side by side.
 */
export function freshArtifacts(): void {
  if (!process.env.TEST_LANES) rmSync(ARTIFACTS, { recursive: true, force: true })
  mkdirSync(ARTIFACTS, { recursive: true })
}

export function artifactsDir(): string {
  mkdirSync(ARTIFACTS, { recursive: true })
  return ARTIFACTS
}

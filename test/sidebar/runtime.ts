// A real Node-RED runtime (4 or 5, its own CLI in a child process) loading this package from the
// working tree, with adminAuth: an admin user (every permission) and a reader (read only).
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { nodeBinary, repoRoot } from '../smoke/node-red'
import { freePort } from '../../dev/ports'

// eslint-disable-next-line @typescript-eslint/no-require-imports
const bcrypt = require('bcryptjs') as { hashSync(password: string, rounds: number): string }

export const USERS = { admin: 'admin-password', reader: 'reader-password' } as const
export type UserName = keyof typeof USERS

export const RUNTIMES = {
  'Node-RED 5': join(repoRoot, 'node_modules', 'node-red', 'red.js'),
  'Node-RED 4': join(repoRoot, 'node_modules', 'node-red-v4', 'red.js'),
} as const

export class AuthRuntime {
  log = ''
  private child: ChildProcess | null = null
  private exited: Promise<void> = Promise.resolve()
  private constructor(
    private readonly dir: string,
    readonly url: string,
  ) {}

  static async start(redJs: string, flows: unknown[]): Promise<AuthRuntime> {
    const dir = mkdtempSync(join(tmpdir(), 'aio-ss-sidebar-'))
    const settingsFile = join(dir, 'settings.js')
    const settings = {
      uiHost: '127.0.0.1',
      flowFile: 'flows.json',
      credentialSecret: 'sidebar-test',
      nodesDir: [repoRoot],
      externalModules: { palette: { allowList: ['node-red-contrib-aio-statestore'] } },
      telemetry: { enabled: false, updateNotification: false },
      diagnostics: { enabled: false, ui: false },
      editorTheme: { tours: false, palette: { catalogues: [] } },
      logging: { console: { level: 'info', metrics: false, audit: false } },
      adminAuth: {
        type: 'credentials',
        users: [
          { username: 'admin', password: bcrypt.hashSync(USERS.admin, 4), permissions: '*' },
          { username: 'reader', password: bcrypt.hashSync(USERS.reader, 4), permissions: 'read' },
        ],
      },
    }
    writeFileSync(settingsFile, `module.exports = ${JSON.stringify(settings, null, 2)}\n`)
    writeFileSync(join(dir, 'flows.json'), JSON.stringify(flows))
    const port = await freePort()
    const rt = new AuthRuntime(dir, `http://127.0.0.1:${port}`)
    const child = spawn(nodeBinary(), [redJs, '--userDir', dir, '--port', String(port), '--settings', settingsFile], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
    rt.child = child
    child.stdout!.on('data', (d) => (rt.log += d))
    child.stderr!.on('data', (d) => (rt.log += d))
    rt.exited = new Promise((resolve) => child.once('exit', () => resolve()))
    try {
      // With adminAuth only the login scheme answers without a token; flows have started once the store connected.
      await eventually(async () => ((await fetch(`${rt.url}/auth/login`)).ok && rt.log.includes('connected to the state store') ? true : undefined), 'Node-RED started', 30000)
    } catch (err) {
      await rt.stop()
      throw new Error(`${(err as Error).message}\n${rt.log}`)
    }
    return rt
  }

  /** An access token as the editor's login gets it. */
  async token(user: UserName): Promise<string> {
    const res = await fetch(`${this.url}/auth/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ client_id: 'node-red-editor', grant_type: 'password', scope: user === 'reader' ? 'read' : '*', username: user, password: USERS[user] }),
    })
    if (!res.ok) throw new Error(`login as ${user}: ${res.status}`)
    return ((await res.json()) as { access_token: string }).access_token
  }

  async request(method: string, path: string, token: string | null, body?: unknown): Promise<{ status: number; json: unknown }> {
    const headers: Record<string, string> = { Accept: 'application/json' }
    if (token) headers.Authorization = `Bearer ${token}`
    if (body !== undefined) headers['Content-Type'] = 'application/json'
    const res = await fetch(this.url + path, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) })
    const text = await res.text()
    let json: unknown = null
    try {
      json = text ? JSON.parse(text) : null
    } catch {
      json = text
    }
    return { status: res.status, json }
  }

  async stop(): Promise<void> {
    const child = this.child
    this.child = null
    if (child && child.exitCode === null && child.signalCode === null) {
      const killer = setTimeout(() => child.kill('SIGKILL'), 10000)
      child.kill('SIGTERM')
      await this.exited
      clearTimeout(killer)
    }
    rmSync(this.dir, { recursive: true, force: true })
  }
}

/** The editor's websocket, logged in, collecting the sidebar's updates. */
export class SidebarComms {
  readonly updates: Array<Record<string, unknown>> = []
  private ws: WebSocket | null = null

  static async open(url: string, token: string): Promise<SidebarComms> {
    const comms = new SidebarComms()
    await new Promise<void>((resolve, reject) => {
      const ws = new WebSocket(url.replace('http://', 'ws://') + '/comms')
      comms.ws = ws
      ws.onerror = () => reject(new Error('comms websocket failed'))
      ws.onopen = () => ws.send(JSON.stringify({ auth: token }))
      ws.onmessage = (event) => {
        const data = JSON.parse(String(event.data)) as unknown
        if (!Array.isArray(data)) {
          if ((data as { auth?: string }).auth === 'ok') {
            ws.send(JSON.stringify({ subscribe: 'aio-statestore/#' }))
            resolve()
          } else reject(new Error(`comms auth: ${JSON.stringify(data)}`))
          return
        }
        for (const m of data as Array<{ topic: string; data: Record<string, unknown> }>) if (m.topic === 'aio-statestore/update') comms.updates.push(m.data)
      }
    })
    return comms
  }

  close(): void {
    this.ws?.close()
  }
}

/** Polls `check` until it returns a value (generous timeout; never an assertion about time). */
export async function eventually<T>(check: () => Promise<T | undefined> | T | undefined, what: string, timeoutMs = 15000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      const v = await check()
      if (v !== undefined) return v
    } catch (err) {
      last = err
    }
    if (Date.now() > deadline) throw new Error(`${what}: not so within ${timeoutMs} ms${last ? ` (${String(last)})` : ''}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

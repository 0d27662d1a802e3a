// A real Node-RED runtime (4 or 5, its own CLI in a child process) loading this package from the
// working tree, with adminAuth: an admin user (every permission) and a reader (read only).
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
} from '../../../dev/node-red'
import { freePort } from '../../../dev/ports'
import { scaled } from '../../support/deadline'

// eslint-disable-next-line @typescript-eslint/no-require-imports
const bcrypt = require('bcryptjs') as { hashSync(password: string, rounds: number): string }

export const USERS = { admin: 'admin-password', reader: 'reader-password' } as const
export type UserName = keyof typeof USERS

export const RUNTIMES = { 'Node-RED 5': RED_JS[5], 'Node-RED 4': RED_JS[4] } as const

export class AuthRuntime {
  private constructor(
    private readonly dir: string,
    private readonly child: NodeRedChild,
  ) {}

  get url(): string {
    return this.child.url
  }

  get log(): string {
    return this.child.log
  }

  static async start(
    redJs: string,
    flows: unknown[],
    env: NodeJS.ProcessEnv = process.env,
    extra: Record<string, unknown> = {},
  ): Promise<AuthRuntime> {
    const dir = mkdtempSync(join(tmpdir(), 'aio-ss-sidebar-'))
    const settingsFile = join(dir, 'settings.js')
    const settings = runtimeSettings({
      ...FROM_WORKING_TREE,
      credentialSecret: 'sidebar-test',
      ...extra,
      adminAuth: {
        type: 'credentials',
        users: [
          { username: 'admin', password: bcrypt.hashSync(USERS.admin, 4), permissions: '*' },
          { username: 'reader', password: bcrypt.hashSync(USERS.reader, 4), permissions: 'read' },
        ],
      },
    })
    writeSettings(settingsFile, settings)
    writeFileSync(join(dir, 'flows.json'), JSON.stringify(flows))
    try {
      const child = await startNodeRed({
        redJs,
        userDir: dir,
        port: await freePort(),
        settingsFile,
        env,
        timeoutMs: scaled(30_000),
        // With adminAuth only the login scheme answers without a token; flows have started once the store connected.
        ready: async (url, log) =>
          (await fetch(`${url}/auth/login`)).ok && log.includes('connected to the state store'),
      })
      return new AuthRuntime(dir, child)
    } catch (err) {
      rmSync(dir, { recursive: true, force: true })
      throw err
    }
  }

  /** An access token as the editor's login gets it. */
  async token(user: UserName): Promise<string> {
    const res = await fetch(`${this.url}/auth/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        client_id: 'node-red-editor',
        grant_type: 'password',
        scope: user === 'reader' ? 'read' : '*',
        username: user,
        password: USERS[user],
      }),
    })
    if (!res.ok) throw new Error(`login as ${user}: ${res.status}`)
    return ((await res.json()) as { access_token: string }).access_token
  }

  async request(
    method: string,
    path: string,
    token: string | null,
    body?: unknown,
  ): Promise<{ status: number; json: unknown }> {
    const headers: Record<string, string> = { Accept: 'application/json' }
    if (token) headers.Authorization = `Bearer ${token}`
    if (body !== undefined) headers['Content-Type'] = 'application/json'
    const res = await fetch(this.url + path, {
      method,
      headers,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    })
    const text = await res.text()
    let json: unknown
    try {
      json = text ? JSON.parse(text) : null
    } catch {
      json = text
    }
    return { status: res.status, json }
  }

  /** A file sent as the sidebar's Import sends it: the request body, as NDJSON (a stream is sent as it comes). */
  async upload(
    path: string,
    token: string | null,
    body: string | ReadableStream<Uint8Array>,
  ): Promise<{ status: number; json: unknown }> {
    const headers: Record<string, string> = { Accept: 'application/json', 'Content-Type': 'application/x-ndjson' }
    if (token) headers.Authorization = `Bearer ${token}`
    const res = await fetch(this.url + path, { method: 'POST', headers, body, duplex: 'half' } as RequestInit)
    const text = await res.text()
    return {
      status: res.status,
      json: res.headers.get('content-type')?.includes('json') ? (JSON.parse(text) as unknown) : text,
    }
  }

  async stop(): Promise<void> {
    await this.child.stop()
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
        for (const m of data as Array<{ topic: string; data: Record<string, unknown> }>)
          if (m.topic === 'aio-statestore/update') comms.updates.push(m.data)
      }
    })
    return comms
  }

  close(): void {
    this.ws?.close()
  }
}

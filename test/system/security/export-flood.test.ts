import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { get, type IncomingMessage } from 'node:http'
import {
  FROM_WORKING_TREE,
  RED_JS,
  runtimeSettings,
  startNodeRed,
  writeSettings,
  type NodeRedChild,
} from '../../../dev/node-red'
import { freePort } from '../../../dev/ports'
import { StateStoreClient } from '../../../src/client'
import { settleEach } from '../../../src/lang/bounded'
import { scaled } from '../../support/deadline'
import { eventually } from '../../support/wait'

// eslint-disable-next-line @typescript-eslint/no-require-imports
const bcrypt = require('bcryptjs') as { hashSync(password: string, rounds: number): string }

const KEYS = 150
const VALUE_BYTES = 1024 * 1024
const CAP_BYTES = 48 * 1024 * 1024
const IDLE_MS = 1000

/**
 * The runtime's own measure of how long its event loop was held, read over the admin API: the
 * largest delay since the last reset (perf_hooks.monitorEventLoopDelay), and the process's RSS.
 */
const PROBE = `httpAdminMiddleware: (() => {
  const { monitorEventLoopDelay } = require('node:perf_hooks')
  const h = monitorEventLoopDelay({ resolution: 10 })
  h.enable()
  let rss = 0
  setInterval(() => { rss = Math.max(rss, process.memoryUsage().rss) }, 50).unref()
  return (req, res, next) => {
    if (!req.url.startsWith('/__probe')) return next()
    const out = { maxMs: h.max / 1e6, rss: Math.max(rss, process.memoryUsage().rss) }
    h.reset()
    rss = 0
    res.setHeader('Content-Type', 'application/json')
    res.end(JSON.stringify(out))
  }
})()`

interface Probe {
  maxMs: number
  rss: number
}

/**
 * A read-only editor user's export (`GET /aio-statestore/stores/:id/export`) was built whole in
 * memory, with no byte cap and no bound on parallel requests: four at once over 150 keys of 1 MiB
 * took Node-RED to 2.7 GB and held its event loop for seconds. In a real runtime with adminAuth,
 * against its embedded emulator: exports run one at a time per store (the others are answered 429),
 * an export past `aioStateStore.exportMaxBytes` is cut off rather than ending short, and the runtime's
 * longest event-loop delay during the attack stays near the one measured in the same run without it.
 * A reader who stopped reading held the slot for ever (the others got 429): an export now gives it
 * up once its reader has taken nothing for `aioStateStore.exportIdleMs`.
 */
describe('security: the sidebar export cannot stall or bloat Node-RED', function () {
  this.timeout(240_000)
  let dir = ''
  let red: NodeRedChild
  let reader = ''

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'aio-ss-export-'))
    const settingsFile = join(dir, 'settings.js')
    const settings = runtimeSettings({
      ...FROM_WORKING_TREE,
      credentialSecret: 'export-test',
      adminAuth: {
        type: 'credentials',
        users: [{ username: 'reader', password: bcrypt.hashSync('reader-password', 4), permissions: 'read' }],
      },
      aioStateStore: { exportMaxBytes: CAP_BYTES, exportIdleMs: IDLE_MS },
    })
    writeSettings(settingsFile, settings, PROBE)
    writeFileSync(
      join(dir, 'flows.json'),
      JSON.stringify([
        { id: 'tab1', type: 'tab', label: 'export' },
        { id: 'cfg1', type: 'ss-config', name: 'local', embedded: true, clientId: 'export-test' },
        // A user of the config node, so that it connects.
        {
          id: 'watch1',
          type: 'ss-watch',
          z: 'tab1',
          x: 100,
          y: 100,
          store: 'cfg1',
          keys: 'small/one',
          decode: 'auto',
          wires: [[]],
        },
      ]),
    )
    red = await startNodeRed({
      redJs: RED_JS[5],
      userDir: dir,
      port: await freePort(),
      settingsFile,
      env: { ...process.env, AIO_STATESTORE_EMBEDDED_PORT: '0' },
      ready: async (url, log) => (await fetch(`${url}/auth/login`)).ok && log.includes('connected to the state store'),
    })
    const login = await fetch(`${red.url}/auth/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        client_id: 'node-red-editor',
        grant_type: 'password',
        scope: 'read',
        username: 'reader',
        password: 'reader-password',
      }),
    })
    reader = ((await login.json()) as { access_token: string }).access_token
    const stores = (await (
      await fetch(`${red.url}/aio-statestore/stores`, { headers: { Authorization: `Bearer ${reader}` } })
    ).json()) as {
      stores: Array<{ broker: string }>
    }
    const seeder = new StateStoreClient({ brokerUrl: stores.stores[0]!.broker, clientId: 'export-seeder' })
    await seeder.ready({ timeoutMs: 10_000 })
    try {
      const keys = Array.from({ length: KEYS }, (_, i) => `flood/${String(i).padStart(3, '0')}`)
      await settleEach(keys, 4, (k) => seeder.set(k, Buffer.alloc(VALUE_BYTES, k.charCodeAt(k.length - 1))))
      await seeder.set('small/one', 'hello')
    } finally {
      await seeder.close()
    }
  })

  after(async () => {
    await red?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  const probe = async (): Promise<Probe> => (await (await fetch(`${red.url}/__probe`)).json()) as Probe

  /** One export to its end: the status, and whether the body arrived whole (a cut download rejects). */
  async function exportOnce(pattern: string): Promise<{ status: number; whole: boolean; bytes: number; body: string }> {
    const res = await fetch(`${red.url}/aio-statestore/stores/cfg1/export?pattern=${encodeURIComponent(pattern)}`, {
      headers: { Authorization: `Bearer ${reader}` },
    })
    try {
      const body = Buffer.from(await res.arrayBuffer())
      return { status: res.status, whole: true, bytes: body.length, body: body.length < 4096 ? body.toString() : '' }
    } catch {
      return { status: res.status, whole: false, bytes: 0, body: '' }
    }
  }

  /** Polls /settings until `work` ends; the number of answers. */
  async function pollSettingsDuring(work: Promise<unknown>): Promise<number> {
    let done = false
    void work.finally(() => (done = true))
    let answers = 0
    while (!done) {
      const res = await fetch(`${red.url}/settings`, { headers: { Authorization: `Bearer ${reader}` } })
      await res.arrayBuffer()
      if (res.ok) answers += 1
    }
    return answers
  }

  it('a reader who stops reading frees the export slot after aioStateStore.exportIdleMs', async () => {
    // Reads the headers, then nothing: the socket's buffers fill and the export waits.
    const stalled = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = get(
        `${red.url}/aio-statestore/stores/cfg1/export?pattern=flood/*`,
        { headers: { Authorization: `Bearer ${reader}` } },
        (res) => {
          res.pause()
          resolve(res)
        },
      )
      req.on('error', reject)
    })
    stalled.on('error', () => {})
    try {
      assert.equal(stalled.statusCode, 200)
      const next = await eventually(
        async () => {
          const out = await exportOnce('small/*')
          return out.status === 429 ? undefined : out
        },
        'another export once the stalled one gave up its slot',
        30_000,
        200,
      )
      assert.equal(next.status, 200)
      assert.match(next.body, /small\/one/)
    } finally {
      stalled.destroy()
    }
  })

  it('a small export is whole and names its keys', async () => {
    const out = await exportOnce('small/*')
    assert.equal(out.status, 200)
    assert.match(out.body, /small\/one/)
  })

  it('four readers exporting over and over: one export at a time per store, each cut at the byte cap, and the event loop held at most 0.2 s longer than without them', async () => {
    // The baseline: the same polling, the same machine, no export.
    await probe()
    const quiet = new Promise((resolve) => setTimeout(resolve, 3000))
    await pollSettingsDuring(quiet)
    const baseline = await probe()

    const outcomes: Array<{ status: number; whole: boolean }> = []
    const attack = Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let round = 0; round < 3; round++) outcomes.push(await exportOnce('flood/*'))
      }),
    )
    const answers = await pollSettingsDuring(attack)
    await attack
    const attacked = await probe()

    const statuses = outcomes.map((o) => o.status)
    assert.ok(statuses.includes(429), `a second export of the same store is answered 429 (got ${statuses.join(', ')})`)
    const ran = outcomes.filter((o) => o.status === 200)
    assert.ok(ran.length > 0, 'exports ran')
    assert.ok(
      ran.every((o) => !o.whole),
      'an export past the byte cap is cut off, never a file that ends short and looks whole',
    )
    assert.ok(answers > 0, '/settings answered during the attack')
    // The quiet run's longest delay is what this machine's load alone does; the export may add 0.2 s
    // at most, stretched by the suite's one time scale (a load that rises between the two windows).
    const allowance = scaled(200)
    const bound = Math.max(2 * baseline.maxMs, baseline.maxMs + allowance)
    assert.ok(
      attacked.maxMs <= bound,
      `the longest event-loop delay during the attack, ${attacked.maxMs.toFixed(0)} ms, is within the quiet run's ${baseline.maxMs.toFixed(0)} ms + ${allowance} ms (or twice it)`,
    )
    assert.ok(
      attacked.rss < baseline.rss + 512 * 1024 * 1024,
      `RSS grew from ${baseline.rss >> 20} MiB to ${attacked.rss >> 20} MiB`,
    )
  })
})

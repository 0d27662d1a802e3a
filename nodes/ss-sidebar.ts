import type { NodeAPI } from 'node-red'
import { shownUrl } from '../src/diagnostics/log'
import type { Request, Response } from 'express'
import { adminFor, RemoteAdminRegistry, type AdminChannel } from '../src/emulator/admin'
import type { StateStoreClient } from '../src/client'
import { LiveFeed, lockView, ScanKeyBrowser, viewValue, watchView, type StoreActivity } from '../src/observe'
import type { StoreConfigNode } from './config/config-node'
import {
  EXPORT_IDLE_MS,
  ExportTooLarge,
  MAX_EXPORT_BYTES,
  MAX_EXPORT_KEYS,
  responseSink,
  streamExport,
  type ExportLimits,
} from './sidebar/export-keys'
import { ImportBadLine, ImportCut, importFile, ImportTooLarge } from './sidebar/import-keys'
import { asksForInternalKeys, isContextInternalKey } from './sidebar/internal-keys'

/**
 * The editor's "state store" sidebar, runtime half: admin endpoints under the runtime's admin API
 * (read and write permissions apart) and live updates over RED.comms while an editor looks.
 * The editor half is ss-sidebar.html; the figures and registries are src/observe.
 */

const BASE = '/aio-statestore'
const TOPIC = 'aio-statestore/update'
const READ = 'aio-statestore.read'
const WRITE = 'aio-statestore.write'
/** Characters of a value the key inspector returns; more is cut (the size is always given). */
const INSPECT_CHARS = 64 * 1024
const MAX_KEY_BYTES = 4096
const MAX_VALUE_BYTES = 1024 * 1024
/** How long the sidebar waits for a state store to say whether it answers SCAN. */
const SCAN_PROBE_MS = 2000

type Handler = (req: Request, res: Response) => Promise<void> | void

export = function (RED: NodeAPI) {
  RED.plugins.registerPlugin('ss-sidebar', { type: 'aio-statestore-sidebar' })

  function configNodes(): StoreConfigNode[] {
    const found: StoreConfigNode[] = []
    RED.nodes.eachNode((def) => {
      if (def.type !== 'ss-config') return
      const node = RED.nodes.getNode(def.id) as StoreConfigNode | null
      if (node?.activity) found.push(node)
    })
    return found
  }

  const feed = new LiveFeed({ publish: (update) => RED.comms.publish(TOPIC, update, false) })
  const syncFeed = () => feed.setStores(new Map(configNodes().map((n): [string, StoreActivity] => [n.id, n.activity])))
  RED.events.on('flows:started', syncFeed)
  const remoteAdmins = new RemoteAdminRegistry()
  RED.events.on('flows:stopped', () => void remoteAdmins.closeAll())

  async function summary(n: StoreConfigNode) {
    const activity = n.activity
    return {
      id: n.id,
      name: n.name || '',
      clientId: n.clientId,
      broker: n.brokerUrl ? shownUrl(n.brokerUrl) : n.brokerUrl,
      embedded: n.embedded,
      browsable: (await scanBrowser(n)) !== null || (await admin(n)) !== null,
      connection: activity.metrics.figures(),
      watches: [...activity.watches.values()].map(watchView),
      locks: [...activity.locks.values()].map(lockView),
      droppedLocks: activity.droppedLocks,
    }
  }

  const scanBrowsers = new WeakMap<StateStoreClient, ScanKeyBrowser>()

  /**
   * The key browser over SCAN, where the store answers it (the emulator; the SDKs' design, not yet
   * the released broker): the browser's first choice, as it needs nothing but the state store.
   */
  async function scanBrowser(n: StoreConfigNode): Promise<ScanKeyBrowser | null> {
    if (!n.client || n.connection.state !== 'connected') return null
    const c = await n.client
    let browser = scanBrowsers.get(c)
    if (!browser) {
      browser = new ScanKeyBrowser(c)
      scanBrowsers.set(c, browser)
    }
    return (await browser.answersScan(SCAN_PROBE_MS)) ? browser : null
  }

  /**
   * The emulator's admin channel, where the store has no SCAN: in this process, else a standalone emulator's over MQTT
   * (its `--admin`).
   */
  async function admin(n: StoreConfigNode): Promise<AdminChannel | null> {
    if (!n.brokerUrl) return null
    const local = adminFor(n.brokerUrl)
    if (local) return local
    const options = n.clientOptions()
    return options ? remoteAdmins.find(n.id, options) : null
  }

  /** Errors say what went wrong by a code the editor translates, and the client's message as detail (never a value). */
  function fail(res: Response, status: number, code: string, detail?: string): void {
    res.status(status).json({ code, ...(detail ? { detail } : {}) })
  }

  function route(handler: Handler): Handler {
    return async (req, res) => {
      try {
        await handler(req, res)
      } catch (err) {
        fail(res, 502, 'failed', err instanceof Error ? err.message : String(err))
      }
    }
  }

  function store(req: Request, res: Response): StoreConfigNode | null {
    const n = configNodes().find((c) => c.id === req.params.id)
    if (!n) fail(res, 404, 'noStore')
    return n ?? null
  }

  function keyOf(raw: unknown, res: Response): Buffer | null {
    if (typeof raw !== 'string' || raw.length === 0) {
      fail(res, 400, 'noKey')
      return null
    }
    const key = Buffer.from(raw, 'utf8')
    if (key.length > MAX_KEY_BYTES) {
      fail(res, 400, 'keyTooLong')
      return null
    }
    return key
  }

  async function client(n: StoreConfigNode, res: Response) {
    if (!n.client) {
      fail(res, 503, 'notConnected')
      return null
    }
    return n.started()
  }

  /** The store, key and client a read or delete of `?key=` works on; null once a failure is answered. */
  async function keyTarget(req: Request, res: Response) {
    const n = store(req, res)
    const key = n && keyOf(req.query.key, res)
    const c = key && n && (await client(n, res))
    return n && key && c ? { n, key, c } : null
  }

  const http = RED.httpAdmin
  const needs = (p: string) => RED.auth.needsPermission(p)

  http.get(
    `${BASE}/stores`,
    needs(READ),
    route(async (_req, res) => {
      syncFeed()
      res.json({ stores: await Promise.all(configNodes().map(summary)) })
    }),
  )

  // An editor with the tab open renews this every few seconds; it closes it when the tab is hidden.
  http.post(
    `${BASE}/live`,
    needs(READ),
    route((req, res) => {
      const body = (req.body ?? {}) as { viewer?: unknown; open?: unknown }
      const viewer = typeof body.viewer === 'string' ? body.viewer.slice(0, 64) : ''
      if (!viewer) return fail(res, 400, 'noViewer')
      if (body.open === false) feed.close(viewer)
      else {
        syncFeed()
        feed.open(viewer)
      }
      res.json({ live: feed.live })
    }),
  )

  // The timeline of the last minutes (holders, hand-overs, waiting msgs, numeric values): polled while the tab is open.
  http.get(
    `${BASE}/stores/:id/timeline`,
    needs(READ),
    route((req, res) => {
      const n = store(req, res)
      if (!n) return
      const minutes = Number(req.query.minutes)
      res.json(n.activity.timeline.view(Number.isFinite(minutes) && minutes > 0 ? minutes * 60_000 : undefined))
    }),
  )

  http.get(
    `${BASE}/stores/:id/key`,
    needs(READ),
    route(async (req, res) => {
      const target = await keyTarget(req, res)
      if (!target) return
      const { n, key, c } = target
      const got = await c.get(key)
      if (got.value === null) return void res.json({ exists: false })
      const details = (await (await admin(n))?.inspect(key, n.clientId)) ?? null
      res.json({
        exists: true,
        value: viewValue(got.value, INSPECT_CHARS),
        version: got.version?.toString() ?? null,
        ...(details
          ? {
              expiresAt: details.expiresAt,
              fencingToken: details.fencingToken,
              persisted: details.persisted,
              persistedBy: details.persistedBy,
              notPersistedBecause: details.notPersistedBecause ?? null,
              access: details.access,
            }
          : { noDetails: { clientId: n.clientId } }),
      })
    }),
  )

  http.put(
    `${BASE}/stores/:id/key`,
    needs(WRITE),
    route(async (req, res) => {
      const body = (req.body ?? {}) as { key?: unknown; value?: unknown }
      const n = store(req, res)
      const key = n && keyOf(body.key, res)
      if (!n || !key) return
      if (typeof body.value !== 'string') return fail(res, 400, 'noValue')
      const value = Buffer.from(body.value, 'utf8')
      if (value.length > MAX_VALUE_BYTES) return fail(res, 400, 'valueTooLarge')
      const c = await client(n, res)
      if (!c) return
      const result = await c.set(key, value)
      res.json({ applied: result.applied, version: result.version.toString() })
    }),
  )

  http.delete(
    `${BASE}/stores/:id/key`,
    needs(WRITE),
    route(async (req, res) => {
      const target = await keyTarget(req, res)
      if (!target) return
      const result = await target.c.del(target.key)
      res.json({ deleted: result.deleted === 1 })
    }),
  )

  http.get(
    `${BASE}/stores/:id/keys`,
    needs(READ),
    route(async (req, res) => {
      const n = store(req, res)
      if (!n) return
      const q = req.query
      const after = typeof q.after === 'string' && /^[0-9a-f]*$/i.test(q.after) ? q.after : undefined
      const limit = typeof q.limit === 'string' ? Number(q.limit) || 100 : 100
      const pattern = typeof q.pattern === 'string' ? q.pattern : undefined
      // The context store's index and lock keys are left out unless the pattern asks with a '#'.
      const shown = <K extends { key: string | null }>(keys: K[]): { keys: K[]; hidden: number } => {
        if (asksForInternalKeys(pattern)) return { keys, hidden: 0 }
        const kept = keys.filter((k) => k.key === null || !isContextInternalKey(k.key))
        return { keys: kept, hidden: keys.length - kept.length }
      }
      const scanned = await (
        await scanBrowser(n)
      )?.page({ ...(pattern !== undefined ? { pattern } : {}), ...(after ? { cursor: after } : {}), limit })
      if (scanned) {
        // The shape of an admin page; what SCAN does not tell (counts, expiry, fencing, persistence) is null.
        const keys = scanned.keys.map((k) => ({ ...k, expiresAt: null, fencingToken: null, persisted: false }))
        return void res.json({ source: 'scan', ...shown(keys), matching: null, total: null, next: scanned.next })
      }
      const a = await admin(n)
      if (!a) return fail(res, 404, 'noBrowser')
      const page = await a.listKeys({
        ...(pattern !== undefined ? { pattern } : {}),
        ...(after ? { after } : {}),
        limit,
      })
      res.json({ source: 'admin', ...page, ...shown(page.keys) })
    }),
  )

  // The browser's keys as a file for `aio-statestore import` or the emulator's --seed: streamed, within
  // its limits, one export per store at a time (another is answered 429 exportBusy).
  const exporting = new Set<string>()
  http.get(
    `${BASE}/stores/:id/export`,
    needs(READ),
    route(async (req, res) => {
      const n = store(req, res)
      if (!n) return
      if (exporting.has(n.id)) return fail(res, 429, 'exportBusy')
      exporting.add(n.id)
      const abort = new AbortController()
      res.on('close', () => abort.abort())
      try {
        const c = await client(n, res)
        if (!c) return
        const pattern = typeof req.query.pattern === 'string' && req.query.pattern !== '' ? req.query.pattern : '*'
        // An emulator in this process tells expiry and persistence; otherwise SCAN lists the keys, or a standalone
        // emulator's admin channel.
        const a = (n.brokerUrl ? adminFor(n.brokerUrl) : null) ?? ((await scanBrowser(n)) ? null : await admin(n))
        const start = () => res.status(200).type('application/x-ndjson')
        await streamExport(
          c,
          a,
          pattern,
          responseSink(res, start, abort.signal, exportIdleMs()),
          exportLimits(),
          abort.signal,
        )
        if (!res.headersSent) start()
        res.end()
      } catch (err) {
        // Once the file has begun, a failure cuts the download: an export that ends short must not look whole.
        if (res.headersSent || abort.signal.aborted) return void res.destroy()
        if (err instanceof ExportTooLarge)
          return fail(res, 413, err.limit === 'keys' ? 'exportTooLarge' : 'exportTooManyBytes')
        throw err
      } finally {
        exporting.delete(n.id)
      }
    }),
  )
  // An export file or a statestore.json as the request body, streamed to a temporary file and checked whole first (a
  // bad
  // line writes nothing and is named), within the export's limits, one per store at a time (another is answered 429
  // importBusy).
  const importing = new Set<string>()
  http.post(
    `${BASE}/stores/:id/import`,
    needs(WRITE),
    route(async (req, res) => {
      const n = store(req, res)
      if (!n) return
      // A body Node-RED's JSON or form parser has read is no file: the sidebar sends application/x-ndjson.
      if (req.readableEnded) return fail(res, 400, 'importNoFile')
      if (importing.has(n.id)) return fail(res, 429, 'importBusy')
      importing.add(n.id)
      const abort = new AbortController()
      res.on('close', () => abort.abort())
      try {
        const c = await client(n, res)
        if (!c) return
        res.json(await importFile(req, c, exportLimits(), abort.signal))
      } catch (err) {
        if (err instanceof ImportCut)
          return void res
            .status(400)
            .json({ code: 'importCut', line: err.line, written: err.written, total: err.total })
        if (err instanceof ImportBadLine)
          return void res.status(400).json({ code: 'importBadLine', line: err.line, detail: err.reason })
        if (err instanceof ImportTooLarge)
          return fail(res, 413, err.limit === 'keys' ? 'importTooLarge' : 'importTooManyBytes')
        if (abort.signal.aborted) return
        throw err
      } finally {
        importing.delete(n.id)
      }
    }),
  )
  /** settings.js may set `aioStateStore: { exportMaxBytes, exportMaxKeys, exportIdleMs }`. */
  function exportSetting(name: 'exportMaxBytes' | 'exportMaxKeys' | 'exportIdleMs', fallback: number): number {
    const v = ((RED.settings as unknown as { aioStateStore?: Record<string, unknown> }).aioStateStore ?? {})[name]
    return typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? v : fallback
  }
  function exportLimits(): ExportLimits {
    return {
      maxBytes: exportSetting('exportMaxBytes', MAX_EXPORT_BYTES),
      maxKeys: exportSetting('exportMaxKeys', MAX_EXPORT_KEYS),
    }
  }
  function exportIdleMs(): number {
    return exportSetting('exportIdleMs', EXPORT_IDLE_MS)
  }
}

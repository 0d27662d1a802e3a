import { randomBytes } from 'node:crypto'
import type { ClientOptions } from '../../client'
import { Connection, PendingRequests, resolveOptions, type Envelope, type ResolvedOptions } from '../../client/channel'
import { ConnectionError, NoServiceError, ProtocolError } from '../../diagnostics/errors'
import type { KeyDetails, KeyPage, KeyQuery } from './key-browser'
import {
  ADMIN_REQUEST_TOPIC,
  adminResponseTopic,
  fromWireDetails,
  type AdminHello,
  type AdminReply,
  type AdminRequest,
  type WireKeyDetails,
} from './wire'

/** What the key browser needs of an emulator's admin channel, in this process or over MQTT. */
export interface AdminChannel {
  listKeys(query: KeyQuery): Promise<KeyPage> | KeyPage
  /** `asClientId`: also what the authorization rules let that client do with the key. */
  inspect(key: Buffer, asClientId?: string): Promise<KeyDetails | null> | KeyDetails | null
}

/**
 * How long a broker gets to show an admin-enabled emulator (connect + hello) before the browser says "not available".
 */
const DISCOVERY_TIMEOUT_MS = 2000
/** A page of a million keys is a full scan: give it time. */
const REQUEST_TIMEOUT_MS = 30_000

/** The admin channel's envelope: JSON to ADMIN_REQUEST_TOPIC, no clock and no state store headers. */
const ADMIN_ENVELOPE: Envelope = {
  requestTopic: ADMIN_REQUEST_TOPIC,
  properties: ({ correlation, responseTopic, expirySec }) => ({
    responseTopic,
    correlationData: correlation,
    messageExpiryInterval: expirySec,
    contentType: 'application/json',
  }),
  readVersion: () => null,
}

function parseReply(payload: Buffer): unknown {
  let reply: AdminReply
  try {
    reply = JSON.parse(payload.toString('utf8')) as AdminReply
  } catch (err) {
    throw new ProtocolError('the emulator answered the admin request with something that is not JSON', { cause: err })
  }
  if (!reply.ok) throw new Error(`the emulator refused the admin request: ${reply.error}`)
  return reply.result
}

/**
 * The client of an emulator's admin channel over MQTT (see src/emulator/admin/wire.ts), on a
 * connection of its own made with the config node's options (TLS, credentials, TCP_NODELAY) and a
 * client id of its own, so that the store's connection and its session are left alone. Requests
 * go through the client's own correlation (PendingRequests) with the admin channel's envelope.
 */
export class RemoteEmulatorAdmin implements AdminChannel {
  private readonly requests: PendingRequests
  /** The broker said nobody serves the admin channel any more (the emulator stopped or restarted without it). */
  private gone = false

  private constructor(
    private readonly connection: Connection,
    options: ResolvedOptions,
    responseTopic: string,
  ) {
    this.requests = new PendingRequests(connection, options, responseTopic, ADMIN_ENVELOPE)
    connection.on('message', (topic, payload, packet) => {
      if (topic === responseTopic) this.requests.handleResponse(payload, packet)
    })
    connection.on('online', ({ resumed, first }) => this.requests.onOnline(resumed, first))
  }

  /**
   * Connects and asks for the emulator; null when none answers within the timeout (no emulator,
   * an emulator without `--admin`, a broker that refuses us): the connection is then closed.
   */
  static async discover(
    options: ClientOptions,
    timeoutMs = DISCOVERY_TIMEOUT_MS,
  ): Promise<{ admin: RemoteEmulatorAdmin; hello: AdminHello } | null> {
    const clientId = `${options.clientId}-admin-${randomBytes(3).toString('hex')}`.replace(/[+#/]/g, '_')
    const responseTopic = adminResponseTopic(clientId)
    let admin: RemoteEmulatorAdmin
    try {
      // Quiet: the store's own connection already reports on this broker.
      const resolved = resolveOptions({
        ...options,
        clientId,
        cleanStart: true,
        connectTimeoutMs: timeoutMs,
        logger: () => {},
      })
      delete resolved.sessionExpirySec
      delete resolved.metrics
      // A request waits for the connection within its own timeout, however the store's node is set.
      delete resolved.connectionWaitMs
      admin = new RemoteEmulatorAdmin(new Connection(resolved, [responseTopic]), resolved, responseTopic)
    } catch {
      return null
    }
    try {
      // Waits for the connection too: the hello is sent once it is up.
      const hello = await admin.request({ op: 'hello' }, timeoutMs)
      return { admin, hello: hello as AdminHello }
    } catch {
      await admin.close()
      return null
    }
  }

  /** Worth asking again: not closed, and the emulator was still there at the last request. */
  get open(): boolean {
    return !this.connection.closed && !this.gone
  }

  async listKeys(query: KeyQuery): Promise<KeyPage> {
    const { signal: _signal, ...rest } = query
    return (await this.request({ op: 'listKeys', query: rest }, REQUEST_TIMEOUT_MS)) as KeyPage
  }

  async inspect(key: Buffer, asClientId?: string): Promise<KeyDetails | null> {
    const request: AdminRequest = {
      op: 'inspect',
      keyHex: key.toString('hex'),
      ...(asClientId !== undefined ? { clientId: asClientId } : {}),
    }
    const details = (await this.request(request, REQUEST_TIMEOUT_MS)) as WireKeyDetails | null
    return details ? fromWireDetails(details) : null
  }

  private async request(request: AdminRequest, timeoutMs: number): Promise<unknown> {
    const body = request.op === 'listKeys' ? { op: request.op, ...request.query } : request
    try {
      // probe: with nobody subscribed to the admin topic the request fails at once instead of being sent again.
      return await this.requests.invoke({
        verb: `admin ${request.op}`,
        payload: Buffer.from(JSON.stringify(body)),
        timeoutMs,
        probe: true,
        parse: parseReply,
      })
    } catch (err) {
      if (!(err instanceof NoServiceError)) throw err
      this.gone = true
      throw new NoServiceError('no emulator serves the admin channel on this broker')
    }
  }

  async close(): Promise<void> {
    this.requests.close(new ConnectionError('ConnectionClosed', 'the admin connection was closed'))
    await this.connection.close()
  }
}

/**
 * How long an answer to "is there an admin-enabled emulator?" is trusted, and how long an unused connection stays open.
 */
const ABSENT_FOR_MS = 10_000
const IDLE_CLOSE_MS = 60_000

interface Entry {
  /** The options it was found with: other options (a redeploy) mean looking again. */
  signature: string
  found: Promise<RemoteEmulatorAdmin | null>
  checkedAt: number
  idle?: NodeJS.Timeout
}

/**
 * The remote admin channels of the sidebar's stores, one per config node: looked for on demand,
 * an absence remembered briefly, a found connection closed when unused for a minute.
 */
export class RemoteAdminRegistry {
  private readonly entries = new Map<string, Entry>()

  constructor(private readonly timeoutMs = DISCOVERY_TIMEOUT_MS) {}

  async find(storeId: string, options: ClientOptions): Promise<RemoteEmulatorAdmin | null> {
    const { metrics: _m, logger: _l, ...rest } = options
    const signature = JSON.stringify(rest)
    let entry = this.entries.get(storeId)
    if (entry && entry.signature === signature) {
      const found = await entry.found
      if (found?.open) {
        this.touch(storeId, entry)
        return found
      }
      if (!found && Date.now() - entry.checkedAt < ABSENT_FOR_MS) return null
    }
    if (entry) await this.drop(storeId)
    entry = {
      signature,
      checkedAt: Date.now(),
      found: RemoteEmulatorAdmin.discover(options, this.timeoutMs).then((r) => r?.admin ?? null),
    }
    this.entries.set(storeId, entry)
    const found = await entry.found
    entry.checkedAt = Date.now()
    if (found) this.touch(storeId, entry)
    return found
  }

  private touch(storeId: string, entry: Entry): void {
    clearTimeout(entry.idle)
    entry.idle = setTimeout(() => void this.drop(storeId), IDLE_CLOSE_MS)
    entry.idle.unref()
  }

  private async drop(storeId: string): Promise<void> {
    const entry = this.entries.get(storeId)
    if (!entry) return
    this.entries.delete(storeId)
    clearTimeout(entry.idle)
    await (await entry.found)?.close()
  }

  /** Closes every connection (flows stopped). */
  async closeAll(): Promise<void> {
    await Promise.all([...this.entries.keys()].map((id) => this.drop(id)))
  }
}

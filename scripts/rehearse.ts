/**
 * The cluster overlays rehearsed on a laptop: `npm run rehearse -- ha` or `npm run rehearse -- active-active`
 * (docs/cluster.md). Starts mosquitto (shared subscriptions) on a free port with the emulator's state
 * store service on it, and the overlay's replicas as Node-RED runtimes with the overlay's own settings
 * file (deploy/overlays/<overlay>/settings-*.js, run from the repository as docs/cluster.md shows) and
 * the pod environment, all with one flow: `$share/rehearsal/rehearsal/msgs` → run once → the work
 * (a POST to this process) → complete, and a repeating tick behind a leader gate. Publishes numbered
 * QoS 1 msgs, kills the replica that leads the tick with kill -9 mid-stream, publishes 100 msgs the store
 * says are done again (a redelivery: each must be a duplicate) and again what it saw no work for
 * (as an at-least-once source does: Node-RED's mqtt in acknowledges a msg when it arrives, so the msgs
 * in the killed replica's flow are not redelivered by the broker), and ends with
 * one line: msgs sent, handled once, lost, handled twice, ticks per period, take-over time.
 *
 *   --msgs N (10000)  --rate N msgs/s (250)  --replicas N (3; ha: 2)  --term-ms N (the overlay's, 10000)  --tick-ms N (1000)
 *   --json            also print the figures as JSON on a line of their own
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { accessSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import mqtt from 'mqtt'
import { RED_JS, startNodeRed, type NodeRedChild } from '../dev/node-red'
import { freePort, waitForPort } from '../dev/ports'
import { startEmulator } from '../src/emulator'
import { StateStoreClient, parseClaim } from '../src'
import { tickPeriods, tickSchedule, type Tick, type TickPeriods } from './tick-periods'

// eslint-disable-next-line @typescript-eslint/no-require-imports
const bcrypt = require('bcryptjs') as { hashSync(password: string, rounds: number): string }

const repo = join(__dirname, '..')
const TOPIC = 'rehearsal/msgs'
const GROUP = 'rehearsal'

export interface RehearsalOptions {
  overlay: 'ha' | 'active-active'
  msgs: number
  replicas: number
  termMs: number
  tickMs: number
  /** Msgs per second the publisher sends. */
  rate: number
  log?: (line: string) => void
}

export interface RehearsalResult {
  overlay: string
  sent: number
  once: number
  lost: number
  twice: number
  republished: number
  duplicatesSeen: number
  /** Of the msgs published again after they were done, how many left the run-once node as duplicates. */
  redeliveredAsDuplicates: number
  redelivered: number
  periods: number
  /** Tick periods from the first pass to the last (scripts/tick-periods.ts); those without a pass, and why. */
  periodsWithout: number
  periodsMissed: TickPeriods['missed']
  periodsDoubled: number
  takeoverMs: number | null
  killed: string
  line: string
}

/** The one flow every replica runs. */
function flow(effects: string, termMs: number, tickMs: number): unknown[] {
  const z = 'rh00000000000001'
  const post = (id: string, path: string, next: string[]) => [
    {
      id: `${id}f`,
      type: 'function',
      z,
      func: `msg.url = ${JSON.stringify(effects + path)}\nmsg.method = 'POST'\nmsg.headers = { 'content-type': 'application/json' }\nmsg.payload = JSON.stringify({ n: msg.payload && msg.payload.n, by: env.get('AIO_MQTT_CLIENT_ID'), at: Date.now(), fired: typeof msg.payload === 'number' ? msg.payload : null })\nreturn msg`,
      outputs: 1,
      wires: [[`${id}h`]],
      x: 100,
      y: 100,
    },
    { id: `${id}h`, type: 'http request', z, method: 'use', ret: 'txt', url: '', wires: [next], x: 100, y: 100 },
  ]
  return [
    { id: z, type: 'tab', label: 'rehearsal' },
    { id: 'rh00000000000002', type: 'ss-config', name: 'the pod environment', broker: '', clientId: '' },
    {
      id: 'rh00000000000003',
      type: 'mqtt-broker',
      name: 'msgs',
      broker: '${AIO_BROKER_HOSTNAME}',
      port: '${AIO_BROKER_TCP_PORT}',
      clientid: '',
      autoConnect: true,
      usetls: false,
      protocolVersion: '5',
      keepalive: '15',
      cleansession: true,
    },
    {
      id: 'rh00000000000010',
      type: 'mqtt in',
      z,
      topic: `$share/${GROUP}/${TOPIC}`,
      qos: '1',
      datatype: 'json',
      broker: 'rh00000000000003',
      nl: false,
      rap: true,
      inputs: 0,
      wires: [['rh00000000000011']],
      x: 100,
      y: 100,
    },
    // Run once: the id is the publisher's user property `id` (the blank Key's default).
    {
      id: 'rh00000000000011',
      type: 'ss-lock',
      z,
      store: 'rh00000000000002',
      key: '',
      keyType: 'str',
      mode: 'once',
      action: 'acquire',
      leaseMs: String(termMs),
      timeout: String(3 * termMs),
      // A msg whose work never completes (an error the Catch below missed): its claim lapses for a redelivery.
      holdMs: String(6 * termMs),
      wires: [['rh00000000000020f'], ['rh00000000000030f']],
      x: 100,
      y: 100,
    },
    ...post('rh00000000000020', '/handled', ['rh00000000000021']),
    {
      id: 'rh00000000000021',
      type: 'ss-lock',
      z,
      store: 'rh00000000000002',
      key: '',
      keyType: 'str',
      mode: 'lease',
      action: 'complete',
      wires: [[], []],
      x: 100,
      y: 100,
    },
    ...post('rh00000000000030', '/duplicate', []),
    // The work failed (the POST refused, say): the claim is given up at once, so a redelivery works it.
    {
      id: 'rh00000000000060',
      type: 'catch',
      z,
      scope: ['rh00000000000020h', 'rh00000000000021'],
      uncaught: false,
      wires: [['rh00000000000061']],
      x: 100,
      y: 100,
    },
    {
      id: 'rh00000000000061',
      type: 'ss-lock',
      z,
      store: 'rh00000000000002',
      key: '',
      keyType: 'str',
      mode: 'lease',
      action: 'release',
      wires: [[], []],
      x: 100,
      y: 100,
    },
    // The singleton: a tick in every replica, through the leader gate.
    {
      id: 'rh00000000000040',
      type: 'inject',
      z,
      // The payload is the time the Inject fired: a tick's period is the Inject's, not the gate's latency under load.
      props: [{ p: 'payload' }],
      payload: '',
      payloadType: 'date',
      ...tickSchedule(tickMs),
      onceDelay: '0.1',
      topic: '',
      wires: [['rh00000000000041']],
      x: 100,
      y: 100,
    },
    {
      id: 'rh00000000000041',
      type: 'ss-lock',
      z,
      store: 'rh00000000000002',
      key: 'rehearsal/tick',
      keyType: 'str',
      mode: 'gate',
      leaseMs: String(termMs),
      wires: [['rh00000000000050f'], ['rh00000000000051f']],
      x: 100,
      y: 100,
    },
    ...post('rh00000000000050', '/tick', []),
    // A tick another replica's gate passes: which periods no replica's Inject fired in at all.
    ...post('rh00000000000051', '/skipped', []),
  ]
}

/** mosquitto on 127.0.0.1:port, MQTT 5 (shared subscriptions), every msg queued however many. */
async function startMosquitto(dir: string): Promise<{ port: number; child: ChildProcess }> {
  const port = await freePort()
  const conf = join(dir, 'mosquitto.conf')
  writeFileSync(
    conf,
    [
      `listener ${port} 127.0.0.1`,
      'allow_anonymous true',
      'max_queued_messages 0',
      'max_inflight_messages 100',
      'set_tcp_nodelay true',
      '',
    ].join('\n'),
  )
  const binary = ['/usr/sbin/mosquitto', '/usr/bin/mosquitto'].find((b) => {
    try {
      accessSync(b)
      return true
    } catch {
      return false
    }
  })
  if (!binary)
    throw new Error(
      'mosquitto is not installed (apt-get install mosquitto): the rehearsal needs its shared subscriptions',
    )
  const child = spawn(binary, ['-c', conf], { stdio: 'ignore' })
  await waitForPort(port, 10_000, 'mosquitto')
  return { port, child }
}

async function body(req: IncomingMessage): Promise<Record<string, unknown>> {
  let text = ''
  for await (const chunk of req) text += String(chunk)
  try {
    return JSON.parse(text) as Record<string, unknown>
  } catch {
    return {}
  }
}

export interface ReplicaOptions {
  overlay: 'ha' | 'active-active'
  /** The folder the replica's user directory (node-red-<index>) goes in. */
  root: string
  index: number
  /** The broker's port on 127.0.0.1 (the state store's). */
  brokerPort: number
  /** A folder with the Secret's two files (secretsFor). */
  secrets: string
  flows: unknown[]
  termMs: number
}

/** The Secret's two files in `dir`: the admin password's hash (password `rehearsal`) and the credentials' key. */
export function secretsFor(dir: string): string {
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'adminPasswordHash'), bcrypt.hashSync('rehearsal', 4))
  writeFileSync(join(dir, 'credentialSecret'), 'rehearsal-secret')
  return dir
}

/** The overlay's settings file in the repository. */
export function overlaySettings(overlay: 'ha' | 'active-active'): string {
  return join(repo, 'deploy', 'overlays', overlay, overlay === 'ha' ? 'settings-ha.js' : 'settings-active-active.js')
}

/**
 * Replica `index` of an overlay as a pod runs it: the overlay's settings file as it stands (bound to
 * the loopback interface for a laptop), a user directory holding only flows.json, the pod's environment.
 */
export async function startReplica(o: ReplicaOptions): Promise<NodeRedChild> {
  const name = `node-red-${o.index}`
  const userDir = join(o.root, name)
  mkdirSync(userDir, { recursive: true })
  writeFileSync(join(userDir, 'flows.json'), JSON.stringify(o.flows))
  const settingsFile = join(userDir, 'loopback-settings.js')
  writeFileSync(
    settingsFile,
    `module.exports = { ...require(${JSON.stringify(overlaySettings(o.overlay))}), uiHost: '127.0.0.1' }\n`,
  )
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_RED_SECRETS_DIR: o.secrets,
    NODE_RED_HA_TERM_MS: String(o.termMs),
    AIO_MQTT_CLIENT_ID: name,
    AIO_BROKER_HOSTNAME: '127.0.0.1',
    AIO_BROKER_TCP_PORT: String(o.brokerPort),
    AIO_MQTT_USE_TLS: 'false',
  }
  return startNodeRed({
    redJs: RED_JS[5],
    userDir,
    port: await freePort(),
    settingsFile,
    env,
    timeoutMs: 180_000,
    // Listening (the HA standby answers too; its flows start once elected).
    ready: async (url) => (await fetch(`${url}/`)).status < 500,
  })
}

export async function rehearse(options: RehearsalOptions): Promise<RehearsalResult> {
  const log = options.log ?? ((line: string) => console.log(line))
  const root = mkdtempSync(join(tmpdir(), `aio-ss-rehearse-${options.overlay}-`))
  const runtimes: NodeRedChild[] = []
  let mosquitto: ChildProcess | null = null
  let emulator: Awaited<ReturnType<typeof startEmulator>> | null = null
  const handled = new Map<number, string[]>()
  /** When each msg's work was first seen. */
  const handledAt = new Map<number, number>()
  const ticks: Array<{ by: string; at: number }> = []
  /** Every tick out of a gate, by the replica's clock: passed, or skipped (another replica leads). */
  const gated: Tick[] = []
  let duplicatesSeen = 0
  const duplicates = new Set<number>()
  const server = createServer((req, res) => {
    void body(req).then((b) => {
      if (req.url === '/handled' && typeof b.n === 'number') {
        handled.set(b.n, [...(handled.get(b.n) ?? []), String(b.by)])
        if (!handledAt.has(b.n)) handledAt.set(b.n, Date.now())
      } else if (req.url === '/tick') {
        ticks.push({ by: String(b.by), at: Date.now() })
        gated.push({ by: String(b.by), at: Number(b.fired ?? b.at), passed: true })
      } else if (req.url === '/skipped') gated.push({ by: String(b.by), at: Number(b.fired ?? b.at), passed: false })
      else if (req.url === '/duplicate') {
        duplicatesSeen += 1
        if (typeof b.n === 'number') duplicates.add(b.n)
      }
      res.end('ok')
    })
  })
  try {
    const m = await startMosquitto(root)
    mosquitto = m.child
    const brokerUrl = `mqtt://127.0.0.1:${m.port}`
    emulator = await startEmulator({ brokerUrl, logLevel: 'error' })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const effects = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const settings = overlaySettings(options.overlay)
    const secrets = secretsFor(join(root, 'secrets'))

    const start = (i: number) =>
      startReplica({
        overlay: options.overlay,
        root,
        index: i,
        brokerPort: m.port,
        secrets,
        flows: flow(effects, options.termMs, options.tickMs),
        termMs: options.termMs,
      })
    for (let i = 0; i < options.replicas; i++) runtimes.push(await start(i))
    living.splice(0, living.length, ...runtimes)
    log(
      `${options.overlay}: ${options.replicas} replicas with ${settings.slice(repo.length + 1)}, mosquitto ${brokerUrl}, the emulator's state store on it`,
    )
    // Ready: the tick runs (a leader's flows started and its gate elected).
    await until(() => ticks.length > 0, 'the first tick', 180_000)

    const publisher = await mqtt.connectAsync(brokerUrl, {
      protocolVersion: 5,
      clientId: `rehearsal-publisher-${process.pid}`,
    })
    // A stream at `rate` msgs/s (a burst of 10,000 would only measure Node-RED's queue): a tenth of a second's worth at a time.
    const publish = async (numbers: number[]) => {
      const window = Math.max(1, Math.round(options.rate / 10))
      for (let i = 0; i < numbers.length; i += window) {
        const next = Date.now() + 100
        await Promise.all(
          numbers.slice(i, i + window).map((n) =>
            publisher.publishAsync(TOPIC, JSON.stringify({ n }), {
              qos: 1,
              properties: { userProperties: { id: String(n) } },
            }),
          ),
        )
        await new Promise((r) => setTimeout(r, Math.max(0, next - Date.now())))
      }
    }
    const all = Array.from({ length: options.msgs }, (_, n) => n)
    const publishing = publish(all)
    // Mid-stream: kill -9 the replica that leads the tick.
    await until(() => handled.size >= options.msgs / 3, 'a third of the msgs handled', 600_000)
    const leader = ticks.at(-1)!.by
    const victim = runtimes[Number(leader.split('-').at(-1))]!
    const killedAt = Date.now()
    living.splice(living.indexOf(victim), 1)
    await victim.kill()
    log(`killed ${leader} (kill -9) after ${handled.size} msgs handled`)
    // Redelivered as a broker redelivers: 100 msgs whose claims the store says are done; each must be a duplicate.
    // (A msg whose work was done but whose completion had not landed when its replica died is worked
    // again on redelivery: the window between a flow's last step and its completion, docs/locks.md.)
    const redelivered: number[] = []
    const observer = new StateStoreClient({ brokerUrl, clientId: `rehearsal-observer-${process.pid}` })
    try {
      await observer.ready({ timeoutMs: 30_000 })
      // Newest first: a replica's completions may lag its work by a queue's length.
      for (const n of [...handledAt.keys()].reverse()) {
        if (redelivered.length >= 100) break
        const { value } = await observer.get(`once/id/${n}`)
        if (value && parseClaim(value)?.state === 'done') redelivered.push(n)
      }
    } finally {
      await observer.close()
    }
    await publishing
    await until(
      () => ticks.some((t) => t.at > killedAt && t.by !== leader),
      'a tick by another replica',
      10 * options.termMs + 60_000,
    )
    const takeoverMs = ticks.find((t) => t.at > killedAt && t.by !== leader)!.at - killedAt
    // After the take-over (a shared subscription with no member left drops what it gets).
    await publish(redelivered)
    // What the source saw no work for is sent again, until each msg was worked (or rounds run out).
    let republished = redelivered.length
    for (let round = 0; round < 10; round++) {
      await settled(() => handled.size, 2 * options.termMs)
      const missing = all.filter((n) => !handled.has(n))
      if (missing.length === 0) break
      republished += missing.length
      await publish(missing)
    }
    await settled(() => handled.size + duplicatesSeen, 2000)
    await publisher.endAsync()

    const counts = all.map((n) => handled.get(n)?.length ?? 0)
    const once = counts.filter((c) => c === 1).length
    const lost = counts.filter((c) => c === 0).length
    const twice = counts.filter((c) => c > 1).length
    // The ticks period by period (scripts/tick-periods.ts): a period missed at the kill's hand-over, at a
    // gate, or by every replica's Inject timer (setInterval loses periods while an event loop is blocked).
    const tp = tickPeriods(gated, options.tickMs, {
      killedAt,
      onTheClock: tickSchedule(options.tickMs).crontab !== '',
    })
    const periods = tp.periods
    const periodsWithout = tp.missed.handOver + tp.missed.gate + tp.missed.timers
    const periodsDoubled = tp.doubled
    const perPeriod = tp.ticked / Math.max(1, periods)
    const line =
      `${options.overlay}: msgs sent ${options.msgs}, handled once ${once}, lost ${lost}, handled twice ${twice}; ` +
      `ticks per period ${perPeriod.toFixed(2)} (${periods} periods: doubled ${periodsDoubled}, missed ${periodsWithout}: ` +
      `${tp.missed.handOver} at the hand-over, ${tp.missed.timers} not fired by the leader's Inject, ${tp.missed.gate} fired there and not passed); ` +
      `take-over ${(takeoverMs / 1000).toFixed(1)} s (term ${options.termMs / 1000} s); ` +
      `redelivered ${redelivered.length} (${redelivered.filter((n) => duplicates.has(n)).length} of them duplicates), republished unseen ${republished - redelivered.length}`
    log(line)
    return {
      overlay: options.overlay,
      sent: options.msgs,
      once,
      lost,
      twice,
      republished,
      duplicatesSeen,
      redelivered: redelivered.length,
      redeliveredAsDuplicates: redelivered.filter((n) => duplicates.has(n)).length,
      periods,
      periodsWithout,
      periodsMissed: tp.missed,
      periodsDoubled,
      takeoverMs,
      killed: leader,
      line,
    }
  } finally {
    for (const r of runtimes) await r.stop().catch(() => {})
    server.close()
    await emulator?.stop().catch(() => {})
    mosquitto?.kill('SIGTERM')
    rmSync(root, { recursive: true, force: true })
  }
}

/** The replicas that must be running (all but the one killed): one that exits fails the rehearsal with its log. */
const living: NodeRedChild[] = []

/** Resolves once `predicate` holds, polled every 50 ms; rejects after `ms`, or when a replica that should run has exited. */
async function until(predicate: () => boolean, what: string, ms: number): Promise<void> {
  const deadline = Date.now() + ms
  while (!predicate()) {
    const dead = living.find((r) => !r.running)
    if (dead) throw new Error(`rehearsal: a replica exited while waiting for ${what}:\n${dead.log.slice(-3000)}`)
    if (Date.now() > deadline) throw new Error(`rehearsal: no ${what} within ${ms} ms`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** Resolves once `count` has not changed for `quietMs`. */
async function settled(count: () => number, quietMs: number): Promise<void> {
  let last = count()
  let since = Date.now()
  while (Date.now() - since < quietMs) {
    await new Promise((r) => setTimeout(r, 100))
    const now = count()
    if (now !== last) {
      last = now
      since = Date.now()
    }
  }
}

if (require.main === module) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      msgs: { type: 'string' },
      rate: { type: 'string' },
      replicas: { type: 'string' },
      'term-ms': { type: 'string' },
      'tick-ms': { type: 'string' },
      json: { type: 'boolean' },
    },
  })
  const overlay = positionals[0]
  if (overlay !== 'ha' && overlay !== 'active-active') {
    console.error(
      'usage: npm run rehearse -- ha|active-active [--msgs N] [--rate N] [--replicas N] [--term-ms N] [--tick-ms N] [--json]',
    )
    process.exit(2)
  }
  rehearse({
    overlay,
    msgs: Number(values.msgs ?? 10_000),
    replicas: Number(values.replicas ?? (overlay === 'ha' ? 2 : 3)),
    termMs: Number(values['term-ms'] ?? 10_000),
    tickMs: Number(values['tick-ms'] ?? 1000),
    rate: Number(values.rate ?? 250),
  }).then(
    (r) => {
      if (values.json) console.log(JSON.stringify(r))
      process.exit(r.lost === 0 && r.twice === 0 ? 0 : 1)
    },
    (err: Error) => {
      console.error(err.message)
      process.exit(1)
    },
  )
}

/**
 * The chaos run: mosquitto, the emulator CLI with --persist serving through it, and the
 * workloads' clients, each behind a TcpRelay; rounds of seeded fault schedules while the requests,
 * locks and watches workloads run; after each round the faults heal, the workloads stop and their
 * histories are checked. One client's clock runs 30 s ahead all along (allowed); a probe's runs
 * 90 s ahead and must be refused with TimestampSkew, saying so. Two cached context stores write
 * each round's keys through their own relays (test/system/chaos/context.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { StateStoreClient, type ClientOptions } from '../../../src/client'
import { ConnectionError, ServiceError } from '../../../src/diagnostics/errors'
import {
  FAULT_KINDS,
  FaultInjector,
  describeFault,
  planFaults,
  seededRandom,
  skewedClock,
  type Fault,
  type FaultKind,
} from '../../support/faults'
import { Mosquitto } from '../../support/mosquitto'
import { TcpRelay } from '../../support/relay'
import { EmulatorCli } from '../../support/emulator-cli'
import { sleep } from '../../support/wait'
import { ContextWorkload } from './context'
import { failureOf, judge, mergeJudged, Outages, type Failure, type Judged, type OutageKind } from './outages'
import type { Recorded } from './history'
import { LocksWorkload } from './locks'
import { NodeRedLocksWorkload } from './node-red-locks'
import { RequestsWorkload } from './requests'
import { WatchesWorkload } from './watches'

export interface ChaosOptions {
  seed: number
  /** Time under faults, in all rounds together. */
  seconds: number
  faults?: readonly FaultKind[]
  /** One round's fault schedule, ms. */
  roundMs?: number
  log?: (line: string) => void
  /** Run ss-lock in two real Node-RED runtimes too (test/system/chaos/node-red-locks.ts); default true. */
  nodeRed?: boolean
}

export interface ChaosReport {
  operations: number
  schedules: number
  faults: Map<FaultKind, number>
  /** Failed operations judged against the faults (outages.ts): allowed, indeterminate, and the violations among `violations`. */
  judged: Judged
  violations: string[]
  /** Keys whose history was too tangled for the search budget. */
  unchecked: number
  line: string
}

/** How long an emulator may take to start: minutes' worth of patience on a machine at load 30. */
const EMULATOR_START_MS = 60_000
/** How often the prober asks the service, and how long it waits for an answer, to measure when it was unreachable. */
const PROBE_EVERY_MS = 250
const PROBE_TIMEOUT_MS = 1500

const REQUEST_CLIENTS = 4
const LOCK_CLIENTS = 3
const WATCHERS = 2
const CONTEXT_STORES = 2
const RUNTIMES = 2

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const log = options.log ?? (() => {})
  const kinds = options.faults ?? FAULT_KINDS
  const roundMs = options.roundMs ?? Math.min(options.seconds * 1000, 18_000)
  const rounds = Math.max(1, Math.round((options.seconds * 1000) / roundMs))
  // The schedules from the seed alone, whatever the workloads draw: a failing run replays with its seed.
  const planRandom = seededRandom(options.seed)
  const random = seededRandom(options.seed ^ 0x5bd1e995)
  const dir = mkdtempSync(join(tmpdir(), 'chaos-'))
  const broker = await Mosquitto.start()
  const clients: StateStoreClient[] = []
  const relays: TcpRelay[] = []
  let emulator: EmulatorCli | null = null
  let red: NodeRedLocksWorkload | null = null
  const report: ChaosReport = {
    operations: 0,
    schedules: 0,
    faults: new Map(),
    judged: { allowed: 0, indeterminate: 0, byKind: new Map(), violations: [] },
    violations: [],
    unchecked: 0,
    line: '',
  }
  /** Whose connection each relay carries, by index in `relays` (null: the emulator's, so everyone's service). */
  const relayOwners: Array<string | null> = []
  const outages = new Outages()
  let stopProbing: () => Promise<void> = async () => {}
  try {
    const emulatorRelay = await TcpRelay.start(broker.port)
    relays.push(emulatorRelay)
    relayOwners.push(null)
    const emulatorArgs = ['--broker', emulatorRelay.url, '--persist', join(dir, 'store.log'), '--log-level', 'error']
    emulator = await EmulatorCli.start(emulatorArgs, EMULATOR_START_MS)
    const client = async (name: string, extra: Partial<ClientOptions> = {}) => {
      const relay = await TcpRelay.start(broker.port)
      relays.push(relay)
      relayOwners.push(name)
      const c = new StateStoreClient({
        brokerUrl: relay.url,
        clientId: `chaos-${options.seed}-${name}`,
        requestTimeoutMs: 2500,
        keepaliveSec: 2,
        connectTimeoutMs: 2000,
        reconnectMinMs: 100,
        reconnectMaxMs: 1000,
        ...extra,
      })
      clients.push(c)
      return c
    }
    const requestClients: StateStoreClient[] = []
    for (let i = 0; i < REQUEST_CLIENTS; i++)
      requestClients.push(await client(`r${i}`, i === 0 ? { clock: skewedClock(30_000) } : {}))
    // The lock contenders wait for the connection as ss-lock's config node does (2 s).
    const lockClients: StateStoreClient[] = []
    for (let i = 0; i < LOCK_CLIENTS; i++) lockClients.push(await client(`l${i}`, { connectionWaitMs: 2000 }))
    const watchClients: StateStoreClient[] = []
    for (let i = 0; i < WATCHERS; i++) watchClients.push(await client(`w${i}`))
    // The context stores are made anew each round (on the round's prefix), each behind its own relay.
    const contextRelays: TcpRelay[] = []
    for (let i = 0; i < CONTEXT_STORES; i++) contextRelays.push(await TcpRelay.start(broker.port))
    relays.push(...contextRelays)
    relayOwners.push(...contextRelays.map((_, i) => `c${i}`))
    const contextClientId = (name: string) => `chaos-${options.seed}-context-${name}`
    const redIds: string[] = []
    if (options.nodeRed !== false) {
      const redRelays: TcpRelay[] = []
      for (let i = 0; i < RUNTIMES; i++) redRelays.push(await TcpRelay.start(broker.port))
      relays.push(...redRelays)
      relayOwners.push(...redRelays.map((_, i) => `red-r${i}`))
      red = await NodeRedLocksWorkload.start(redRelays.map((r) => r.url))
      redIds.push(...NodeRedLocksWorkload.clientIds(options.seed, RUNTIMES))
    }
    // The checks read straight from the broker, past every relay.
    const reader = new StateStoreClient({
      brokerUrl: broker.url,
      clientId: `chaos-${options.seed}-reader`,
      requestTimeoutMs: 5000,
      reconnectMinMs: 100,
      reconnectMaxMs: 500,
    })
    clients.push(reader)
    const probe = new StateStoreClient({
      brokerUrl: broker.url,
      clientId: `chaos-${options.seed}-skewed`,
      clock: skewedClock(90_000),
      requestTimeoutMs: 5000,
    })
    clients.push(probe)
    // Asks the service all along, straight through the broker: when it could not be reached, whatever the fault (an emulator slow to reconnect after a broker restart too).
    const prober = new StateStoreClient({
      brokerUrl: broker.url,
      clientId: `chaos-${options.seed}-prober`,
      reconnectMinMs: 100,
      reconnectMaxMs: 500,
    })
    clients.push(prober)
    await Promise.all(clients.map((c) => c.ready({ timeoutMs: 10_000 })))
    stopProbing = probeService(prober, outages)

    const injector = new FaultInjector({
      relays,
      broker,
      emulator: {
        kill: async () => await emulator?.kill(),
        restart: async () => {
          emulator = await EmulatorCli.start(emulatorArgs, EMULATOR_START_MS)
        },
      },
      clientIds: [
        ...[...requestClients, ...lockClients, ...watchClients].map((c) => c.clientId),
        ...contextRelays.map((_, i) => contextClientId(`c${i}`)),
        ...redIds,
      ],
      brokerUrl: broker.url,
    })
    // The process each takeover target is, in the injector's order.
    const takeoverOwners = [
      ...requestClients.map((_, i) => `r${i}`),
      ...lockClients.map((_, i) => `l${i}`),
      ...watchClients.map((_, i) => `w${i}`),
      ...contextRelays.map((_, i) => `c${i}`),
      ...redIds.map((_, i) => `red-r${i}`),
    ]
    const ownerOf = (f: Fault): string | null => {
      if (f.kind === 'kill-emulator' || f.kind === 'kill-broker' || f.kind === 'pause-broker') return null
      if (f.kind === 'takeover') return takeoverOwners[f.target % takeoverOwners.length]!
      return relayOwners[f.target % relays.length]!
    }

    for (let round = 1; round <= rounds; round++) {
      const plan = planFaults(planRandom, roundMs, kinds, relays.length)
      report.schedules += 1
      log(`round ${round}/${rounds} (seed ${options.seed}): ${plan.map(describeFault).join(', ') || 'no faults'}`)
      const prefix = `chaos/${options.seed}/${round}`
      const keys = [0, 1, 2].map((k) => `${prefix}/k${k}`)
      const requests = new RequestsWorkload(requestClients, keys, random)
      const locks = new LocksWorkload(lockClients, `${prefix}/lock`, `${prefix}/counter`, `${prefix}/leader`)
      const watches = new WatchesWorkload(watchClients, keys)
      const context = new ContextWorkload(
        contextRelays.map((r) => r.url),
        broker.url,
        `${prefix}/context/`,
        contextClientId,
        random,
      )
      await watches.start()
      await context.start(reader)
      await red?.round(prefix, options.seed, round)
      requests.start()
      locks.start()

      const startedAt = performance.now()
      for (const fault of plan) {
        const wait = fault.at - (performance.now() - startedAt)
        if (wait > 0) await sleep(wait)
        const start = performance.now()
        try {
          await within(
            injector.apply(fault, sleep),
            fault.durationMs + EMULATOR_START_MS + 20_000,
            `the fault ${describeFault(fault)} to be applied and healed`,
          )
        } finally {
          outages.record({ kind: fault.kind, who: ownerOf(fault), start, end: performance.now() })
        }
      }
      const rest = roundMs - (performance.now() - startedAt)
      if (rest > 0) await sleep(rest)
      injector.healAll()
      if (!emulator || !emulator.running) emulator = await EmulatorCli.start(emulatorArgs, EMULATOR_START_MS)
      await within(
        Promise.all(clients.map((c) => c.ready({ timeoutMs: 55_000 }))),
        60_000,
        'every client to reconnect after the faults healed',
      )
      await within(context.reconnected(55_000), 60_000, 'the context stores to reconnect after the faults healed')
      // The checks read from the service: wait until it answers again (a restarted emulator reconnecting to a restarted broker).
      const answered = await Promise.race([served(reader).then(() => true), sleep(60_000).then(() => false)])
      if (!answered) {
        report.violations.push(
          `round ${round}: the service did not answer within 60 s after the faults healed; the emulator is restarted`,
        )
        await emulator?.kill()
        emulator = await EmulatorCli.start(emulatorArgs, EMULATOR_START_MS)
        await within(served(reader), 60_000, 'the restarted service to answer')
      }
      await within(Promise.all([requests.stop(), locks.stop(), context.stop()]), 60_000, 'the workloads to stop')
      const checked = requests.check()
      const lockCheck = await within(locks.check(reader), 30_000, 'the locks check')
      const watchViolations = await within(watches.check(reader, 5000), 30_000, 'the watches check')
      const contextCheck = await within(context.check(5000), 30_000, 'the context check')
      const redCheck = red
        ? await within(red.check(), 45_000, 'the Node-RED locks check')
        : { operations: 0, violations: [], summary: '', failures: [] }
      await within(
        Promise.all([locks.close(), watches.close(), context.close()]),
        10_000,
        'the elections, watches and context stores to close',
      )
      const skew = await skewRefused(probe)
      const shown = (ops: ReadonlyArray<Recorded<unknown, unknown>>) => (f: Failure) =>
        ops
          .filter(
            (o) =>
              o.process === f.process &&
              o.invokedAt <= f.endedAt + 5000 &&
              (o.endedAt ?? o.returnedAt) >= f.invokedAt - 5000,
          )
          .slice(-8)
          .map(
            (o) =>
              `  ${o.process} ${JSON.stringify(o.input)} at ${Math.round(o.invokedAt)}-${Math.round(o.endedAt ?? o.returnedAt)}: ${o.outcome}${o.error ? ` (${o.error})` : ''}`,
          )
          .join('\n')
      const judged: Judged = { allowed: 0, indeterminate: 0, byKind: new Map(), violations: [] }
      for (const [history, what] of [
        [requests.history, 'request'],
        [locks.history, 'lock edit'],
        [context.history, 'context set'],
      ] as const) {
        const ops = history.ops as ReadonlyArray<Recorded<unknown, unknown>>
        const failures = ops.flatMap((op) => failureOf(op, `${what} ${JSON.stringify(op.input)}`) ?? [])
        mergeJudged(judged, judge(failures, outages, shown(ops)))
      }
      mergeJudged(
        judged,
        judge(redCheck.failures, outages, () => (red ? red.logs() : '')),
      )
      mergeJudged(report.judged, judged)
      const violations = [
        ...checked.violations,
        ...lockCheck.violations,
        ...watchViolations,
        ...contextCheck.violations,
        ...redCheck.violations,
        ...skew,
        ...judged.violations,
      ]
      report.operations += checked.operations + lockCheck.operations + contextCheck.operations + redCheck.operations
      report.unchecked += checked.unchecked
      report.violations.push(...violations)
      log(
        `round ${round}: ${judged.allowed} failures allowed (${describeKinds(judged.byKind)}), ${judged.indeterminate} indeterminate; ${checked.operations} requests, ${lockCheck.operations} lock edits, ${contextCheck.operations} context writes (${context.history.ops.filter((o) => o.outcome !== 'ok').length} failed or unknown), ${watches.notifications} notifications, ${redCheck.summary ? `${redCheck.summary}, ` : ''}${violations.length} violations${checked.unchecked ? `, ${checked.unchecked} keys beyond the search budget` : ''}`,
      )
      for (const v of violations) log(`VIOLATION ${v}`)
      if (red && redCheck.violations.length > 0) log(red.logs())
    }
    report.faults = injector.applied
  } finally {
    await stopProbing()
    await red?.stop()
    await Promise.all(clients.map((c) => c.close()))
    await emulator?.kill('SIGTERM')
    await Promise.all(relays.map((r) => r.stop()))
    broker.signal('SIGCONT')
    await broker.stop()
    rmSync(dir, { recursive: true, force: true })
  }
  const applied = FAULT_KINDS.filter((k) => report.faults.has(k))
  report.line = `chaos: ${report.operations} operations checked in ${report.schedules} fault schedules (${applied.join(', ')}), ${report.judged.allowed} failures allowed, ${report.judged.indeterminate} indeterminate, ${report.violations.length} violations`
  return report
}

/** The allowed failures per kind of fault, for the round's line. */
export function describeKinds(byKind: ReadonlyMap<OutageKind, number>): string {
  return [...byKind].map(([k, n]) => `${k} ${n}`).join(', ') || 'none'
}

/** Records every stretch in which the service did not answer the prober; stop() ends it (an open stretch ends then). */
function probeService(prober: StateStoreClient, outages: Outages): () => Promise<void> {
  let stopped = false
  const loop = (async () => {
    let down: number | null = null
    while (!stopped) {
      const sentAt = performance.now()
      try {
        await prober.get('chaos/probe', { timeoutMs: PROBE_TIMEOUT_MS })
        if (down !== null) outages.record({ kind: 'unreachable', who: null, start: down, end: sentAt })
        down = null
      } catch (err) {
        // unreachable: no connection, or nobody subscribed to the request topic; a slow answer is not an outage
        const status = prober.status
        if (err instanceof ConnectionError || status.state !== 'connected' || status.problem === 'noService')
          down ??= sentAt
      }
      await sleep(PROBE_EVERY_MS)
    }
    if (down !== null) outages.record({ kind: 'unreachable', who: null, start: down, end: performance.now() })
  })()
  return async () => {
    stopped = true
    await loop
  }
}

/** Resolves once the service answers a read (it may be restarting, or reconnecting to a restarted broker). */
async function served(reader: StateStoreClient): Promise<void> {
  for (;;) {
    try {
      await reader.get('chaos/probe', { timeoutMs: 2000 })
      return
    } catch {
      await sleep(200)
    }
  }
}

/** A phase that does not end in time is a failure of the run that says which phase, not a hang. */
async function within<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>(
    (_, reject) =>
      (timer = setTimeout(() => reject(new Error(`chaos: timed out after ${ms} ms waiting for ${what}`)), ms)),
  )
  try {
    return await Promise.race([work, late])
  } finally {
    clearTimeout(timer)
  }
}

/** A client 90 s ahead is refused, and the error says the clocks differ. */
async function skewRefused(probe: StateStoreClient): Promise<string[]> {
  try {
    await probe.get('chaos/skew')
    return ['a client 90 s ahead was served']
  } catch (err) {
    if (err instanceof ServiceError && err.code === 'TimestampSkew') return []
    return [`a client 90 s ahead failed otherwise than with TimestampSkew: ${String(err)}`]
  }
}

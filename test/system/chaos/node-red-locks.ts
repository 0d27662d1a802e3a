/**
 * ss-lock in a real Node-RED runtime under the chaos run's faults: two Node-RED 5 runtimes (red.js
 * child processes loading this working tree's nodes), each reaching the broker through its own
 * relay, run the shipped active/standby examples (examples/two-runtimes/), one tab in lock mode and
 * one in leader mode, on the round's keys. Only the active runtime writes, with its fencing token.
 * Debug nodes report, over the editor's websocket (not through the faults), every write the
 * service accepted (with its version) and every error the ss-lock nodes raised. Checks per mode:
 * in the order the service executed them, the tokens of accepted writes never go down (so no write
 * of an old holder lands after a new holder's first); no lock waiter fails because of a connection
 * loss (its wait is 10 s; it must ride through every fault); once faults heal, someone holds and
 * writes within one lease term.
 *
 * A third tab per runtime wires locks as users do, with several msgs at once: every second a burst of
 * three msgs into one lock-mode node (lock → get → +1 → set fenced → release, a set refused by
 * fencing released from the Catch path) and three into an *update key* node, on two counters the two
 * runtimes share. Checked: in version order the accepted values of each counter strictly increase
 * (no increment lost; a gap is a write of unknown outcome) and their tokens never go down.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { FROM_WORKING_TREE, runtimeSettings, writeSettings } from '../../../dev/node-red'
import { freePort } from '../../../dev/ports'
import { Hlc } from '../../../src/hlc'
import type { Failure } from './outages'
import {
  formatDebug,
  NodeRedProcess,
  RED_JS,
  readJson,
  repoRoot,
  type Comms,
  type DebugMessage,
} from '../smoke/node-red'

const LEASE_MS = 2000
const MODES = [
  { mode: 'lock', file: 'active-standby-lock.json' },
  { mode: 'leader', file: 'active-standby-leader.json' },
] as const
type Mode = (typeof MODES)[number]['mode']

type FlowNode = { id: string; type: string; z?: string; wires?: string[][]; [k: string]: unknown }

export interface Accepted {
  runtime: string
  by: string
  token: string
  seq: number
  version: string
  /** When the writing runtime had the answer (its wall clock, ms). */
  seenAt?: number
}

/** A Debug node the workload reads back by name from the sidebar, showing the whole msg. */
function sidebarDebug(id: string, name: string): FlowNode {
  return {
    id,
    type: 'debug',
    name,
    active: true,
    tosidebar: true,
    console: false,
    tostatus: false,
    complete: 'true',
    targetType: 'full',
    wires: [],
  }
}

/**
 * A Debug node by `name` behind a Function node (`<id>-stamp`) that stamps when the runtime saw
 * the msg (`msg.seenAt`, the runtime's wall clock): a write accepted, a failure from a Catch node.
 * They are judged by the runtime's times, not by when the debug message reached the test: a busy
 * runtime can deliver it seconds late.
 */
function stampedDebug(id: string, name: string, z: string): FlowNode[] {
  return [
    {
      id: `${id}-stamp`,
      type: 'function',
      z,
      func: 'msg.seenAt = Date.now();\nreturn msg;',
      outputs: 1,
      wires: [[id]],
    },
    { ...sidebarDebug(id, name), z },
  ]
}

/** The two examples on the round's keys, pointed at `brokerUrl`, with a debug node on the ss-set's output and a catch node on the ss-lock. */
function flows(prefix: string, round: number, brokerUrl: string, clientId: string): FlowNode[] {
  // Ids new each round: the flow context (the token the example keeps) must not carry over a deploy.
  const rid = (id: string) => `${id}.${round}`
  const nodes: FlowNode[] = []
  const config = {
    id: rid('c4a05c0f00000001'),
    type: 'ss-config',
    name: 'chaos',
    embedded: false,
    broker: brokerUrl,
    clientId,
    usetls: false,
    keepalive: '2',
    cleanStart: true,
    requestTimeout: '10000',
    maxInFlight: '1000',
  }
  nodes.push(config)
  for (const { mode, file } of MODES) {
    const example = readJson<FlowNode[]>(join(repoRoot, 'examples', 'two-runtimes', file)).filter(
      (n) => n.type !== 'ss-config',
    )
    const tab = rid(example.find((n) => n.type === 'tab')!.id)
    for (const n of example) {
      const copy: FlowNode = { ...n, id: rid(n.id) }
      if (n.z) copy.z = rid(n.z)
      if (n.wires) copy.wires = n.wires.map((port) => port.map(rid))
      if (Array.isArray(n.scope)) copy.scope = (n.scope as string[]).map(rid)
      if (n.store) copy.store = config.id
      if (typeof n.key === 'string') copy.key = `${prefix}/${mode}/${String(n.key).split('/').pop()}`
      // 50 ms, not the example's 10: four writers on a shared two-core machine.
      if (n.type === 'inject' && n.repeat === '0.01') copy.repeat = '0.05'
      if (n.type === 'ss-set') copy.wires = [[`${rid(`${mode}-accepted`)}-stamp`]]
      nodes.push(copy)
    }
    const lock = rid(example.find((n) => n.type === 'ss-lock')!.id)
    nodes.push(...stampedDebug(rid(`${mode}-accepted`), `${mode}-accepted`, tab))
    nodes.push({
      id: rid(`${mode}-lock-error`),
      type: 'catch',
      z: tab,
      name: `${mode}-lock-error`,
      scope: [lock],
      uncaught: false,
      wires: [[`${rid(`${mode}-lock-failed`)}-stamp`]],
    })
    nodes.push(...stampedDebug(rid(`${mode}-lock-failed`), `${mode}-lock-failed`, tab))
  }
  nodes.push(...counterTab(prefix, rid, config.id))
  return nodes
}

const BURST = 3

/** The nodes' codes for a service that could not be reached: judged against the faults (outages.ts). */
const UNREACHABLE = new Set(['Timeout', 'NotConnected', 'ConnectionLost', 'NoService'])

/** How long a node waits: its request timeout and its lock wait. */
const WAIT_MS = 10_000

/** The tab of simultaneous msgs: a lock-mode counter and an update-key counter, both shared by the runtimes. */
function counterTab(prefix: string, rid: (id: string) => string, store: string): FlowNode[] {
  const tab = rid('counters')
  const on = (n: FlowNode): FlowNode => ({ z: tab, x: 100, y: 100, wires: [], ...n, id: rid(n.id) })
  const to = (...ids: string[]) => [ids.map(rid)]
  // Each msg carries when it set off (the runtime's wall clock): a failure's lifetime starts there.
  const burst = `return [Array.from({ length: ${BURST} }, (_, i) => ({ payload: i, sentAt: Date.now() }))];`
  return [
    { id: tab, type: 'tab', label: 'counters' },
    on({
      id: 'tick',
      type: 'inject',
      name: 'tick',
      props: [{ p: 'payload' }],
      repeat: '1',
      once: true,
      onceDelay: 0.1,
      payload: '',
      payloadType: 'date',
      wires: to('burst'),
    }),
    on({ id: 'burst', type: 'function', func: burst, outputs: 1, wires: to('take', 'update') }),
    on({
      id: 'take',
      type: 'ss-lock',
      store,
      key: `${prefix}/red-counter/lock`,
      keyType: 'str',
      mode: 'lock',
      action: 'acquire',
      leaseMs: String(LEASE_MS),
      timeout: '10000',
      holdMs: '8000',
      wires: [[rid('read')], []],
    }),
    on({
      id: 'read',
      type: 'ss-get',
      store,
      key: `${prefix}/red-counter`,
      keyType: 'str',
      decode: 'json',
      notFound: 'payload',
      wires: to('add'),
    }),
    on({
      id: 'add',
      type: 'function',
      func: 'msg.payload = (msg.found ? msg.payload : 0) + 1;\nreturn msg;',
      outputs: 1,
      wires: to('write'),
    }),
    on({
      id: 'write',
      type: 'ss-set',
      store,
      key: `${prefix}/red-counter`,
      keyType: 'str',
      value: 'payload',
      valueType: 'msg',
      fencingToken: 'fencingToken',
      fencingTokenType: 'msg',
      persist: true,
      wires: to('counter-accepted', 'free'),
    }),
    // A write that failed (refused by fencing, timed out) still releases its hold, from the Catch path.
    on({ id: 'write-failed', type: 'catch', scope: [rid('write'), rid('read')], uncaught: false, wires: to('free') }),
    on({
      id: 'free',
      type: 'ss-lock',
      store,
      key: '',
      keyType: 'str',
      mode: 'lease',
      action: 'release',
      wires: [[], []],
    }),
    on(sidebarDebug('counter-accepted', 'counter-accepted')),
    on({
      id: 'update',
      type: 'ss-update',
      store,
      key: `${prefix}/red-updated`,
      keyType: 'str',
      expression: 'value + 1',
      initial: '0',
      initialType: 'num',
      timeout: '10000',
      persist: true,
      wires: to('update-accepted'),
    }),
    on(sidebarDebug('update-accepted', 'update-accepted')),
    on({
      id: 'counter-error',
      type: 'catch',
      scope: [rid('take'), rid('update'), rid('free')],
      uncaught: false,
      wires: [[`${rid('counter-failed')}-stamp`]],
    }),
    ...stampedDebug(rid('counter-failed'), 'counter-failed', tab),
  ]
}

/**
 * A counter's accepted write: the value written, with the version the service gave it and the token
 * it carried, when the msg tells it (the lock-mode counter's msg does; *update key* keeps its lock's
 * token to itself, so its counter is checked by value alone).
 */
export interface Counted {
  runtime: string
  value: number
  token?: string
  version: string
}

/**
 * In version order a counter's accepted values strictly increase (two writes of one value: an
 * increment lost) and their tokens never go down. A gap is allowed: a write whose answer was lost.
 */
export function counterViolations(name: string, writes: readonly Counted[]): string[] {
  const ordered = [...writes].sort((a, b) => Hlc.compare(Hlc.parse(a.version), Hlc.parse(b.version)))
  const violations: string[] = []
  for (let i = 1; i < ordered.length; i++) {
    const [a, b] = [ordered[i - 1]!, ordered[i]!]
    if (b.value <= a.value)
      violations.push(`${name}: an increment lost: ${JSON.stringify(a)} then ${JSON.stringify(b)}`)
    if (a.token !== undefined && b.token !== undefined && Hlc.compare(Hlc.parse(b.token), Hlc.parse(a.token)) < 0)
      violations.push(
        `${name}: an older hold's write landed after a newer one's: ${JSON.stringify(a)} then ${JSON.stringify(b)}`,
      )
  }
  return violations
}

/** In the order the service executed them (their versions), the tokens of accepted writes never go down: no old holder's write lands after a new holder's first. */
export function fencingViolations(writes: readonly Accepted[]): string[] {
  const ordered = [...writes].sort((a, b) => Hlc.compare(Hlc.parse(a.version), Hlc.parse(b.version)))
  const violations: string[] = []
  for (let i = 1; i < ordered.length; i++) {
    const [a, b] = [ordered[i - 1]!, ordered[i]!]
    if (Hlc.compare(Hlc.parse(b.token), Hlc.parse(a.token)) < 0)
      violations.push(
        `an older holder's write landed after a newer holder's: ${JSON.stringify(a)} then ${JSON.stringify(b)}`,
      )
  }
  return violations
}

export class NodeRedLocksWorkload {
  private readonly runtimes: NodeRedProcess[] = []
  private readonly comms: Comms[] = []
  private dir = ''
  /** Where each runtime's debug output of the current round starts. */
  private marks: number[] = []
  private prefix = ''
  private roundNo = 0

  private constructor(private readonly brokerUrls: string[]) {}

  /** Starts a runtime per broker URL (each its own relay). */
  static async start(brokerUrls: string[]): Promise<NodeRedLocksWorkload> {
    const w = new NodeRedLocksWorkload(brokerUrls)
    w.dir = mkdtempSync(join(tmpdir(), 'chaos-red-'))
    const settings = join(w.dir, 'settings.js')
    writeSettings(
      settings,
      runtimeSettings({ ...FROM_WORKING_TREE, logging: { console: { level: 'warn', metrics: false, audit: false } } }),
    )
    try {
      await Promise.all(
        brokerUrls.map(async (_, i) => {
          const userDir = join(w.dir, `r${i}`)
          mkdirSync(userDir)
          const red = new NodeRedProcess(RED_JS[5], userDir, await freePort(), settings)
          w.runtimes[i] = red
          await red.start(60_000)
          w.comms[i] = await red.comms()
        }),
      )
    } catch (err) {
      await w.stop()
      throw err
    }
    return w
  }

  /** The ss-config client ids, for takeovers. */
  static clientIds(seed: number, count: number): string[] {
    return Array.from({ length: count }, (_, i) => `chaos-${seed}-red-r${i}`)
  }

  /** Deploys the round's flows (a full deploy: the previous round's nodes close and release). */
  async round(prefix: string, seed: number, round: number): Promise<void> {
    this.prefix = prefix
    this.roundNo = round
    const ids = NodeRedLocksWorkload.clientIds(seed, this.runtimes.length)
    this.marks = this.comms.map((c) => c.debug.length)
    await Promise.all(
      this.runtimes.map((red, i) => red.deploy(flows(prefix, round, this.brokerUrls[i]!, ids[i]!), this.comms[i]!)),
    )
  }

  private output(i: number): DebugMessage[] {
    return this.comms[i]!.debug.slice(this.marks[i])
  }

  private accepted(mode: Mode): Accepted[] {
    return this.runtimes.flatMap((_, i) =>
      this.output(i)
        // This round's nodes only: a write of the previous round's nodes can still land while they close.
        .filter((d) => d.name === `${mode}-accepted` && d.id === `${mode}-accepted.${this.roundNo}`)
        .map((d) => {
          const msg = JSON.parse(d.msg) as {
            payload: { by: string; token: string; seq: number }
            version: string
            seenAt: number
          }
          return { runtime: `r${i}`, ...msg.payload, version: msg.version, seenAt: msg.seenAt }
        }),
    )
  }

  private counted(name: 'counter' | 'update'): Counted[] {
    return this.runtimes.flatMap((_, i) =>
      this.output(i)
        .filter((d) => d.id === `${name}-accepted.${this.roundNo}`)
        .map((d) => {
          const msg = JSON.parse(d.msg) as { payload: number; version: string; fencingToken?: string }
          return {
            runtime: `r${i}`,
            value: Number(msg.payload),
            ...(msg.fencingToken === undefined ? {} : { token: String(msg.fencingToken) }),
            version: msg.version,
          }
        }),
    )
  }

  /** After the faults healed and the clients are back: the checks of every mode. */
  async check(): Promise<{ operations: number; violations: string[]; summary: string; failures: Failure[] }> {
    const violations: string[] = []
    /** Failures to reach the service (a request timed out, the connection was lost or missing): judged against the faults by the caller. */
    const unreachable: Failure[] = []
    const counts: string[] = []
    let operations = 0
    const checkedAt = Date.now()
    for (const { mode } of MODES) {
      // Someone holds and writes within one lease term (and the 3 s the other workloads allow for
      // reconnecting), told by when the writing runtime had the answer, not by when a busy
      // runtime's debug message arrives: that wait is only a bound for a hang.
      const writtenAfter = () => this.accepted(mode).find((w) => (w.seenAt ?? 0) >= checkedAt)
      const giveUp = performance.now() + 15_000
      while (!writtenAfter() && performance.now() < giveUp) await new Promise((r) => setTimeout(r, 50))
      const first = writtenAfter()
      const lateMs = first ? first.seenAt! - checkedAt : Infinity
      if (lateMs > LEASE_MS + 3000)
        violations.push(
          `node-red ${mode} mode: nobody held and wrote within a lease term after the faults healed (${first ? `the first write ${lateMs} ms after` : 'none in 15 s'})`,
        )
      const writes = this.accepted(mode)
      operations += writes.length
      violations.push(...fencingViolations(writes).map((v) => `node-red ${mode} mode: ${v}`))
      const failures = this.failed(`${mode}-lock-failed`)
      for (const f of failures) {
        // Leader mode: the election reports a connection error and stands again, so only one that is not transient counts.
        if (mode === 'leader' && (f.code === 'ConnectionLost' || f.code === 'NotConnected')) continue
        if (UNREACHABLE.has(f.code))
          unreachable.push(this.failure(f, `the ss-lock node in ${mode} mode failed (${f.code})`))
        else violations.push(`node-red ${mode} mode: the ss-lock node failed (${f.code}): ${f.text}`)
      }
      const holders = new Set(writes.map((w) => w.token)).size
      counts.push(
        `${mode}: ${writes.length} fenced writes under ${holders} tokens${failures.length ? `, ${failures.length} errors` : ''}`,
      )
    }
    for (const name of ['counter', 'update'] as const) {
      const writes = this.counted(name)
      operations += writes.length
      violations.push(
        ...counterViolations(`node-red ${name === 'counter' ? 'lock-mode counter' : 'update key counter'}`, writes),
      )
      const highest = writes.reduce((m, w) => Math.max(m, w.value), 0)
      counts.push(
        `${name === 'counter' ? 'lock-mode counter' : 'update key'}: ${writes.length} accepted increments of ${highest} (${BURST} msgs at once per runtime)`,
      )
    }
    const failures = this.failed('counter-failed')
    // An update key node's Timeout is its whole wait running out (it tries again within it while the
    // service is out of reach): an outcome the flow sees, queued behind an outage or the other
    // runtime's edits. A lock node's wait that runs out leaves by output 2, no error. Any other
    // failure to reach the service is judged against the faults.
    const ranOut = failures.filter((f) => f.code === 'Timeout' && f.source === 'ss-update')
    for (const f of failures.filter((f) => !ranOut.includes(f))) {
      if (UNREACHABLE.has(f.code)) unreachable.push(this.failure(f, `a lock or update key node failed (${f.code})`))
      else violations.push(`node-red counters: a lock or update key node failed: ${f.text}`)
    }
    if (ranOut.length) counts.push(`${ranOut.length} waits ran out`)
    return { operations, violations, summary: `node-red ${counts.join('; ')}`, failures: unreachable }
  }

  /**
   * The failures a node reported on the debug node `name` this round, with when the runtime saw the
   * failure and when its msg set off (where the flow stamped it), on this process's clock.
   */
  private failed(
    name: string,
  ): Array<{ runtime: number; code: string; source: string; text: string; sentAt?: number; at: number }> {
    const here = (wallClock: unknown) =>
      typeof wallClock === 'number' ? wallClock - performance.timeOrigin : undefined
    return this.runtimes.flatMap((_, i) =>
      this.output(i)
        .filter((d) => d.id === `${name}.${this.roundNo}`)
        .map((d) => {
          const msg = JSON.parse(d.msg) as {
            error?: { code?: string; source?: { type?: string } }
            seenAt?: number
            sentAt?: number
          }
          const sentAt = here(msg.sentAt)
          return {
            runtime: i,
            code: String(msg.error?.code),
            source: String(msg.error?.source?.type),
            text: `r${i}: ${JSON.stringify(msg.error)}`,
            ...(sentAt !== undefined ? { sentAt } : {}),
            // Every failure's Debug node is behind a stamp (stampedDebug).
            at: here(msg.seenAt)!,
          }
        }),
    )
  }

  /** A node's failure as the classifier sees it: from when its msg set off, or WAIT_MS before it failed. */
  private failure(f: { runtime: number; text: string; sentAt?: number; at: number }, what: string): Failure {
    return {
      process: `red-r${f.runtime}`,
      invokedAt: f.sentAt ?? f.at - WAIT_MS,
      endedAt: f.at,
      unknown: true,
      what: `${what}: ${f.text}`,
    }
  }

  /** The runtimes' logs, node status and last debug output, for a failed run. */
  logs(): string {
    return this.runtimes
      .map((r, i) => {
        const status = [...this.comms[i]!.status]
          .map(([id, st]) => `  ${id}: ${st.fill ?? ''} ${st.text ?? ''}`)
          .join('\n')
        const last = this.output(i)
          .filter((d) => !d.name?.endsWith('-accepted'))
          .slice(-10)
        return `--- runtime r${i} (${this.prefix})\n${r?.log ?? ''}status:\n${status}\nlast debug output but accepted writes:\n${formatDebug(last)}\nlast accepted: ${this.output(
          i,
        )
          .filter((d) => d.name?.endsWith('-accepted'))
          .slice(-2)
          .map((d) => d.msg)
          .join('\n')}`
      })
      .join('\n')
  }

  async stop(): Promise<void> {
    for (const c of this.comms) c?.close()
    await Promise.all(this.runtimes.map((r) => r?.stop()))
    if (this.dir) rmSync(this.dir, { recursive: true, force: true })
  }
}

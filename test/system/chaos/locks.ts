/**
 * The locks workload: contenders incrementing a fenced counter with Lock.edit (lease and write
 * persisted, so they outlive an emulator restart with --persist), and a LeaderElection with a
 * candidate per contender. Checks: the counter equals the acknowledged increments (plus at most
 * the ones of unknown outcome); in the order the service executed them (their versions), the
 * fencing tokens of accepted writes never go down, so no write of an old holder lands after a new
 * holder's; no waiter fails before its own timeout; once faults heal, someone holds the lock and
 * someone leads within one lease term.
 */
import type { StateStoreClient } from '../../../src/client'
import { isTransient, TimeoutError } from '../../../src/diagnostics/errors'
import { Hlc } from '../../../src/hlc'
import { LeaderElection, Lock } from '../../../src/locks'
import { errorCode, History } from './history'
import { show } from './requests'

const LEASE_MS = 2000
const WAIT_MS = 8000

interface Edit {
  /** The fencing token the write carried and the version the service gave it; none when the wait ran out. */
  token?: string
  version?: string
}

export class LocksWorkload {
  readonly history = new History<{ counter: string }, Edit>()
  private stopped = false
  private readonly running: Array<Promise<void>> = []
  private readonly elections: LeaderElection[] = []
  private readonly stand = new AbortController()
  /** Waits that ended with an error before the lock was ours, other than running out of time. */
  readonly waitFailures: Array<{
    process: string
    code: string
    error: string
    waitedMs: number
    connectedAtStart: boolean
  }> = []

  constructor(
    private readonly clients: StateStoreClient[],
    private readonly lockName: string,
    private readonly counter: string,
    private readonly position: string,
  ) {}

  start(): void {
    this.clients.forEach((client, i) => {
      this.running.push(this.loop(client, `l${i}`))
      const election = new LeaderElection(client, this.position, { termMs: LEASE_MS })
      this.elections.push(election)
      void election.stand({ signal: this.stand.signal, retryMs: 200 })
    })
  }

  async stop(): Promise<void> {
    this.stopped = true
    await Promise.all(this.running)
  }

  async close(): Promise<void> {
    this.stand.abort()
    await Promise.all(this.elections.map((e) => e.close()))
  }

  private async loop(client: StateStoreClient, name: string): Promise<void> {
    const lock = new Lock(client, this.lockName, { leaseMs: LEASE_MS, persist: true })
    while (!this.stopped) {
      const edit: Edit = {}
      const startedAt = performance.now()
      const connectedAtStart = client.status.state === 'connected'
      let ours = false
      await this.history.record(name, { counter: this.counter }, async () => {
        try {
          const result = await lock.edit(
            this.counter,
            (current) => {
              ours = true
              edit.token = lock.lease.fencingToken?.toString()
              return String(Number(current?.toString() ?? '0') + 1)
            },
            { timeoutMs: WAIT_MS },
          )
          edit.version = result.version?.toString()
          return edit
        } catch (err) {
          if (!ours) {
            const waitedMs = performance.now() - startedAt
            // A wait that ran out is an answer, not an unknown: nothing was written. Run out while the
            // connection was down, it says so (NotConnected) instead of timing out.
            if ((err instanceof TimeoutError || isTransient(err)) && waitedMs >= WAIT_MS) return edit
            this.waitFailures.push({
              process: name,
              code: errorCode(err),
              error: String(err),
              waitedMs,
              connectedAtStart,
            })
          }
          throw err
        }
      })
      await new Promise((r) => setTimeout(r, 20))
    }
  }

  /** After stop() and the faults healed: reads the counter and probes liveness. */
  async check(reader: StateStoreClient): Promise<{ operations: number; violations: string[] }> {
    const violations: string[] = []
    const ops = this.history.ops
    const increments = ops.filter((o) => o.outcome === 'ok' && o.output?.version)
    const unknown = ops.filter((o) => o.outcome === 'unknown')
    const counter = Number((await reader.get(this.counter, { timeoutMs: 5000 })).value?.toString() ?? '0')
    if (counter < increments.length || counter > increments.length + unknown.length) {
      violations.push(
        `counter ${this.counter} is ${counter}: ${increments.length} increments acknowledged, ${unknown.length} of unknown outcome`,
      )
    }
    const byVersion = increments
      .filter((o) => o.output!.token)
      .sort((a, b) => Hlc.compare(Hlc.parse(a.output!.version!), Hlc.parse(b.output!.version!)))
    for (let i = 1; i < byVersion.length; i++) {
      const [a, b] = [byVersion[i - 1]!, byVersion[i]!]
      if (Hlc.compare(Hlc.parse(b.output!.token!), Hlc.parse(a.output!.token!)) < 0)
        violations.push(`an older holder's write landed after a newer holder's:\n${show(a)}\n${show(b)}`)
    }
    for (const f of this.waitFailures) {
      // A waiter must not give up early because of a connection loss shorter than its wait. One that
      // began with the connection down fails NotConnected within the client's connection wait, as a request does.
      if (f.connectedAtStart && (f.code === 'connection:ConnectionLost' || f.code === 'connection:NotConnected'))
        violations.push(
          `${f.process}: a waiter failed after ${Math.round(f.waitedMs)} ms, before its timeout, because of a connection loss: ${f.error}`,
        )
    }
    const probe = new Lock(reader, this.lockName, { leaseMs: LEASE_MS, persist: true })
    try {
      await probe.acquire({ timeoutMs: LEASE_MS + 3000 })
      await probe.release()
    } catch (err) {
      violations.push(`nobody could take the lock within a lease term after the faults healed: ${String(err)}`)
    }
    const leads = await waitFor(() => this.elections.some((e) => e.isLeader), LEASE_MS + 3000)
    if (!leads) violations.push('nobody leads within a lease term after the faults healed')
    return { operations: ops.filter((o) => o.outcome !== 'pending').length, violations }
  }
}

async function waitFor(predicate: () => boolean, ms: number): Promise<boolean> {
  const deadline = performance.now() + ms
  while (!predicate()) {
    if (performance.now() > deadline) return false
    await new Promise((r) => setTimeout(r, 20))
  }
  return true
}

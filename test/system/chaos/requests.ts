/**
 * The requests workload: clients doing random GET, SET (plain, NX, NEX), DEL and VDEL on a few
 * keys; every SET asks for persistence, so the keys outlive an emulator restart with --persist.
 * Checked per key: linearizable against a register in which unknown outcomes may or may not have
 * happened, and the versions of acknowledged writes unique and increasing in real-time order.
 */
import type { StateStoreClient } from '../../../src/client'
import { Hlc } from '../../../src/hlc'
import { History, type Recorded } from './history'
import { checkHistory, registerModel, type RegisterInput, type RegisterOutput } from '../../support/linearizability'

export interface KeyedInput {
  key: string
  op: RegisterInput
}
/** What the service answered, with the version it gave. */
export type VersionedOutput = RegisterOutput & { version: string | null }

const REQUEST_TIMEOUT_MS = 2500

export class RequestsWorkload {
  readonly history = new History<KeyedInput, VersionedOutput>()
  private stopped = false
  private readonly running: Array<Promise<void>> = []

  constructor(
    private readonly clients: StateStoreClient[],
    private readonly keys: string[],
    private readonly random: () => number,
  ) {}

  start(): void {
    this.clients.forEach((client, i) => this.running.push(this.loop(client, `r${i}`)))
  }

  async stop(): Promise<void> {
    this.stopped = true
    await Promise.all(this.running)
  }

  private async loop(client: StateStoreClient, name: string): Promise<void> {
    let seq = 0
    while (!this.stopped) {
      const key = this.keys[Math.floor(this.random() * this.keys.length)]!
      const dice = this.random()
      seq += 1
      // Plain and NX writes carry a value of their own, so a read says which write it saw; NEX and VDEL use the client's name.
      const op: RegisterInput =
        dice < 0.35
          ? { f: 'get' }
          : dice < 0.6
            ? { f: 'set', value: `${name}.${seq}`, condition: 'always' }
            : dice < 0.7
              ? { f: 'set', value: `${name}.${seq}`, condition: 'NX' }
              : dice < 0.8
                ? { f: 'set', value: name, condition: 'NEX' }
                : dice < 0.9
                  ? { f: 'del' }
                  : { f: 'vdel', value: name }
      await this.history.record(name, { key, op }, () => invoke(client, key, op))
      // Paced, so that the run checks faults rather than measures a saturated event loop on a shared machine.
      await new Promise((r) => setTimeout(r, 10 + this.random() * 30))
    }
  }

  /** Violations, each with the history that shows it. */
  check(): { operations: number; violations: string[]; unchecked: number } {
    const violations: string[] = []
    let unchecked = 0
    for (const key of this.keys) {
      const ops = this.history.ops.filter((o) => o.input.key === key && o.outcome !== 'fail')
      const verdict = checkHistory(
        registerModel,
        ops.map((o) => ({
          input: o.input.op,
          output: o.outcome === 'ok' ? o.output : undefined,
          invokedAt: o.invokedAt,
          returnedAt: o.outcome === 'ok' ? o.returnedAt : Infinity,
        })),
      )
      if (verdict.linearizable === 'unknown') unchecked += 1
      else if (!verdict.linearizable)
        violations.push(
          `key ${key} is not linearizable; stuck at ${show(ops[verdict.stuck]!)}\n${ops.map(show).join('\n')}`,
        )
      violations.push(...checkVersions(key, ops))
    }
    return { operations: this.history.ops.filter((o) => o.outcome !== 'pending').length, violations, unchecked }
  }
}

async function invoke(client: StateStoreClient, key: string, op: RegisterInput): Promise<VersionedOutput> {
  const options = { timeoutMs: REQUEST_TIMEOUT_MS }
  switch (op.f) {
    case 'get': {
      const r = await client.get(key, options)
      return { value: r.value?.toString() ?? null, version: r.version?.toString() ?? null }
    }
    case 'set': {
      const r = await client.set(key, op.value, {
        ...options,
        persist: true,
        ...(op.condition === 'always' ? {} : { condition: op.condition }),
      })
      return { applied: r.applied, version: r.applied ? r.version.toString() : null }
    }
    case 'del': {
      const r = await client.del(key, options)
      return { deleted: r.deleted, version: null }
    }
    case 'vdel': {
      const r = await client.vdel(key, op.value, options)
      return { deleted: r.deleted, version: null }
    }
  }
}

/** Acknowledged writes: versions unique; a write acknowledged before another was invoked has the smaller version. */
function checkVersions(key: string, ops: Array<Recorded<KeyedInput, VersionedOutput>>): string[] {
  const writes = ops.filter((o) => o.outcome === 'ok' && o.input.op.f === 'set' && o.output?.version)
  const violations: string[] = []
  const seen = new Map<string, Recorded<KeyedInput, VersionedOutput>>()
  for (const w of writes) {
    const v = w.output!.version!
    if (seen.has(v)) violations.push(`key ${key}: version ${v} acknowledged twice:\n${show(seen.get(v)!)}\n${show(w)}`)
    seen.set(v, w)
  }
  const byInvoke = [...writes].sort((a, b) => a.invokedAt - b.invokedAt)
  for (const a of writes) {
    for (const b of byInvoke) {
      if (b.invokedAt <= a.returnedAt) continue
      if (Hlc.compare(Hlc.parse(a.output!.version!), Hlc.parse(b.output!.version!)) >= 0)
        violations.push(`key ${key}: a later write got a version not above an earlier one's:\n${show(a)}\n${show(b)}`)
    }
  }
  // A read of a value that an acknowledged plain or NX write made has that write's version.
  const versionOf = new Map(
    writes
      .filter((w) => w.input.op.f === 'set' && (w.input.op as { condition: string }).condition !== 'NEX')
      .map((w) => [(w.input.op as { value: string }).value, w.output!.version!]),
  )
  for (const r of ops) {
    if (r.outcome !== 'ok' || r.input.op.f !== 'get') continue
    const value = (r.output as { value: string | null }).value
    const expected = value === null ? undefined : versionOf.get(value)
    if (expected !== undefined && r.output!.version !== expected)
      violations.push(
        `key ${key}: a read of ${value} has version ${r.output!.version}, its write got ${expected}:\n${show(r)}`,
      )
  }
  return violations
}

export function show(o: Recorded<unknown, unknown>): string {
  const end =
    o.outcome === 'ok'
      ? `${o.returnedAt.toFixed(1)} ok ${JSON.stringify(o.output)}`
      : `${o.outcome}${o.error ? ` (${o.error})` : ''}`
  return `  ${o.invokedAt.toFixed(1)} ${o.process} ${JSON.stringify(o.input)} -> ${end}`
}

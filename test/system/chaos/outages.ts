/**
 * What the chaos run's faults made unreachable, and when, so that every failed operation can be
 * judged (docs/reliability.md, "Judging a failure"):
 * - allowed: its lifetime overlapped an outage of its service or of its own connection (a fault's
 *   duration, plus RECOVERY_MS to notice the fault ended and reconnect), so failing was honest;
 * - indeterminate: besides, a write whose outcome is unknown; the workload's own check resolves it
 *   by reading (linearizability, the counters, the context store's values);
 * - a violation otherwise: it timed out or lost its connection while the service answered others.
 * An answer of the service (a ServiceError: fencing, skew) is an outcome the workload's check
 * judges, not a failure to reach it.
 */
import type { FaultKind } from '../../support/faults'
import type { Recorded } from './history'

/** Time to notice a fault has ended and to be served again: keepalive (2 s × 1.5) and the reconnect backoff (up to 1 s) overlap it. */
export const RECOVERY_MS = 3000

/** A fault, or `unreachable`: the prober's reads of the service went unanswered (outlasting the fault that caused it, say). */
export type OutageKind = FaultKind | 'unreachable'

export interface Outage {
  kind: OutageKind
  /** The process whose connection the fault cut; null: everyone's (the emulator, the broker, the emulator's own connection). */
  who: string | null
  start: number
  end: number
}

/** One failure as the classifier sees it. */
export interface Failure {
  process: string
  invokedAt: number
  endedAt: number
  /** Its outcome is unknown: it may have been executed. */
  unknown: boolean
  errorCode?: string
  what: string
}

export interface Judged {
  allowed: number
  indeterminate: number
  /** Allowed failures by the kind of fault that explains them. */
  byKind: Map<OutageKind, number>
  violations: string[]
}

export class Outages {
  readonly list: Outage[] = []

  record(outage: Outage): void {
    this.list.push(outage)
  }

  /** The outage that explains a failure of `who` between `from` and `to`, if any. */
  explaining(who: string, from: number, to: number): Outage | undefined {
    return this.list.find((o) => (o.who === null || o.who === who) && o.start <= to && o.end + RECOVERY_MS >= from)
  }

  /** The outages near a time, for a violation's history. */
  around(at: number, ms = 15_000): string {
    const near = this.list.filter((o) => o.end + ms >= at && o.start - ms <= at)
    return near.length === 0
      ? 'none'
      : near.map((o) => `${o.kind}${o.who ? `(${o.who})` : ''} ${Math.round(o.start)}-${Math.round(o.end)}`).join(', ')
  }
}

/** The failure of a recorded operation (null for one that succeeded, or was answered by the service). */
export function failureOf<I, O>(op: Recorded<I, O>, what: string): Failure | null {
  if (op.outcome === 'ok' || op.outcome === 'pending') return null
  if (op.errorCode?.startsWith('service:')) return null
  return {
    process: op.process,
    invokedAt: op.invokedAt,
    endedAt: op.endedAt ?? op.invokedAt,
    unknown: op.outcome === 'unknown',
    ...(op.errorCode !== undefined ? { errorCode: op.errorCode } : {}),
    what: `${what}: ${op.error ?? op.outcome}`,
  }
}

/** Judges every failure against the outages; `history(f)` tells what the process did around it. */
export function judge(failures: readonly Failure[], outages: Outages, history: (f: Failure) => string): Judged {
  const judged: Judged = { allowed: 0, indeterminate: 0, byKind: new Map(), violations: [] }
  for (const f of failures) {
    const outage = outages.explaining(f.process, f.invokedAt, f.endedAt)
    if (outage) {
      judged.allowed += 1
      judged.byKind.set(outage.kind, (judged.byKind.get(outage.kind) ?? 0) + 1)
      if (f.unknown) judged.indeterminate += 1
      continue
    }
    judged.violations.push(
      `${f.process} failed at ${Math.round(f.invokedAt)}-${Math.round(f.endedAt)} while no fault touched its service or connection: ${f.what}\n  faults around it: ${outages.around(f.endedAt)}\n${history(f)}`,
    )
  }
  return judged
}

export function mergeJudged(into: Judged, more: Judged): void {
  into.allowed += more.allowed
  into.indeterminate += more.indeterminate
  for (const [k, n] of more.byKind) into.byKind.set(k, (into.byKind.get(k) ?? 0) + n)
  into.violations.push(...more.violations)
}

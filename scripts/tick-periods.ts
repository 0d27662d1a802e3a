/**
 * The rehearsal's tick, period by period: each replica's repeating Inject into the leader gate, every
 * tick recorded with the replica's clock and whether the gate passed it. Pure: no timer, no I/O.
 *
 * Periods are windows of one tick period from the first tick that passed, t0 (period k holds the
 * ticks fired in [t0 + k·P, t0 + (k+1)·P): a timer fires late, never early); for a schedule on the
 * clock (cron) from the clock's period boundary before t0, so a tick fired late, but within its
 * period, counts for its own period. A period with no pass is missed, for one of three reasons:
 *  - `handOver`: it lies between the kill of the leader and the first pass after it, the ticks a
 *    term implies (docs/locks.md, the leader gate);
 *  - `gate`: the leader's Inject (the leader: the replica of the last pass before it) fired in it
 *    and its gate did not pass it, outside a hand-over;
 *  - `timers`: the leader's Inject did not fire in it; the followers' ticks, if any, leave their gates
 *    by output 2 as they must. Node's setInterval, which an interval Inject uses, schedules the next
 *    run one period after the late one ran, so a blocked event loop loses periods; a cron schedule
 *    does not drift, but loses a period its event loop is blocked through. No gate can pass a tick
 *    that never fired.
 */
export interface Tick {
  by: string
  /** When the tick fired: the replica's Date.now() at its Inject. */
  at: number
  passed: boolean
}

export interface TickPeriods {
  periods: number
  /** Periods with a pass. */
  ticked: number
  missed: { handOver: number; gate: number; timers: number }
  /** Passes by two replicas within half a period of each other. */
  doubled: number
}

export interface TickPeriodOptions {
  /** When the leader was killed: the periods from then to the next pass are the hand-over's. */
  killedAt?: number
  /** The Inject ticks on the clock (a cron schedule, tickSchedule's for whole seconds). */
  onTheClock?: boolean
}

export function tickPeriods(ticks: readonly Tick[], periodMs: number, options: TickPeriodOptions = {}): TickPeriods {
  const { killedAt, onTheClock = false } = options
  const passes = ticks.filter((t) => t.passed).sort((a, b) => a.at - b.at)
  const missed = { handOver: 0, gate: 0, timers: 0 }
  if (passes.length === 0) return { periods: 0, ticked: 0, missed, doubled: 0 }
  const t0 = onTheClock ? Math.floor(passes[0]!.at / periodMs) * periodMs : passes[0]!.at
  const periodOf = (at: number) => Math.floor((at - t0) / periodMs)
  const last = periodOf(passes.at(-1)!.at)
  const passed = new Set(passes.map((t) => periodOf(t.at)))
  const fired = new Set(ticks.map((t) => `${t.by}\u0000${periodOf(t.at)}`))
  const takeover = killedAt === undefined ? undefined : passes.find((t) => t.at > killedAt)?.at
  let leader = passes[0]!.by
  let next = 0
  for (let k = 0; k <= last; k++) {
    while (next < passes.length && periodOf(passes[next]!.at) <= k) leader = passes[next++]!.by
    if (passed.has(k)) continue
    const start = t0 + k * periodMs
    if (killedAt !== undefined && start + periodMs > killedAt && (takeover === undefined || start <= takeover))
      missed.handOver++
    else if (fired.has(`${leader}\u0000${k}`)) missed.gate++
    else missed.timers++
  }
  const doubled = passes.slice(1).filter((t, i) => t.by !== passes[i]!.by && t.at - passes[i]!.at < periodMs / 2).length
  return { periods: last + 1, ticked: passed.size, missed, doubled }
}

/**
 * The tick's Inject schedule. A period of whole seconds that divides a minute is a cron schedule
 * (every N seconds, six fields), on the clock: every replica ticks at the same instants, and a late tick does not
 * delay the next. An interval (any other period) is setInterval's, which schedules each run a
 * period after the late one ran and so loses periods while the event loop is blocked.
 */
export function tickSchedule(tickMs: number): { repeat: string; crontab: string; once: boolean } {
  const s = tickMs / 1000
  if (Number.isInteger(s) && s >= 1 && 60 % s === 0) return { repeat: '', crontab: `*/${s} * * * * *`, once: false }
  return { repeat: String(s), crontab: '', once: true }
}

/**
 * The tests' one fault injector. A plan of faults comes from a seed and is printed, so a failing
 * run can be replayed; the injector applies each fault for its duration and then heals it:
 * - through a TcpRelay (test/support/relay.ts) in front of each client and of the emulator:
 *   `drop` (cut every connection), `stall` (stop forwarding with the sockets open: only
 *   keepalive finds it), `delay`, `throttle`, `refuse` (turn new connections away for a while);
 * - on processes: `pause-broker` (SIGSTOP/SIGCONT mosquitto), `kill-broker` (kill -9, then a
 *   restart on the same port), `kill-emulator` (kill -9 the emulator CLI, then a restart with its
 *   `--persist` file);
 * - `takeover`: a second MQTT client connects with a client's id, so the broker disconnects the first.
 * Clock skew is not a fault in time but a client's setting: see `skewedClock`.
 */
import { connect } from 'mqtt'
import { HybridLogicalClock } from '../../src/hlc'
import type { Mosquitto } from './mosquitto'
import type { TcpRelay } from './relay'

export const FAULT_KINDS = [
  'drop',
  'stall',
  'delay',
  'throttle',
  'refuse',
  'pause-broker',
  'kill-broker',
  'kill-emulator',
  'takeover',
] as const
export type FaultKind = (typeof FAULT_KINDS)[number]

export interface Fault {
  /** ms after the schedule starts. */
  at: number
  kind: FaultKind
  /** Which relay (or client id, for a takeover). */
  target: number
  durationMs: number
}

/**
 * mulberry32: a seeded generator of numbers in [0, 1). Written here (5 lines) because the
 * schedule must be reproducible from a printed seed, which Math.random is not.
 */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/**
 * Faults one after another over `spanMs` (one at a time, 0.3-1.5 s apart), each lasting 0.3-2.5 s;
 * `targets` is how many relays (or client ids) a fault can hit.
 */
export function planFaults(
  random: () => number,
  spanMs: number,
  kinds: readonly FaultKind[],
  targets: number,
): Fault[] {
  const plan: Fault[] = []
  let at = 300 + random() * 1200
  while (kinds.length > 0) {
    const kind = kinds[Math.floor(random() * kinds.length)]!
    const durationMs = Math.round(300 + random() * 2200)
    if (at + durationMs > spanMs) break
    plan.push({ at: Math.round(at), kind, target: Math.floor(random() * targets), durationMs })
    at += durationMs + 300 + random() * 1200
  }
  return plan
}

export function describeFault(f: Fault): string {
  return `${(f.at / 1000).toFixed(1)}s ${f.kind}#${f.target} ${f.durationMs}ms`
}

/** A client clock `aheadMs` ahead of the wall clock: 30 s is within the service's allowance, 90 s is refused with TimestampSkew. */
export function skewedClock(aheadMs: number): HybridLogicalClock {
  return new HybridLogicalClock({ now: () => Date.now() + aheadMs })
}

export interface FaultTargets {
  relays: TcpRelay[]
  broker: Mosquitto
  /** The emulator CLI: kill -9, and start again with the same arguments (its --persist file among them). */
  emulator: { kill(): Promise<void>; restart(): Promise<void> }
  /** Client ids a takeover can steal, and the broker URL to steal them on. */
  clientIds: string[]
  brokerUrl: string
}

export class FaultInjector {
  readonly applied = new Map<FaultKind, number>()

  constructor(private readonly targets: FaultTargets) {}

  /** Applies the fault, waits its duration, heals it. */
  async apply(f: Fault, sleep: (ms: number) => Promise<void>): Promise<void> {
    this.applied.set(f.kind, (this.applied.get(f.kind) ?? 0) + 1)
    const { relays, broker, emulator } = this.targets
    const relay = relays[f.target % relays.length]!
    switch (f.kind) {
      case 'drop':
        relay.dropAll()
        await sleep(f.durationMs)
        return
      case 'stall':
        relay.freeze()
        await sleep(f.durationMs)
        relay.thaw()
        return
      case 'delay':
        relay.delayMs = 50 + (f.durationMs % 250)
        await sleep(f.durationMs)
        relay.delayMs = 0
        return
      case 'throttle':
        relay.bytesPerSec = 2000 + (f.durationMs % 8) * 1000
        await sleep(f.durationMs)
        relay.bytesPerSec = Infinity
        return
      case 'refuse':
        relay.cut()
        await sleep(f.durationMs)
        relay.restore()
        return
      case 'pause-broker':
        broker.signal('SIGSTOP')
        await sleep(f.durationMs)
        broker.signal('SIGCONT')
        return
      case 'kill-broker':
        await broker.kill()
        await sleep(f.durationMs)
        await broker.start()
        return
      case 'kill-emulator':
        await emulator.kill()
        await sleep(f.durationMs)
        await emulator.restart()
        return
      case 'takeover': {
        const id = this.targets.clientIds[f.target % this.targets.clientIds.length]!
        // No reconnect: once the owner comes back and takes its id again, the intruder stays away.
        const intruder = connect(this.targets.brokerUrl, {
          clientId: id,
          protocolVersion: 5,
          reconnectPeriod: 0,
          connectTimeout: 2000,
        })
        intruder.on('error', () => {})
        await sleep(f.durationMs)
        await intruder.endAsync(true).catch(() => {})
        return
      }
    }
  }

  /** Undoes whatever a fault that was cut short left behind. */
  healAll(): void {
    for (const relay of this.targets.relays) {
      relay.thaw()
      relay.restore()
      relay.delayMs = 0
      relay.bytesPerSec = Infinity
    }
    this.targets.broker.signal('SIGCONT')
  }
}

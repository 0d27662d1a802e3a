import type { NodeMessage } from 'node-red'
import type { StateStoreClient } from '../../src/client'
import { CancelledError, TimeoutError } from '../../src/diagnostics/errors'
import { Lock, Semaphore } from '../../src/locks'
import { InputError } from '../lib/errors'
import { heldSince, holdValue, register, type HoldInfo } from './holds'
import { CLOSED, FREE, holdsOf, lineStep, takerOf, waitingOf } from './lock-line'
import type { LineEffect as Effect, LineInput as Input, LinePhase, LineRules } from './lock-line'
import { MsgHold, type Held, type Loss } from './msg-hold'
import { givingUp } from './give-up'
import { holderIfReachable, text, type Action, type LockMode, type ModeContext, type Out } from './mode'

const OWN = 'node-red-contrib-aio-statestore/ss-lock:ss-lock.'

type Msg = NodeMessage & Record<string, unknown>

/** How long a take waits before it asks who holds the lock. */
const SIGHTING_AFTER_MS = 500

/** A msg waiting for its turn at one lock name, until its own deadline. */
interface Waiter {
  readonly id: number
  readonly msg: Msg
  readonly out: Out
  /** Wall-clock ms it began to wait. */
  readonly start: number
  readonly deadline: number
  /** Whether the store was connected at any time while it waited: without, its wait says nothing of the lock. */
  sawConnection: boolean
  timer?: NodeJS.Timeout
  settle(err?: unknown): void
}

/** One lock name at this node: its machine's phase (lock-line.ts) and the msgs and holds its ids name. */
interface Line {
  readonly name: string
  phase: LinePhase
  /** The msgs waiting or taking the name, by id. */
  readonly waiters: Map<number, Waiter>
  readonly holds: Map<number, MsgHold>
  /** With a limit above 1: the semaphore of this name, shared by the line's takes. */
  semaphore?: Semaphore
}

/**
 * Lock mode: a mutex for msgs. Each msg that acquires holds the lock with a value of its own
 * (`<holder>:<session>`), so msgs of one node, of nodes with one holder name and of other runtimes
 * exclude each other; the msgs that arrive meanwhile wait in order, each up to *Wait up to*, at most
 * *queue* of them.
 */
export function lockMode(ctx: ModeContext): LockMode {
  const { RED, node, store, status, holder, leaseMs, renewPeriodMs, timeoutMs, holdMs, queueSize } = ctx
  const rules: LineRules = { limit: ctx.limit ?? 1, queueSize }
  const { limit } = rules
  const lines = new Map<string, Line>()
  const closing = new AbortController()
  // Kept as each line changes, so an event costs the same however many names are in use.
  const holdingLines = new Set<Line>()
  const waitingPerLine = new Map<Line, number>()
  let waitingTotal = 0
  let lastId = 0

  function line(name: string): Line {
    let l = lines.get(name)
    if (!l) {
      l = { name, phase: closing.signal.aborted ? CLOSED : FREE, waiters: new Map(), holds: new Map() }
      lines.set(name, l)
    }
    return l
  }

  /** Not acquired: output 2 with whose hold blocks it and since how long (or NotConnected). */
  const refuse = givingUp(ctx)

  /** The store's connection came: every msg waiting now has waited with it. */
  function connected(): void {
    for (const l of lines.values()) for (const w of l.waiters.values()) w.sawConnection = true
  }

  /** Moves a line's machine one step; what it asks for is for `apply`. */
  function step(l: Line, input: Input): readonly Effect[] {
    const { phase, effects } = lineStep(l.phase, input, rules)
    l.phase = phase
    if (phase.kind !== 'closed' && holdsOf(phase).length > 0) holdingLines.add(l)
    else holdingLines.delete(l)
    return effects
  }

  function apply(c: StateStoreClient, l: Line, effects: readonly Effect[]): void {
    for (const e of effects) {
      if (e.kind === 'report') report(l)
      else if (e.kind === 'show') {
        recount(l)
        showHolds()
      } else if (e.kind === 'forget') {
        // Nothing holds, takes or waits for this name: forget it (msg.key may name many).
        if (lines.get(l.name) === l) lines.delete(l.name)
      } else if (e.kind === 'take') {
        const w = l.waiters.get(e.id)!
        clearTimeout(w.timer)
        void take(c, l, w)
      } else if (e.kind === 'giveUp') {
        // A msg whose wait runs out in the queue leaves by output 2, telling who holds the lock.
        const w = l.waiters.get(e.id)!
        l.waiters.delete(e.id)
        refuse(c, l.name, w).then(
          () => w.settle(),
          (err: unknown) => w.settle(err),
        )
      }
    }
  }

  /** The msgs waiting for a name (the one taking it included), for the sidebar's timeline and the status. */
  function report(l: Line): void {
    if (closing.signal.aborted) return
    recount(l)
    const waiting = waitingOf(l.phase).length + (takerOf(l.phase) ? 1 : 0)
    store?.activity.waitingChanged(node.id, l.name, 'lock', waiting)
    if (waitingTotal !== shownWaiting) showHolds()
  }

  /** The msgs of this node waiting for a lock: queued, or taking one for a while (a quick take is not shown). */
  function recount(l: Line): void {
    const n = waitingOf(l.phase).length + (takerOf(l.phase)?.slow ? 1 : 0)
    waitingTotal += n - (waitingPerLine.get(l) ?? 0)
    if (n === 0) waitingPerLine.delete(l)
    else waitingPerLine.set(l, n)
  }

  /** The waiting count the status shows. */
  let shownWaiting = 0

  /**
   * "acquired · 3 waiting" while a msg holds and others wait, "3 waiting" while they wait for a hold
   * elsewhere; with none waiting, "acquired" or `idle` (the outcome that left nothing held).
   */
  function showHolds(idle?: string): void {
    const waiting = waitingTotal
    shownWaiting = waiting
    if (holding()) {
      if (waiting > 0) status.counted('status.acquiredWaiting', waiting)
      else status.outcome('status.acquired')
    } else if (waiting > 0) status.counted('status.waiting', waiting)
    else if (idle) status.outcome(idle)
  }

  async function take(c: StateStoreClient, l: Line, w: Waiter): Promise<void> {
    const value = holdValue(holder)
    // The hold follows its key: released in another runtime, deleted or expired, it ends there and
    // then, and no renewal writes the key back.
    // Up to *Holders at most* msgs at once: each takes one slot of the name's semaphore.
    if (limit > 1 && !l.semaphore)
      l.semaphore = new Semaphore(c, l.name, { limit, leaseMs, ...(renewPeriodMs ? { renewPeriodMs } : {}) })
    const lock = limit > 1 ? null : new Lock(c, l.name, { holder: value, leaseMs, renewPeriodMs, followKey: true })
    lock?.lease.on('error', (err) => node.warn(err.message))
    // A take that waits a while asks once who holds the lock: how long a hold of another runtime has
    // lasted at least, should a msg give up behind it (an uncontended take costs no request more).
    const ask = setTimeout(() => {
      apply(c, l, step(l, { kind: 'slow', id: w.id }))
      holderIfReachable(c, l.name).then(
        (h) => h && heldSince(l.name, h, Date.now()),
        () => {},
      )
    }, SIGHTING_AFTER_MS)
    if (lock) store?.activity.trackLease(node.id, l.name, 'lock', value, leaseMs, lock.lease)
    let failure: unknown = undefined
    try {
      const wait = { timeoutMs: Math.max(1, w.deadline - Date.now()), signal: closing.signal }
      let held: Held
      let token: string
      let slot: number | undefined
      if (lock) {
        token = (await lock.acquire(wait)).toString()
        held = lock
      } else {
        const permit = await l.semaphore!.acquire({ ...wait, holder: value })
        permit.lease.on('error', (err) => node.warn(err.message))
        token = permit.fencingToken.toString()
        held = permit
        slot = permit.slot
      }
      // Acquired just as the node closed: given back at once, so no renewal outlives the node.
      if (closing.signal.aborted) {
        await held.release({ timeoutMs: 800 }).catch(() => {})
        return
      }
      // A slot's hold names the slot's key: a release from any node finds it by the key and value it carries.
      const info: HoldInfo = {
        name: slot === undefined ? l.name : l.semaphore!.slotKey(slot).toString('utf8'),
        holder,
        value,
        fencingToken: token,
      }
      const hold = new MsgHold(info, held, (loss) => ended(c, l, w, loss))
      held.lease.on(
        'lost',
        ({ message, deleted }) =>
          hold.renewing || hold.drop({ reason: deleted ? 'released' : 'lost', detail: message }),
      )
      l.holds.set(w.id, hold)
      const effects = step(l, { kind: 'acquired', id: w.id })
      register(hold)
      if (holdMs > 0) hold.limit(holdMs, 'holdAtMost')
      // Without renewal the lease ends on its own after its time: so does the hold.
      if (renewPeriodMs === undefined && (holdMs === 0 || holdMs > leaseMs)) hold.limit(leaseMs, 'expired')
      w.msg.acquired = true
      w.msg.fencingToken = token
      w.msg.holder = holder
      w.msg.lock = { ...info }
      if (slot !== undefined) w.msg.slot = slot
      apply(c, l, effects)
      w.out(true, w.msg)
    } catch (err) {
      if (err instanceof TimeoutError) await refuse(c, l.name, w).catch((e: unknown) => (failure = e))
      else if (!(err instanceof CancelledError && closing.signal.aborted)) failure = err
    } finally {
      clearTimeout(ask)
      l.waiters.delete(w.id)
      w.settle(failure)
      apply(c, l, step(l, { kind: 'settled', id: w.id }))
    }
  }

  /** A hold ended: a loss while its msg is in the flow goes to output 2; the next msg's turn comes. */
  function ended(c: StateStoreClient, l: Line, w: Waiter, loss: Loss | null): void {
    l.holds.delete(w.id)
    const effects = step(l, { kind: 'released', id: w.id })
    if (loss && !closing.signal.aborted) {
      if (loss.reason === 'holdAtMost')
        node.warn(RED._(`${OWN}warn.holdAtMost`, { node: node.name || node.id, name: l.name, ms: holdMs }))
      status.attention(loss.reason === 'released' ? `${OWN}status.releasedElsewhere` : 'status.lost')
      const m = RED.util.cloneMessage(w.msg)
      Object.assign(m, {
        key: l.name,
        acquired: false,
        lost: true,
        reason: loss.reason,
        ...(loss.detail ? { detail: loss.detail } : {}),
      })
      node.send([null, m])
    } else if (!closing.signal.aborted) showHolds('status.released')
    apply(c, l, effects)
  }

  async function acquire(c: StateStoreClient, name: string, msg: Msg, out: Out): Promise<void> {
    const l = line(name)
    let settle: (err?: unknown) => void = () => {}
    const settled = new Promise<void>((resolve, reject) => {
      // A caught value passed on as it came (narrowed from unknown by the undefined check).
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
      settle = (err) => (err === undefined ? resolve() : reject(err))
    })
    const start = Date.now()
    const id = ++lastId
    const w: Waiter = { id, msg, out, start, deadline: start + timeoutMs, sawConnection: status.connected, settle }
    l.waiters.set(id, w)
    const effects = step(l, { kind: 'arrive', id })
    if (effects.some((e) => e.kind === 'full')) {
      l.waiters.delete(id)
      throw new InputError('LockQueueFull', RED._(`${OWN}errors.queueFull`, { name, size: queueSize }))
    }
    w.timer = setTimeout(() => apply(c, l, step(l, { kind: 'timeout', id })), timeoutMs)
    apply(c, l, effects)
    return settled
  }

  /** Whether a msg of this node holds any lock now: the status says "acquired" only while one does. */
  const holding = (): boolean => holdingLines.size > 0

  /** The hold a release or renew without msg.lock means: this node's current hold of the name. */
  const own = (name: string): MsgHold | null => {
    const l = lines.get(name)
    const first = l ? holdsOf(l.phase)[0] : undefined
    return first === undefined ? null : (l!.holds.get(first) ?? null)
  }

  return {
    async act(c: StateStoreClient, action: Action, name: string, msg: NodeMessage, out: Out): Promise<void> {
      const m = msg as Msg
      if (action === 'acquire') return acquire(c, name, m, out)
      if (action === 'holder' && limit > 1) {
        // A semaphore: who holds each slot (null: free).
        const slots = await (lines.get(name)?.semaphore ?? new Semaphore(c, name, { limit, leaseMs })).holders()
        m.holders = slots.map((s) => text(s.holder))
        m.payload = m.holders
        status.outcome(slots.some((s) => s.holder) ? 'status.held' : 'status.free')
        return out(true, msg)
      }
      if (action === 'holder') {
        const { value, version } = await c.get(name)
        m.holder = text(value)
        store?.activity.holderSeen(node.id, name, m.holder as string | null)
        m.payload = m.holder
        if (version) m.version = version.toString()
        status.outcome(value ? 'status.held' : 'status.free')
        return out(true, msg)
      }
      const hold = own(name)
      if (action === 'release') {
        m.released = hold ? await hold.release() : false
        if (m.released) status.outcome('status.released')
        else status.attention(`${OWN}status.notReleased`)
        return out(true, msg)
      }
      const token = hold ? await hold.renew() : null
      m.acquired = token !== null
      if (token !== null) {
        m.fencingToken = token
        m.holder = holder
        m.lock = { ...hold!.info }
        status.outcome('status.renewed')
      } else status.attention('status.lost')
      out(token !== null, msg)
    },

    connected,

    async close(): Promise<void> {
      closing.abort()
      const work: Array<Promise<unknown>> = []
      for (const l of lines.values()) {
        for (const e of step(l, { kind: 'close' })) {
          if (e.kind !== 'end') continue
          for (const id of e.waiting) {
            const w = l.waiters.get(id)!
            l.waiters.delete(id)
            clearTimeout(w.timer)
            w.settle()
          }
          for (const id of e.holds)
            work.push(
              l.holds
                .get(id)!
                .release({ timeoutMs: 800 })
                .catch(() => {}),
            )
        }
      }
      lines.clear()
      holdingLines.clear()
      waitingPerLine.clear()
      waitingTotal = 0
      await Promise.all(work)
    },
  }
}

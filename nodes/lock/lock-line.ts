/**
 * One lock name's line in lock mode, as a machine of its own (lock-mode.ts drives it; no client, no
 * timer, no msg): the msgs holding the name, the one taking it and the msgs waiting, by id, in order.
 *
 *   free ──arrive──► taking ──acquired──► held ──released, none waiting──► free (forget)
 *     ▲                │                    │ released, a waiter next ──► taking (take)
 *     │                │                    │ arrive, a place free ──► taking (take)
 *     └── settled, ────┘                    │ settled (the take that acquired) ──► held (report)
 *         none waiting (forget)             │
 *   taking ──settled, a waiter next──► taking (that waiter's take)
 *   taking ──slow (its take waited a while)──► taking, counted as waiting
 *   taking, held ──arrive, no place free──► the same, one more waiting; `full` past the queue's size
 *   taking, held ──timeout (a wait ran out in the queue)──► the same, one fewer (giveUp)
 *   any ──close──► closed (end: the waiters settled, the holds released)
 *   closed: no take and no count; a late msg waits for its timeout and gives up
 *
 * A line's turn (`next`) comes after every change that can free a place: a take starts when fewer
 * than `limit` msgs hold the name and none is taking it. An event about an id the line does not hold
 * in that role (a late timer, a take already settled, a hold already ended) changes nothing.
 */
export type LinePhase =
  | { readonly kind: 'free' }
  | { readonly kind: 'taking'; readonly taker: Taker; readonly holds: readonly number[]; readonly waiting: Ids }
  | { readonly kind: 'held'; readonly holds: readonly number[]; readonly waiting: Ids }
  | { readonly kind: 'closed'; readonly holds: readonly number[]; readonly waiting: Ids }

type Ids = readonly number[]

/** The msg taking the name; `slow` once its take has waited a while (it counts as waiting in the status). */
export interface Taker {
  readonly id: number
  readonly slow: boolean
}

export type LineInput =
  /** A msg asks for the name. */
  | { readonly kind: 'arrive'; readonly id: number }
  /** A waiter's *Wait up to* ran out while it was still in the queue. */
  | { readonly kind: 'timeout'; readonly id: number }
  /** The take has waited a while behind a hold elsewhere. */
  | { readonly kind: 'slow'; readonly id: number }
  /** The take got the name: the msg holds it. */
  | { readonly kind: 'acquired'; readonly id: number }
  /** The take is over, acquired or not: the next msg's turn. */
  | { readonly kind: 'settled'; readonly id: number }
  /** A hold ended (released, lost, expired, held too long). */
  | { readonly kind: 'released'; readonly id: number }
  /** The node closes. */
  | { readonly kind: 'close' }

export type LineEffect =
  /** The line's waiting count may have changed: tell the sidebar and the status. */
  | { readonly kind: 'report' }
  /** A msg now holds: the status says so (the sidebar is told on the next report). */
  | { readonly kind: 'show' }
  /** Start this waiter's take (its queue timer is over). */
  | { readonly kind: 'take'; readonly id: number }
  /** Refuse the arriving msg: the queue behind the hold is full. */
  | { readonly kind: 'full'; readonly id: number }
  /** The waiter left the queue: it gives up on output 2. */
  | { readonly kind: 'giveUp'; readonly id: number }
  /** Nothing holds, takes or waits for the name: forget the line. */
  | { readonly kind: 'forget' }
  /** The node closed: settle these waiters and release these holds. */
  | { readonly kind: 'end'; readonly waiting: Ids; readonly holds: Ids }

export interface LineStep {
  readonly phase: LinePhase
  readonly effects: readonly LineEffect[]
}

export interface LineRules {
  /** How many msgs may hold the name at once (a semaphore above 1). */
  readonly limit: number
  /** How many msgs may wait behind the holds and the take. */
  readonly queueSize: number
}

export const FREE: LinePhase = { kind: 'free' }
export const CLOSED: LinePhase = { kind: 'closed', holds: [], waiting: [] }

const NONE: Ids = []
/** The ids holding the name, in the order they acquired it. */
export const holdsOf = (p: LinePhase): Ids => (p.kind === 'free' ? NONE : p.holds)
/** The ids waiting behind the holds and the take, in order. */
export const waitingOf = (p: LinePhase): Ids => (p.kind === 'free' ? NONE : p.waiting)
export const takerOf = (p: LinePhase): Taker | null => (p.kind === 'taking' ? p.taker : null)
const without = (ids: Ids, id: number): Ids => ids.filter((i) => i !== id)

/** The phase of an open line with these holds, take and waiters. */
function open(holds: Ids, taker: Taker | null, waiting: Ids): LinePhase {
  if (taker) return { kind: 'taking', taker, holds, waiting }
  if (holds.length > 0 || waiting.length > 0) return { kind: 'held', holds, waiting }
  return FREE
}

/** The line's turn: the first waiter takes the name if a place is free; an empty line is forgotten. */
function next(phase: LinePhase, rules: LineRules): LineStep {
  const report: LineEffect = { kind: 'report' }
  if (phase.kind === 'closed') return { phase, effects: [] }
  const holds = holdsOf(phase)
  if (phase.kind === 'taking' || holds.length >= rules.limit) return { phase, effects: [report] }
  const [first, ...rest] = waitingOf(phase)
  if (first === undefined) {
    const effects: LineEffect[] = holds.length === 0 ? [{ kind: 'forget' }, report] : [report]
    return { phase: open(holds, null, NONE), effects }
  }
  return { phase: open(holds, { id: first, slow: false }, rest), effects: [report, { kind: 'take', id: first }] }
}

/** The next phase of a line and what its driver does on the way. */
export function lineStep(phase: LinePhase, input: LineInput, rules: LineRules): LineStep {
  const stay: LineStep = { phase, effects: [] }
  const holds = holdsOf(phase)
  const waiting = waitingOf(phase)
  const taker = takerOf(phase)
  switch (input.kind) {
    case 'arrive': {
      // The queue is of msgs behind the holds (or the take): a free place takes the msg at once.
      if ((holds.length >= rules.limit || taker) && waiting.length >= rules.queueSize)
        return { phase, effects: [{ kind: 'full', id: input.id }] }
      if (phase.kind === 'closed') return { phase: { ...phase, waiting: [...waiting, input.id] }, effects: [] }
      return next(open(holds, taker, [...waiting, input.id]), rules)
    }
    case 'timeout': {
      if (!waiting.includes(input.id)) return stay
      const giveUp: LineEffect = { kind: 'giveUp', id: input.id }
      if (phase.kind === 'closed')
        return { phase: { ...phase, waiting: without(waiting, input.id) }, effects: [giveUp] }
      return { phase: open(holds, taker, without(waiting, input.id)), effects: [{ kind: 'report' }, giveUp] }
    }
    case 'slow':
      if (taker?.id !== input.id || taker.slow) return stay
      return { phase: open(holds, { id: input.id, slow: true }, waiting), effects: [{ kind: 'report' }] }
    case 'acquired':
      if (taker?.id !== input.id) return stay
      return { phase: open([...holds, input.id], null, waiting), effects: [{ kind: 'show' }] }
    case 'settled':
      // Held (the take acquired): its turn comes now; a take in flight is another msg's.
      if (phase.kind === 'closed' || phase.kind === 'free' || (taker && taker.id !== input.id)) return stay
      return next(open(holds, null, waiting), rules)
    case 'released':
      if (!holds.includes(input.id)) return stay
      if (phase.kind === 'closed') return { phase: { ...phase, holds: without(holds, input.id) }, effects: [] }
      return next(open(without(holds, input.id), taker, waiting), rules)
    case 'close':
      if (phase.kind === 'closed') return stay
      return { phase: { kind: 'closed', holds, waiting: NONE }, effects: [{ kind: 'end', waiting, holds }] }
  }
}

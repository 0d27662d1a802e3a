/**
 * What one runtime knows of a semaphore's slots, and its waiters' order, as a machine of its own
 * (Semaphore drives it; no client, no timer):
 *
 *   slot: unknown ──tried: acquired──► mine ──freed (our release, a DELETE heard)──► free
 *           │  ▲                         │ lost ──────────────────────────────────► unknown
 *           │  └── taken (someone else's SET heard) ◄── free
 *           └──tried: refused──► taken ──freed (a DELETE heard: released or run out)──► free
 *
 *   waiters: wait ──► queued in order; only the head tries; leave (acquired, gave up) ──► the next is head
 *
 * The head tries the slots known free first, then those not known, then those seen taken (a SET
 * heard may be old news after a reconnect), never its own runtime's: a free slot costs one SET.
 */
export type SlotSeen = 'unknown' | 'free' | 'taken' | 'mine'

export interface SemaphoreState {
  readonly slots: readonly SlotSeen[]
  /** Waiters of this runtime, in arrival order; the first is the one that tries. */
  readonly queue: readonly number[]
}

export type SemaphoreInput =
  | { readonly kind: 'wait'; readonly waiter: number }
  | { readonly kind: 'leave'; readonly waiter: number }
  | { readonly kind: 'tried'; readonly slot: number; readonly acquired: boolean }
  /** The slot's key was deleted (a release, ours or not, or an expiry). */
  | { readonly kind: 'freed'; readonly slot: number }
  /** Someone else's SET of the slot's key was heard. */
  | { readonly kind: 'taken'; readonly slot: number }
  /** Our hold of the slot ended without a release of ours that was answered (lost, closed): its state is not known. */
  | { readonly kind: 'lost'; readonly slot: number }

export function initialSemaphore(limit: number): SemaphoreState {
  return { slots: Array.from({ length: limit }, () => 'unknown' as const), queue: [] }
}

export function semaphoreStep(state: SemaphoreState, input: SemaphoreInput): SemaphoreState {
  const set = (slot: number, seen: SlotSeen): SemaphoreState => {
    if (slot < 0 || slot >= state.slots.length) return state
    const slots = state.slots.slice()
    slots[slot] = seen
    return { ...state, slots }
  }
  switch (input.kind) {
    case 'wait':
      return state.queue.includes(input.waiter) ? state : { ...state, queue: [...state.queue, input.waiter] }
    case 'leave':
      return { ...state, queue: state.queue.filter((w) => w !== input.waiter) }
    case 'tried':
      return set(input.slot, input.acquired ? 'mine' : 'taken')
    case 'freed':
      return set(input.slot, 'free')
    case 'taken':
      // Our own slot's renewals are SETs too: heard for a slot that is ours, they change nothing.
      return state.slots[input.slot] === 'mine' ? state : set(input.slot, 'taken')
    case 'lost':
      return set(input.slot, 'unknown')
  }
}

/** The waiter whose turn it is to try, or null when none waits. */
export function head(state: SemaphoreState): number | null {
  return state.queue[0] ?? null
}

/** The slots to try, in order: known free, not known, seen taken; never one this runtime holds. */
export function slotsToTry(state: SemaphoreState): number[] {
  const rank: Record<SlotSeen, number> = { free: 0, unknown: 1, taken: 2, mine: 3 }
  return state.slots
    .map((seen, slot) => ({ seen, slot }))
    .filter((s) => s.seen !== 'mine')
    .sort((a, b) => rank[a.seen] - rank[b.seen] || a.slot - b.slot)
    .map((s) => s.slot)
}

/** How many slots this runtime holds. */
export function held(state: SemaphoreState): number {
  return state.slots.filter((s) => s === 'mine').length
}

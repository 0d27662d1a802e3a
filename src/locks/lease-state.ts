import { Hlc } from '../hlc'

/**
 * A lease against the service, as a machine of its own (Lease drives it; no client, no timer):
 *
 *   idle ──send──► acquiring ──answer: applied──► held ──send──► held (a renewal in flight)
 *     ▲              │ answer: refused, failed      │ answer: applied ──► held (greater token)
 *     ├──────────────┘                              │ answer: refused ──► idle, lost
 *     ├── end (release, close), drop (renewal failed, client closed: lost) ◄── any
 *     └── a change by someone else heard while held (followKey) ──► idle, lost, undo
 *
 * While held, `follow` says what a change heard on the key (followKey) means:
 *
 *   acquiring SET sent with the watch registered ──► awaiting: our own SET's notification ──► armed
 *   acquiring SET sent before the watch was ──► checking: a read after registering, our value ──► armed
 *   armed: our own SETs (renewals) change nothing; any other change is someone else's ──► idle, lost
 *
 * Before our own SET is heard, a change heard is older than our acquisition (the last holder's
 * release) and means nothing; heard while the acquiring SET was unanswered, it waits in `heard`
 * until the answer tells which of them came after ours. A read or a change heard after a reconnect
 * (`reconciled`) is the key's state now, so it decides at once.
 */
export type LeasePhase =
  | { readonly kind: 'idle' }
  | {
      readonly kind: 'acquiring'
      readonly request: number
      readonly sentAt: number
      readonly watched: boolean
      readonly heard: readonly Heard[]
    }
  | {
      readonly kind: 'held'
      /** The request that acquired it: names this hold to the work it started (renewals, the check's read). */
      readonly acquiredBy: number
      readonly token: Hlc
      /**
       * performance.now() by which it surely still holds: when the request that took or renewed it was sent, plus
       * leaseMs.
       */
      readonly heldUntil: number
      readonly follow: Follow
      readonly renewal: { readonly request: number; readonly sentAt: number } | null
    }

export type Follow =
  | { readonly kind: 'off' }
  | { readonly kind: 'awaiting'; readonly since: Hlc }
  | { readonly kind: 'checking'; readonly since: Hlc }
  | { readonly kind: 'armed' }

/** A change of the key, as its watch heard it. */
export interface Heard {
  readonly operation: 'SET' | 'DELETE'
  readonly value: Buffer | null
  readonly version: Hlc | null
  readonly reconciled: boolean
}

export type LeaseInput =
  /**
   * A SET of our value (NEX, PX) sent: an acquisition from idle, a renewal while held. `watched`: the key's watch was
   * registered when it was sent.
   */
  | { readonly kind: 'send'; readonly request: number; readonly sentAt: number; readonly watched: boolean }
  | { readonly kind: 'answer'; readonly request: number; readonly applied: boolean; readonly version: Hlc | null }
  /** The SET failed; whether it was executed is not known. */
  | { readonly kind: 'failed'; readonly request: number }
  | { readonly kind: 'heard'; readonly change: Heard }
  /** The check's read of the key, for the hold acquired by `acquiredBy`. */
  | { readonly kind: 'read'; readonly acquiredBy: number; readonly value: Buffer | null }
  /** Released or closed by us. */
  | { readonly kind: 'end' }
  /** The hold ends for a reason of our side (a renewal failed, the client closed). */
  | { readonly kind: 'drop'; readonly reason: LeaseLossReason; readonly message: string; readonly error?: Error }

export type LeaseEffect =
  | { readonly kind: 'acquired' | 'renewed'; readonly token: Hlc }
  | {
      readonly kind: 'lost'
      readonly reason: LeaseLossReason
      readonly message: string
      readonly deleted?: boolean
      readonly error?: Error
    }
  /**
   * Delete our value (VDEL) once the renewal in flight is answered: a renewal may have re-created the key someone else
   * deleted.
   */
  | { readonly kind: 'undo' }
  /** Register the key's watch, then read the key, and tell the read. */
  | { readonly kind: 'check' }

export interface LeaseStep {
  readonly phase: LeasePhase
  readonly effects: readonly LeaseEffect[]
}

export interface LeaseRules {
  readonly holder: Buffer
  readonly leaseMs: number
  /** Follow the key while held (LeaseOptions.followKey with key notifications). */
  readonly followKey: boolean
}

export const IDLE: LeasePhase = { kind: 'idle' }

/** Why a held lease ended: someone else holds it, someone deleted its key, its renewal failed, or its client closed. */
export type LeaseLossReason = 'anotherHolder' | 'deleted' | 'renewalFailed' | 'clientClosed'

const ANOTHER_HOLDER = { reason: 'anotherHolder', message: 'another holder has the lease' } as const
const DELETED = { reason: 'deleted', message: 'the key was deleted by someone else' } as const

/** The next phase of a lease and what it does on the way. */
export function leaseStep(phase: LeasePhase, input: LeaseInput, rules: LeaseRules): LeaseStep {
  const stay: LeaseStep = { phase, effects: [] }
  switch (input.kind) {
    case 'send':
      if (phase.kind === 'held')
        return { phase: { ...phase, renewal: { request: input.request, sentAt: input.sentAt } }, effects: [] }
      // A second acquiring SET supersedes the first: the first one's answer is stale.
      return {
        phase: { kind: 'acquiring', request: input.request, sentAt: input.sentAt, watched: input.watched, heard: [] },
        effects: [],
      }
    case 'answer':
      if (phase.kind === 'acquiring' && phase.request === input.request)
        return acquired(phase, input.applied ? input.version : null, rules)
      if (phase.kind === 'held' && phase.renewal?.request === input.request) {
        if (!input.applied || !input.version) return { phase: IDLE, effects: [{ kind: 'lost', ...ANOTHER_HOLDER }] }
        const renewed = {
          ...phase,
          token: input.version,
          heldUntil: phase.renewal.sentAt + rules.leaseMs,
          renewal: null,
        }
        return { phase: renewed, effects: [{ kind: 'renewed', token: input.version }] }
      }
      return stay
    case 'failed':
      if (phase.kind === 'acquiring' && phase.request === input.request) return { phase: IDLE, effects: [] }
      if (phase.kind === 'held' && phase.renewal?.request === input.request)
        return { phase: { ...phase, renewal: null }, effects: [] }
      return stay
    case 'heard':
      if (!rules.followKey) return stay
      if (phase.kind === 'acquiring') return { phase: { ...phase, heard: [...phase.heard, input.change] }, effects: [] }
      if (phase.kind === 'held') return heardWhileHeld(phase, input.change, rules)
      return stay
    case 'read':
      if (phase.kind !== 'held' || phase.acquiredBy !== input.acquiredBy || phase.follow.kind !== 'checking')
        return stay
      if (input.value?.equals(rules.holder)) return { phase: { ...phase, follow: { kind: 'armed' } }, effects: [] }
      return foreign(input.value === null)
    case 'end':
      return { phase: IDLE, effects: [] }
    case 'drop':
      if (phase.kind !== 'held') return { phase: IDLE, effects: [] }
      return {
        phase: IDLE,
        effects: [
          {
            kind: 'lost',
            reason: input.reason,
            message: input.message,
            ...(input.error ? { error: input.error } : {}),
          },
        ],
      }
  }
}

/** The acquiring SET's answer: `version` null when it was refused. */
function acquired(
  phase: Extract<LeasePhase, { kind: 'acquiring' }>,
  version: Hlc | null,
  rules: LeaseRules,
): LeaseStep {
  if (!version) return { phase: IDLE, effects: [] }
  const held = (follow: Follow): LeasePhase => ({
    kind: 'held',
    acquiredBy: phase.request,
    token: version,
    heldUntil: phase.sentAt + rules.leaseMs,
    follow,
    renewal: null,
  })
  const effects: LeaseEffect[] = [{ kind: 'acquired', token: version }]
  if (!rules.followKey) return { phase: held({ kind: 'off' }), effects }
  const own = phase.heard.findIndex((h) => ours(h, version, rules))
  if (own >= 0) {
    // Ours, and already deleted or taken by someone else before the answer came: not acquired.
    if (phase.heard.slice(own + 1).some((h) => !ours(h, version, rules)))
      return { phase: IDLE, effects: [{ kind: 'undo' }] }
    return { phase: held({ kind: 'armed' }), effects }
  }
  if (phase.watched) return { phase: held({ kind: 'awaiting', since: version }), effects }
  return { phase: held({ kind: 'checking', since: version }), effects: [...effects, { kind: 'check' }] }
}

function heardWhileHeld(phase: Extract<LeasePhase, { kind: 'held' }>, change: Heard, rules: LeaseRules): LeaseStep {
  const { follow } = phase
  if (follow.kind === 'off') return { phase, effects: [] }
  if (follow.kind === 'armed')
    return change.operation === 'SET' && change.value?.equals(rules.holder)
      ? { phase, effects: [] }
      : foreign(change.operation === 'DELETE')
  // Awaiting or checking: our own SET arms the follow; after a reconnect the change heard is the key's state now.
  if (ours(change, follow.since, rules) || (change.reconciled && change.value?.equals(rules.holder)))
    return { phase: { ...phase, follow: { kind: 'armed' } }, effects: [] }
  if (change.reconciled) return foreign(change.operation === 'DELETE')
  return { phase, effects: [] }
}

/** Our own SET of this acquisition or a later renewal: our value, at its version or after. */
function ours(h: Heard, since: Hlc, rules: LeaseRules): boolean {
  return (
    h.operation === 'SET' &&
    h.value !== null &&
    h.value.equals(rules.holder) &&
    h.version !== null &&
    Hlc.compare(h.version, since) >= 0
  )
}

/** Someone else deleted the key or wrote another value after our acquisition: the lease ends without writing. */
function foreign(deleted: boolean): LeaseStep {
  return {
    phase: IDLE,
    effects: [{ kind: 'lost', ...(deleted ? DELETED : ANOTHER_HOLDER), deleted }, { kind: 'undo' }],
  }
}

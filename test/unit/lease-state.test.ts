/**
 * The lease's machine (src/locks/lease-state.ts) step by step, without a client: every transition of
 * its phases and of its follow, and the races of a followed key (a renewal in flight when the key is
 * deleted, a DELETE heard while the acquiring SET is unanswered, the last holder's release heard
 * late, our own earlier hold's notifications heard late, a check's read overtaken by a change).
 */
import assert from 'node:assert/strict'
import { Hlc } from '../../src/hlc'
import {
  IDLE,
  leaseStep,
  type Heard,
  type LeaseEffect,
  type LeaseInput,
  type LeasePhase,
  type LeaseRules,
} from '../../src/locks/lease-state'

const holder = Buffer.from('mine:1')
const FOLLOW: LeaseRules = { holder, leaseMs: 1000, followKey: true }
const PLAIN: LeaseRules = { ...FOLLOW, followKey: false }
const v = (wall: number) => new Hlc(wall, 0, 'n')

const set = (value: string, wall: number | null, reconciled = false): Heard => ({
  operation: 'SET',
  value: Buffer.from(value),
  version: wall === null ? null : v(wall),
  reconciled,
})
const del = (wall: number | null, reconciled = false): Heard => ({
  operation: 'DELETE',
  value: null,
  version: wall === null ? null : v(wall),
  reconciled,
})

/** Runs inputs from a phase; the last phase and every effect on the way. */
function run(
  rules: LeaseRules,
  inputs: LeaseInput[],
  from: LeasePhase = IDLE,
): { phase: LeasePhase; effects: LeaseEffect[] } {
  let phase = from
  const effects: LeaseEffect[] = []
  for (const input of inputs) {
    const next = leaseStep(phase, input, rules)
    phase = next.phase
    effects.push(...next.effects)
  }
  return { phase, effects }
}

const send = (request: number, watched = true, sentAt = 100): LeaseInput => ({ kind: 'send', request, sentAt, watched })
const answer = (request: number, wall: number | null): LeaseInput => ({
  kind: 'answer',
  request,
  applied: wall !== null,
  version: wall === null ? null : v(wall),
})
const heard = (change: Heard): LeaseInput => ({ kind: 'heard', change })
const kinds = (effects: LeaseEffect[]) => effects.map((e) => e.kind)
const followOf = (phase: LeasePhase) => (phase.kind === 'held' ? phase.follow.kind : `(${phase.kind})`)

/** Held by request 1 at version 10, the follow as `watched` made it. */
function held(watched: boolean, rules = FOLLOW): LeasePhase {
  return run(rules, [send(1, watched), answer(1, 10)]).phase
}

describe('lease machine: phases', () => {
  it('idle ──send──► acquiring, which remembers the request, when it was sent and whether the key was watched', () => {
    const { phase, effects } = run(FOLLOW, [send(1, false, 42)])
    assert.deepEqual(phase, { kind: 'acquiring', request: 1, sentAt: 42, watched: false, heard: [] })
    assert.deepEqual(effects, [])
  })

  it('acquiring ──answer: applied──► held with the answer as its token, held until sent + leaseMs', () => {
    const { phase, effects } = run(PLAIN, [send(1, true, 100), answer(1, 10)])
    assert.equal(phase.kind, 'held')
    if (phase.kind !== 'held') return
    assert.ok(phase.token.equals(v(10)))
    assert.equal(phase.heldUntil, 1100)
    assert.equal(phase.acquiredBy, 1)
    assert.equal(phase.follow.kind, 'off', 'without followKey nothing is followed')
    assert.deepEqual(effects, [{ kind: 'acquired', token: v(10) }])
  })

  it('acquiring ──answer: refused──► idle, nothing lost (it was never ours)', () => {
    assert.deepEqual(run(FOLLOW, [send(1), answer(1, null)]), { phase: IDLE, effects: [] })
  })

  it('acquiring ──failed──► idle; a failure of another request changes nothing', () => {
    assert.deepEqual(run(FOLLOW, [send(1), { kind: 'failed', request: 1 }]), { phase: IDLE, effects: [] })
    assert.equal(run(FOLLOW, [send(1), { kind: 'failed', request: 7 }]).phase.kind, 'acquiring')
  })

  it('a second acquiring SET supersedes the first: the first answer is stale, the second decides', () => {
    const { phase, effects } = run(PLAIN, [send(1), send(2), answer(1, 10)])
    assert.equal(phase.kind, 'acquiring')
    assert.deepEqual(effects, [])
    const after = run(PLAIN, [answer(2, 11)], phase)
    assert.equal(after.phase.kind === 'held' && after.phase.acquiredBy, 2)
  })

  it('held ──send──► held with the renewal in flight ──answer: applied──► a greater token, held from the renewal', () => {
    const sent = run(PLAIN, [send(2, true, 500)], held(true, PLAIN)).phase
    assert.deepEqual(sent.kind === 'held' && sent.renewal, { request: 2, sentAt: 500 })
    const { phase, effects } = run(PLAIN, [answer(2, 20)], sent)
    assert.equal(phase.kind, 'held')
    if (phase.kind !== 'held') return
    assert.ok(phase.token.equals(v(20)))
    assert.equal(phase.heldUntil, 1500)
    assert.equal(phase.renewal, null)
    assert.equal(phase.acquiredBy, 1, 'a renewal keeps the hold it renews')
    assert.deepEqual(effects, [{ kind: 'renewed', token: v(20) }])
  })

  it('held ──renewal refused──► idle, lost to another holder', () => {
    const { phase, effects } = run(PLAIN, [send(2), answer(2, null)], held(true, PLAIN))
    assert.deepEqual(phase, IDLE)
    assert.deepEqual(effects, [{ kind: 'lost', reason: 'anotherHolder', message: 'another holder has the lease' }])
  })

  it('held ──renewal failed──► held, the renewal no longer in flight (the caller decides to retry or drop)', () => {
    const { phase, effects } = run(PLAIN, [send(2), { kind: 'failed', request: 2 }], held(true, PLAIN))
    assert.equal(phase.kind === 'held' && phase.renewal, null)
    assert.deepEqual(effects, [])
  })

  it('any ──end──► idle without a word (released or closed by us); an answer after it is stale', () => {
    for (const from of [IDLE, run(FOLLOW, [send(1)]).phase, held(true), run(FOLLOW, [send(2)], held(true)).phase]) {
      assert.deepEqual(leaseStep(from, { kind: 'end' }, FOLLOW), { phase: IDLE, effects: [] })
    }
    assert.deepEqual(run(FOLLOW, [send(1), { kind: 'end' }, answer(1, 10)]), { phase: IDLE, effects: [] })
  })

  it('held ──drop──► idle, lost with its reason and error; drop while not held says nothing', () => {
    const error = new Error('gone')
    const { phase, effects } = run(
      FOLLOW,
      [{ kind: 'drop', reason: 'renewalFailed', message: 'renewal failed', error }],
      held(true),
    )
    assert.deepEqual(phase, IDLE)
    assert.deepEqual(effects, [{ kind: 'lost', reason: 'renewalFailed', message: 'renewal failed', error }])
    assert.deepEqual(
      run(FOLLOW, [send(1), { kind: 'drop', reason: 'clientClosed', message: 'the client was closed' }]),
      { phase: IDLE, effects: [] },
    )
    assert.deepEqual(run(FOLLOW, [{ kind: 'drop', reason: 'renewalFailed', message: 'x' }]), {
      phase: IDLE,
      effects: [],
    })
  })
})

describe('lease machine: following the key', () => {
  it('without followKey, nothing heard matters', () => {
    const from = held(true, PLAIN)
    assert.deepEqual(run(PLAIN, [heard(del(11)), heard(set('other', 12))], from).phase, from)
    assert.deepEqual(run(PLAIN, [send(1), heard(del(9))]).phase, {
      kind: 'acquiring',
      request: 1,
      sentAt: 100,
      watched: true,
      heard: [],
    })
  })

  it('heard while idle: nothing', () => {
    assert.deepEqual(run(FOLLOW, [heard(del(5))]), { phase: IDLE, effects: [] })
  })

  it('acquiring, watched: our own SET heard before the answer ──► held, armed', () => {
    const { phase, effects } = run(FOLLOW, [send(1, true), heard(set('mine:1', 10)), answer(1, 10)])
    assert.equal(followOf(phase), 'armed')
    assert.deepEqual(kinds(effects), ['acquired'])
  })

  it('acquiring, watched: the answer before our own SET is heard ──► held, awaiting it ──our SET──► armed', () => {
    const awaiting = run(FOLLOW, [send(1, true), answer(1, 10)])
    assert.equal(followOf(awaiting.phase), 'awaiting')
    assert.deepEqual(kinds(awaiting.effects), ['acquired'], 'no request: the watch will bring our SET')
    assert.equal(followOf(run(FOLLOW, [heard(set('mine:1', 10))], awaiting.phase).phase), 'armed')
  })

  it('acquiring, not watched: held, checking (a read after registering) ──our value read──► armed', () => {
    const checking = run(FOLLOW, [send(1, false), answer(1, 10)])
    assert.equal(followOf(checking.phase), 'checking')
    assert.deepEqual(kinds(checking.effects), ['acquired', 'check'])
    assert.equal(followOf(run(FOLLOW, [{ kind: 'read', acquiredBy: 1, value: holder }], checking.phase).phase), 'armed')
  })

  it('checking ──the key read missing──► idle, lost as deleted, and our value undone', () => {
    const { phase, effects } = run(FOLLOW, [{ kind: 'read', acquiredBy: 1, value: null }], held(false))
    assert.deepEqual(phase, IDLE)
    assert.deepEqual(effects, [
      { kind: 'lost', reason: 'deleted', message: 'the key was deleted by someone else', deleted: true },
      { kind: 'undo' },
    ])
  })

  it('checking ──another value read──► idle, lost to another holder', () => {
    const { effects } = run(FOLLOW, [{ kind: 'read', acquiredBy: 1, value: Buffer.from('other') }], held(false))
    assert.deepEqual(effects, [
      { kind: 'lost', reason: 'anotherHolder', message: 'another holder has the lease', deleted: false },
      { kind: 'undo' },
    ])
  })

  it('a read for an earlier hold, or while not checking, changes nothing', () => {
    const checking = held(false)
    assert.deepEqual(run(FOLLOW, [{ kind: 'read', acquiredBy: 9, value: null }], checking).phase, checking)
    const armed = run(FOLLOW, [heard(set('mine:1', 10))], checking).phase
    assert.equal(followOf(armed), 'armed')
    assert.deepEqual(run(FOLLOW, [{ kind: 'read', acquiredBy: 1, value: null }], armed).phase, armed)
  })

  it('armed: our renewals heard change nothing; a DELETE ──► idle, lost as deleted, undone', () => {
    const armed = run(FOLLOW, [heard(set('mine:1', 10))], held(true)).phase
    assert.deepEqual(run(FOLLOW, [heard(set('mine:1', 11)), heard(set('mine:1', 12))], armed).phase, armed)
    const { phase, effects } = run(FOLLOW, [heard(del(13))], armed)
    assert.deepEqual(phase, IDLE)
    assert.deepEqual(effects, [
      { kind: 'lost', reason: 'deleted', message: 'the key was deleted by someone else', deleted: true },
      { kind: 'undo' },
    ])
  })

  it('armed: another value written ──► idle, lost to another holder, undone (VDEL removes only our value)', () => {
    const armed = run(FOLLOW, [heard(set('mine:1', 10))], held(true)).phase
    assert.deepEqual(run(FOLLOW, [heard(set('usurper', 11))], armed).effects, [
      { kind: 'lost', reason: 'anotherHolder', message: 'another holder has the lease', deleted: false },
      { kind: 'undo' },
    ])
  })

  it('awaiting: a reconnect brings the key as it is now: ours ──► armed, deleted ──► lost', () => {
    const awaiting = held(true)
    assert.equal(followOf(run(FOLLOW, [heard(set('mine:1', 10, true))], awaiting).phase), 'armed')
    assert.deepEqual(kinds(run(FOLLOW, [heard(del(null, true))], awaiting).effects), ['lost', 'undo'])
    assert.deepEqual(kinds(run(FOLLOW, [heard(set('other', 12, true))], awaiting).effects), ['lost', 'undo'])
  })
})

describe('lease machine: the races of a followed key', () => {
  it('the last holder released just before our SET: its DELETE, heard before our own SET, does not count', () => {
    const { phase, effects } = run(FOLLOW, [
      send(1, true),
      heard(set('last', 8)),
      heard(del(9)),
      heard(set('mine:1', 10)),
      answer(1, 10),
    ])
    assert.equal(followOf(phase), 'armed')
    assert.deepEqual(kinds(effects), ['acquired'])
  })

  it("the last holder's DELETE heard after the answer, before our own SET: awaiting ignores it", () => {
    const { phase } = run(FOLLOW, [send(1, true), answer(1, 10), heard(del(9)), heard(set('mine:1', 10))])
    assert.equal(followOf(phase), 'armed')
  })

  it('our own earlier hold of the same value, heard late (its renewal and our release), does not arm the follow nor end the new hold', () => {
    const { phase, effects } = run(FOLLOW, [send(5, true), answer(5, 20), heard(set('mine:1', 12)), heard(del(13))])
    assert.equal(followOf(phase), 'awaiting', 'an older SET of our value is not this acquisition')
    assert.deepEqual(kinds(effects), ['acquired'])
  })

  it('ours, then deleted by someone else before the acquiring SET was answered: not acquired, and our value is undone', () => {
    const { phase, effects } = run(FOLLOW, [send(1, true), heard(set('mine:1', 10)), heard(del(11)), answer(1, 10)])
    assert.deepEqual(phase, IDLE)
    assert.deepEqual(effects, [{ kind: 'undo' }], 'no acquired, no lost: it was never held')
  })

  it('ours, then overwritten before the answer: not acquired, undone', () => {
    assert.deepEqual(
      run(FOLLOW, [send(1, true), heard(set('mine:1', 10)), heard(set('other', 11)), answer(1, 10)]).effects,
      [{ kind: 'undo' }],
    )
  })

  it('a renewal in flight when the key is deleted: lost at the DELETE, undone after the renewal; its answer changes nothing', () => {
    const armed = run(FOLLOW, [heard(set('mine:1', 10))], held(true)).phase
    const renewing = run(FOLLOW, [send(2)], armed).phase
    const deleted = run(FOLLOW, [heard(del(11))], renewing)
    assert.deepEqual(deleted.phase, IDLE)
    assert.deepEqual(kinds(deleted.effects), ['lost', 'undo'])
    // The renewal re-created the key (NEX on a missing key): its answer does not make it ours again.
    assert.deepEqual(run(FOLLOW, [answer(2, 12)], deleted.phase), { phase: IDLE, effects: [] })
  })

  it('a renewal in flight when another value is written: lost, the renewal refused later says nothing more', () => {
    const armed = run(FOLLOW, [heard(set('mine:1', 10))], held(true)).phase
    const { phase, effects } = run(FOLLOW, [send(2), heard(set('other', 11)), answer(2, null)], armed)
    assert.deepEqual(phase, IDLE)
    assert.deepEqual(kinds(effects), ['lost', 'undo'])
  })

  it('not watched when sent: changes heard before the answer are left to the read, which decides', () => {
    // The registration raced our SET: what it heard may be from before or after it.
    const checking = run(FOLLOW, [send(1, false), heard(del(9)), answer(1, 10)])
    assert.equal(followOf(checking.phase), 'checking')
    assert.deepEqual(kinds(checking.effects), ['acquired', 'check'])
    assert.equal(followOf(run(FOLLOW, [{ kind: 'read', acquiredBy: 1, value: holder }], checking.phase).phase), 'armed')
  })

  it('checking, the watch registered before our SET landed: our SET heard arms it, a DELETE then ends it, the read after is stale', () => {
    const { phase, effects } = run(
      FOLLOW,
      [heard(set('mine:1', 10)), heard(del(11)), { kind: 'read', acquiredBy: 1, value: null }],
      held(false),
    )
    assert.deepEqual(phase, IDLE)
    assert.deepEqual(kinds(effects), ['lost', 'undo'], 'lost once')
  })

  it('checking: a change by someone else heard before the read does not end the hold by itself (it may be older than our SET)', () => {
    const from = held(false)
    assert.deepEqual(run(FOLLOW, [heard(del(9))], from).phase, from)
  })
})

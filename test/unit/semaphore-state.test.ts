/**
 * The semaphore's machine (src/locks/semaphore-state.ts) step by step, without a client: the waiters'
 * order, which slots the head tries first, and what a heard change means for a slot of ours or not.
 */
import assert from 'node:assert/strict'
import { head, held, initialSemaphore, semaphoreStep, slotsToTry, type SemaphoreInput, type SemaphoreState } from '../../src/locks/semaphore-state'

const run = (state: SemaphoreState, ...inputs: SemaphoreInput[]) => inputs.reduce(semaphoreStep, state)

describe('semaphore state', () => {
  it('waiters take their turns in arrival order; one that leaves early gives its turn to the next', () => {
    let s = run(initialSemaphore(2), { kind: 'wait', waiter: 1 }, { kind: 'wait', waiter: 2 }, { kind: 'wait', waiter: 3 })
    assert.equal(head(s), 1)
    s = run(s, { kind: 'leave', waiter: 2 })
    assert.equal(head(s), 1, 'a later waiter leaving changes nothing for the head')
    s = run(s, { kind: 'leave', waiter: 1 })
    assert.equal(head(s), 3)
    assert.equal(head(run(s, { kind: 'leave', waiter: 3 })), null)
    assert.deepEqual(run(s, { kind: 'wait', waiter: 3 }).queue, [3], 'a waiter is queued once')
  })

  it('tries known-free slots first, then unknown, then those seen taken, never its own', () => {
    const s = run(initialSemaphore(4), { kind: 'tried', slot: 0, acquired: false }, { kind: 'tried', slot: 1, acquired: true }, { kind: 'freed', slot: 3 })
    assert.deepEqual(slotsToTry(s), [3, 2, 0])
    assert.equal(held(s), 1)
  })

  it('our own renewals heard change nothing; someone else’s SET marks a slot taken; a DELETE frees it; a lost hold is unknown', () => {
    let s = run(initialSemaphore(2), { kind: 'tried', slot: 0, acquired: true }, { kind: 'taken', slot: 0 })
    assert.equal(s.slots[0], 'mine')
    s = run(s, { kind: 'taken', slot: 1 })
    assert.equal(s.slots[1], 'taken')
    s = run(s, { kind: 'freed', slot: 1 }, { kind: 'lost', slot: 0 })
    assert.deepEqual(s.slots, ['unknown', 'free'])
    assert.deepEqual(run(s, { kind: 'freed', slot: 7 }), s, 'a slot out of range changes nothing')
  })
})

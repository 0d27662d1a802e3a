import assert from 'node:assert/strict'
import { mock } from 'node:test'
import { LoadGate } from '../../../src/context/load-gate'
import { ContextNotLoadedError } from '../../../src/context/not-loaded'

describe('context: calls before the store has loaded', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout'] }))
  afterEach(() => mock.timers.reset())

  const gate = () => new LoadGate(1000, () => new ContextNotLoadedError('not loaded yet: loading'))

  it('holds calls and runs them in order once loaded; one with a callback gives up after the timeout, and is not run after', () => {
    const g = gate()
    const ran: string[] = []
    const gaveUp: string[] = []
    g.hold(() => ran.push('a'))
    g.hold(
      () => ran.push('b'),
      (err) => gaveUp.push(`b: ${err.message}`),
    )
    mock.timers.tick(1000)
    g.hold(() => ran.push('c'))
    g.open()
    assert.deepEqual(ran, ['a', 'c'])
    assert.deepEqual(gaveUp, ['b: not loaded yet: loading'])
  })

  it('whenLoaded waits for the load, or rejects with the not-loaded error after the timeout', async () => {
    const g = gate()
    const late = g.whenLoaded()
    mock.timers.tick(1000)
    await assert.rejects(late, { code: 'CONTEXT_NOT_LOADED' })
    const early = g.whenLoaded()
    g.open()
    await early
    await g.whenLoaded()
  })

  it('closing before the load: callers with a callback hear why; the changes without one are counted as dropped', () => {
    const g = gate()
    const heard: string[] = []
    g.hold(() => {})
    g.hold(() => {})
    g.hold(
      () => {},
      (err) => heard.push(err.message),
    )
    assert.equal(g.drop(new ContextNotLoadedError('closed before its context was loaded')), 2)
    assert.deepEqual(heard, ['closed before its context was loaded'])
  })
})

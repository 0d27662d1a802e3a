import assert from 'node:assert/strict'
import { ServicePresence } from '../../src/client/service-presence'

describe('client: service presence', function () {
  it('before any service answered: the request that found it absent is resent, every other fails', function () {
    const changes: boolean[] = []
    const presence = new ServicePresence((absent) => changes.push(absent))
    assert.equal(presence.unheard(1, false), 'resend')
    assert.equal(presence.unheard(2, false), 'fail')
    assert.equal(presence.unheard(1, false), 'resend')
    assert.equal(presence.absent, true)
    presence.heard()
    assert.equal(presence.absent, false)
    assert.deepEqual(changes, [true, false], 'told once per change')
  })

  it('an absence found by a service check fails every request until a service answers', function () {
    const presence = new ServicePresence(() => {})
    assert.equal(presence.unheard(7, true), 'fail')
    assert.equal(presence.unheard(8, false), 'fail')
  })

  it('once a service has answered, an absence is a restart: every request is resent, a check still fails', function () {
    const presence = new ServicePresence(() => {})
    presence.heard()
    assert.equal(presence.unheard(1, false), 'resend')
    assert.equal(presence.unheard(2, false), 'resend')
    assert.equal(presence.unheard(3, true), 'fail')
  })
})

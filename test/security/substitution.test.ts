import assert from 'node:assert/strict'
import { KeyPattern } from '../../src/emulator/core/key-pattern'

describe('security: a substituted principal value cannot reach past its place in a key pattern', () => {
  const pattern = new KeyPattern('Pattern', 'dev/{principal.clientId}/*', { substitutions: true })

  it('a client id with a / does not reach into another client id namespace', () => {
    assert.ok(pattern.matches('dev/line-1/cfg/secret', { clientId: 'line-1' }))
    assert.equal(pattern.matches('dev/line-1/cfg/secret', { clientId: 'line-1/cfg' }), false)
    assert.equal(pattern.matches('dev/line-1/cfg/x', { clientId: 'line-1/cfg' }), false)
  })

  it('a value holding a glob character, a backslash or a brace, or an empty one, matches nothing, not even itself', () => {
    for (const clientId of ['a*', 'a?', 'a[b]', 'a]', 'a\\b', 'a{b', 'a}', '']) {
      assert.equal(pattern.matches(`dev/${clientId}/k`, { clientId }), false, JSON.stringify(clientId))
    }
    const byUser = new KeyPattern('Pattern', 'u/{principal.username}', { substitutions: true })
    assert.equal(byUser.matches('u/*', { clientId: 'c', username: '*' }), false)
    assert.ok(byUser.matches('u/alice', { clientId: 'c', username: 'alice' }))
  })
})

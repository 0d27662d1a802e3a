import assert from 'node:assert/strict'
import { KeyPattern } from '../../../src/emulator/core/key-pattern'

describe('security: a substituted principal value cannot reach past its place in a key pattern', () => {
  const pattern = new KeyPattern('Pattern', 'dev/{principal.clientId}/*', { substitutions: true })

  it('a client id with a / does not reach into another client id namespace', () => {
    assert.ok(pattern.matches('dev/line-1/cfg/secret', { clientId: 'line-1' }))
    assert.equal(pattern.matches('dev/line-1/cfg/secret', { clientId: 'line-1/cfg' }), false)
    assert.equal(pattern.matches('dev/line-1/cfg/x', { clientId: 'line-1/cfg' }), false)
  })

  it('a value holding a glob character, a backslash or a brace matches itself alone, as AIO 2606 escapes it; an empty one matches nothing', () => {
    for (const clientId of ['a*', 'a?', 'a[b]', 'a]', 'a\\b', 'a{b', 'a}']) {
      assert.ok(pattern.matches(`dev/${clientId}/k`, { clientId }), `${JSON.stringify(clientId)} reaches its own keys`)
    }
    // The glob characters are not globs: `a*` does not reach `dev/ab/k`, `a?` not `dev/ax/k`, `a[b]` not `dev/ab/k`.
    assert.equal(pattern.matches('dev/ab/k', { clientId: 'a*' }), false)
    assert.equal(pattern.matches('dev/ax/k', { clientId: 'a?' }), false)
    assert.equal(pattern.matches('dev/ab/k', { clientId: 'a[b]' }), false)
    assert.equal(pattern.matches('dev/a\\b/k', { clientId: 'a\\\\b' }), false)
    assert.equal(pattern.matches('dev//k', { clientId: '' }), false)
    const byUser = new KeyPattern('Pattern', 'u/{principal.username}', { substitutions: true })
    assert.ok(byUser.matches('u/*', { clientId: 'c', username: '*' }))
    assert.equal(byUser.matches('u/alice', { clientId: 'c', username: '*' }), false, 'a user name * is not every user')
    assert.ok(byUser.matches('u/alice', { clientId: 'c', username: 'alice' }))
  })
})

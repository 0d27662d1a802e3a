/**
 * After an outage of any length the client tries again at most 2 s apart (docs/client.md states
 * the cap): a runtime is back within about 2 s of its broker, not the 6–24 s a 10 s cap gave.
 */
import { strict as assert } from 'node:assert'
import { backoffDelay } from '../../src/client/backoff'
import { CLIENT_DEFAULTS, resolveOptions } from '../../src/client/options'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

describe('reconnect backoff: capped at 2 s after an outage', () => {
  it('never waits longer than 2 s between attempts, however many failed', () => {
    const { reconnectMinMs, reconnectMaxMs } = resolveOptions({ brokerUrl: 'mqtt://127.0.0.1:1883', clientId: 'cap' })
    for (let attempt = 0; attempt <= 60; attempt++)
      assert.ok(backoffDelay(attempt, reconnectMinMs, reconnectMaxMs, () => 1) <= 2000, `attempt ${attempt}`)
  })

  it('is the cap docs/client.md states', () => {
    const doc = readFileSync(join(__dirname, '..', '..', 'docs', 'client.md'), 'utf8')
    assert.match(
      doc,
      new RegExp(
        `\\| \`reconnectMinMs\`, \`reconnectMaxMs\` \\| ${CLIENT_DEFAULTS.reconnectMinMs}, ${CLIENT_DEFAULTS.reconnectMaxMs} \\|`,
      ),
    )
  })
})

import assert from 'node:assert/strict'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { MAX_LOG_LINE, rateLimited, type LogLevel } from '../../../src/diagnostics/log'
import { Reply, Request } from '../../../src/protocol'
import { RawClient } from '../emulator/raw-client'

/**
 * Log amplification: one warn line per dropped request (34,476 lines from a 1.6 s flood), 40 KB
 * lines from a 40,000-character client id, a warning a second for ever from a context store whose
 * broker has no state store. Repeated lines are now written a few times a window and counted.
 */
describe('security: the logs cannot be flooded', () => {
  it('writes a few lines of one kind per window, then one line with the count and the last', () => {
    const lines: Array<[LogLevel, string]> = []
    const timers: Array<() => void> = []
    let now = 0
    const log = rateLimited((level, message) => lines.push([level, message]), {
      burst: 3,
      windowMs: 1000,
      now: () => now,
      schedule: (fn) => timers.push(fn),
    })
    for (let i = 0; i < 500; i++) log('warn', `request from client "c${i}" dropped: no Response Topic`)
    log('warn', 'service connection lost')
    log('error', 'disk full')
    log('error', 'disk full')
    assert.equal(lines.length, 6)
    assert.equal(timers.length, 1)
    timers[0]!()
    assert.deepEqual(lines.at(-1), [
      'warn',
      '… 497 more like it in 1 s; the last: request from client "c499" dropped: no Response Topic',
    ])
    now = 1000
    log('warn', 'request from client "z" dropped: no Response Topic')
    assert.equal(lines.at(-1)![1], 'request from client "z" dropped: no Response Topic', 'a new window writes again')
  })

  it('cuts a 40,000-character id in a line, keeping what the line says after it', () => {
    const lines: string[] = []
    const log = rateLimited((_, message) => lines.push(message))
    log('warn', `client ${JSON.stringify('x'.repeat(40_000))} refused: "a\\"b" kept`)
    assert.equal(lines[0], `client "${'x'.repeat(200)}…(40000 characters)" refused: "a\\"b" kept`)
    log('warn', `unquoted ${'y'.repeat(5000)}`)
    assert.equal(lines[1]!.length, MAX_LOG_LINE + '… (4009 more characters)'.length)
  })

  describe('the emulator, under a flood of requests it drops', function () {
    this.timeout(20_000)
    let emulator: Emulator
    const lines: string[] = []
    before(async () => {
      emulator = await startEmulator({
        listen: { host: '127.0.0.1', port: 0 },
        logLevel: 'warn',
        logger: (_, message) => lines.push(message),
      })
    })
    after(async () => emulator?.stop())

    it('writes at most a burst of lines, each short, and keeps serving', async () => {
      const raw = await RawClient.connect(emulator.brokerUrl, `flood-${'x'.repeat(20_000)}`)
      try {
        for (let i = 0; i < 500; i++) raw.send(Request.get('k'), { responseTopic: null })
        // Served in order: once this is answered, the 500 before it were dropped and logged.
        assert.deepEqual((await raw.request(Request.get('k'))).payload, Reply.nil)
      } finally {
        await raw.close()
      }
      const dropped = lines.filter((l) => l.includes('dropped: no Response Topic'))
      assert.ok(dropped.length >= 1 && dropped.length <= 20, `${dropped.length} lines`)
      for (const line of lines) assert.ok(line.length <= MAX_LOG_LINE + 40, `${line.length} characters`)
    })
  })
})

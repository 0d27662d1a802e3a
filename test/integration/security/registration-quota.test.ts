import assert from 'node:assert/strict'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { Reply, Request } from '../../../src/protocol'
import { decodeExact } from '../../../src/resp'
import { RawClient } from '../emulator/raw-client'

/**
 * KEYNOTIFY registrations fell under no quota: one flow registered 4,540 keys and kept going. A
 * client id holds at most `--max-registrations`; one more is answered as the service's quota error,
 * the log naming the flag, while a key already registered, a STOP and another client still work.
 */
describe('security: KEYNOTIFY registrations are bounded per client', function () {
  this.timeout(30_000)
  let emulator: Emulator
  let flood: RawClient
  let other: RawClient
  const lines: string[] = []

  before(async () => {
    emulator = await startEmulator({
      listen: { host: '127.0.0.1', port: 0 },
      maxRegistrations: 3,
      logLevel: 'info',
      logger: (_level, message) => lines.push(message),
    })
    flood = await RawClient.connect(emulator.brokerUrl)
    other = await RawClient.connect(emulator.brokerUrl)
  })
  after(async () => {
    await flood?.close()
    await other?.close()
    await emulator?.stop()
  })

  it('the fourth key is refused naming --max-registrations; the third again, a STOP and another client are served', async () => {
    for (const key of ['w/1', 'w/2', 'w/3'])
      assert.deepEqual((await flood.request(Request.keyNotify(key))).payload, Reply.ok, key)
    assert.deepEqual(decodeExact((await flood.request(Request.keyNotify('w/4'))).payload), {
      kind: 'error',
      value: 'ERR the quota has been exceeded',
    })
    assert.ok(
      lines.some((l) => /KEYNOTIFY refused: .*--max-registrations allows/.test(l)),
      lines.join('\n'),
    )
    assert.deepEqual((await flood.request(Request.keyNotify('w/3'))).payload, Reply.ok, 'a key already registered')
    assert.deepEqual((await flood.request(Request.keyNotifyStop('w/1'))).payload, Reply.ok, 'STOP')
    assert.deepEqual((await flood.request(Request.keyNotify('w/4'))).payload, Reply.ok, 'room again after a STOP')
    assert.deepEqual(
      (await other.request(Request.keyNotify('w/4'))).payload,
      Reply.ok,
      'another client has a quota of its own',
    )
  })
})

import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { CONTENT_TYPE, Reply, REQUEST_TOPIC, Request } from '../../../src/protocol'
import { decodeExact } from '../../../src/resp'
import { pubackCode, RawClient } from '../../integration/emulator/raw-client'
import { EmulatorCli } from '../../support/emulator-cli'
import { eventually, sleep } from '../../support/wait'

/**
 * One PUBLISH with 200,000 user properties (2.6 MB) froze the emulator for 60 s: the dedup print of
 * a request sorted its property names with an insertion sort, quadratic in their number. The
 * request and a GET sent beside it from another client are both answered within the suite's
 * scaled limit (RawClient's request timeout); with the old sort neither comes back in time. The
 * emulator runs as its own process (the CLI, as users start it), so a freeze cannot stop the
 * test's own timers.
 */
describe('security: a request with many user properties cannot freeze the emulator', function () {
  this.timeout(60_000)
  let emulator: EmulatorCli
  let attacker: RawClient
  let neighbour: RawClient

  before(async () => {
    emulator = await EmulatorCli.start(['--listen', '127.0.0.1:0', '--log-level', 'error'])
    const url = /ready on (mqtt:\/\/[^\s,]+)/.exec(emulator.stdout)![1]!
    attacker = await RawClient.connect(url)
    neighbour = await RawClient.connect(url)
    assert.deepEqual((await neighbour.request(Request.set('mine', 'kept'))).payload, Reply.ok)
  })
  after(async () => {
    await attacker?.close()
    await neighbour?.close()
    await emulator?.kill()
  })

  it('200,000 user properties in reverse order: the request and a GET beside it are answered', async () => {
    const props: Record<string, string> = {}
    // Descending names: the insertion sort's worst case.
    for (let i = 200_000; i > 0; i--) props[`p${String(i).padStart(7, '0')}`] = 'v'
    const correlationData = randomBytes(16)
    const answered = new Promise<void>((resolve) =>
      attacker.client.on('message', (topic, _payload, packet) => {
        if (topic === attacker.responseTopic && packet.properties?.correlationData?.equals(correlationData)) resolve()
      }),
    )
    // The broker has the whole request once it acknowledges it: the GET goes after it.
    const code = await pubackCode(
      attacker.client.publishAsync(REQUEST_TOPIC, Request.get('mine'), {
        qos: 1,
        properties: {
          responseTopic: attacker.responseTopic,
          correlationData,
          contentType: CONTENT_TYPE,
          messageExpiryInterval: 30,
          userProperties: props,
        },
      }),
    )
    assert.equal(code, 0)
    const got = await neighbour.request(Request.get('mine'), { timeoutMs: 8000 })
    assert.deepEqual(decodeExact(got.payload), { kind: 'bulk', value: Buffer.from('kept') })
    await eventually(
      () => Promise.race([answered.then(() => true), sleep(50).then(() => undefined)]),
      'the answer to the flooding request',
      8000,
    )
  })
})

/**
 * A config node pointed at a broker with no state store behind it (plain mosquitto): the status
 * says so instead of "connected", the log warns once with what to check, and msgs fail at once
 * with NoService instead of waiting the request timeout. When a state store starts serving
 * through the broker, the status turns connected and msgs work, without a redeploy.
 */
import assert from 'node:assert/strict'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { Mosquitto, requireMosquitto } from '../../support/mosquitto'
import { ALL, COMMON, flowWith, helper, lastStatus, nextMessage } from '../../integration/nodes/support'
import { until } from '../../support/wait'

describe('nodes: a broker with no state store', function () {
  this.timeout(20_000)
  let broker: Mosquitto
  let service: Emulator | null = null
  before(async function () {
    requireMosquitto(this)
    broker = await Mosquitto.start()
  })
  after(async () => {
    await helper.unload()
    await service?.stop()
    await broker?.stop()
  })

  it('shows "no state store", warns once, fails msgs at once with NoService, and recovers when a service appears', async () => {
    // A request timeout far beyond this test's own: a msg that waited for it would fail the test.
    await helper.load(
      ALL,
      flowWith(broker.url, { id: 'get', type: 'ss-get', key: 'k', keyType: 'str' }, 1, { requestTimeout: '60000' }),
    )
    const get = helper.getNode('get')
    await until(() => lastStatus(get).text === `${COMMON}status.noService`, 'the no-service status', 10_000)
    assert.deepEqual({ fill: lastStatus(get).fill, shape: lastStatus(get).shape }, { fill: 'yellow', shape: 'dot' })
    const cfg = helper.getNode('cfg') as unknown as { warn: { getCalls(): Array<{ args: unknown[] }> } }
    const warnings = () => cfg.warn.getCalls().map((c) => String(c.args[0]))
    assert.deepEqual(warnings().filter((w) => w.includes('log.noService')).length, 1)

    for (let i = 0; i < 2; i++) {
      const caught = nextMessage(helper.getNode('caught'), 5000)
      get.receive({ payload: i })
      const c = await caught
      assert.equal((c.error as { code: string }).code, 'NoService')
      assert.equal(c.payload, i, 'the msg as it arrived')
    }
    assert.equal(lastStatus(get).text, `node-red:common.status.error: ${COMMON}failure.NoService`)
    assert.equal(warnings().filter((w) => w.includes('log.noService')).length, 1, 'warned once, not per msg')

    service = await startEmulator({ brokerUrl: broker.url, logLevel: 'error' })
    await until(
      () => lastStatus(get).text === 'node-red:common.status.connected',
      'connected once a state store answers',
      10_000,
    )
    const out = nextMessage(helper.getNode('out1'), 5000)
    get.receive({})
    assert.equal((await out).found, false)
  })
})

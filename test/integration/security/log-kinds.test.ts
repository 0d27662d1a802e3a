import assert from 'node:assert/strict'
import mqtt from 'mqtt'
import { StateStoreClient } from '../../../src/client'
import { startBroker, type EmbeddedBroker } from '../../../src/emulator/broker/broker'
import { rateLimited } from '../../../src/diagnostics/log'
import { Notification, notificationFilter, notificationTopic } from '../../../src/protocol'
import { until } from '../../support/wait'

/** The i-th of many distinct words of letters that no log normalisation folds together (no digits, no hex). */
function word(i: number): string {
  let out = ''
  do {
    out += 'ghijklmnopqrstuvwxyz'[i % 20]
    i = Math.floor(i / 20)
  } while (i > 0)
  return out
}

/**
 * The rate limiter told lines apart by their text with quoted strings and numbers taken out, so
 * attacker-chosen text outside quotes made each line a kind of its own: 5,000 notifications on
 * distinct malformed topics wrote 5,000 log lines, and the map of kinds grew with them. Topics are
 * quoted in the line now, and the kinds a window holds are bounded.
 */
describe('security: attacker-chosen text does not multiply the log', function () {
  this.timeout(30_000)

  it('keeps at most maxKinds kinds: lines of further kinds share one burst', () => {
    const lines: string[] = []
    const log = rateLimited((_, message) => lines.push(message), { burst: 1, maxKinds: 100, schedule: () => {} })
    for (let i = 0; i < 5000; i++) log('warn', `dropped on ${word(i)}`)
    assert.ok(lines.length <= 101, `${lines.length} lines`)
    // A known kind keeps its own count meanwhile.
    assert.ok(lines.includes('dropped on g'))
  })

  describe('a client on a broker without ACLs, sent notifications on 5,000 distinct malformed topics', () => {
    let broker: EmbeddedBroker
    let client: StateStoreClient
    const lines: string[] = []

    before(async () => {
      broker = await startBroker({ port: 0 })
      client = new StateStoreClient({
        brokerUrl: broker.url,
        clientId: 'victim',
        logger: (_, message) => lines.push(message),
      })
      await until(() => client.status.state === 'connected', 'the client to connect')
    })
    after(async () => {
      await client?.close()
      await broker?.stop()
    })

    it('writes a burst of lines, each naming its topic quoted', async () => {
      const attacker = await mqtt.connectAsync(broker.url, {
        protocolVersion: 5,
        clientId: 'attacker',
        reconnectPeriod: 0,
      })
      try {
        const prefix = notificationFilter('victim').slice(0, -1)
        for (let i = 0; i < 5000; i++) attacker.publish(`${prefix}${word(i)}`, 'x', { qos: 0 })
        // Delivered in order after them: once its line is written, the 5,000 were handled.
        await attacker.publishAsync(notificationTopic('victim', Buffer.from('k')), Notification.set(Buffer.from('v')), {
          qos: 1,
        })
      } finally {
        await attacker.endAsync()
      }
      await until(
        () => lines.some((l) => l.includes('dropped a notification for key')),
        `the last notification handled: ${lines.length} ${lines.slice(-3).join(' / ')}`,
        20_000,
      )
      const dropped = lines.filter((l) => l.includes('unexpected topic'))
      assert.ok(dropped.length >= 1 && dropped.length <= 21, `${dropped.length} lines`)
      assert.match(dropped[0]!, /unexpected topic "clients\/statestore\/v1\/.*\/command\/notify\/g"/)
    })
  })
})

/**
 * The aedes internals src/emulator/broker/broker.ts reads, checked on their own so that an aedes release
 * that changes them fails here with a message naming what changed (package.json pins aedes to the
 * version these tests passed on): `aedes.clients`, connected clients by id (isConnected and direct
 * delivery of notifications), and `client.subscriptions`, a client's filters by topic.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import mqtt, { type MqttClient } from 'mqtt'
import { startBroker, type EmbeddedBroker } from '../../../src/emulator'

/** aedes exports no package.json subpath: read it where Node would find the package. */
function installedVersion(name: string): string {
  for (const dir of module.paths) {
    try {
      return (JSON.parse(readFileSync(join(dir, name, 'package.json'), 'utf8')) as { version: string }).version
    } catch {
      // not in this node_modules
    }
  }
  return '(version unknown)'
}
const AEDES_VERSION = installedVersion('aedes')

function changed(what: string): string {
  return `aedes ${AEDES_VERSION} changed ${what}; src/emulator/broker/broker.ts (isConnected, deliverUnsubscribed) depends on it. Adapt it, then widen the aedes range in package.json.`
}

describe(`aedes ${AEDES_VERSION}: the internals the embedded broker reads`, function () {
  let broker: EmbeddedBroker
  let client: MqttClient
  before(async () => {
    broker = await startBroker({ port: 0 })
    client = await mqtt.connectAsync(broker.url, {
      protocolVersion: 5,
      clientId: 'aedes-internals',
      reconnectPeriod: 0,
    })
    await client.subscribeAsync('internals/+', { qos: 1 })
  })
  after(async () => {
    await client?.endAsync(true)
    await broker?.stop()
  })

  it('aedes.clients holds each connected client by its id, and client.subscriptions its filters by topic', () => {
    const clients = (broker.aedes as unknown as { clients?: unknown }).clients
    assert.ok(clients !== null && typeof clients === 'object', changed('or removed aedes.clients'))
    const entry = (clients as Record<string, unknown>)['aedes-internals'] as
      { id?: string; subscriptions?: unknown } | undefined
    assert.equal(entry?.id, 'aedes-internals', changed('aedes.clients (no longer keyed by client id)'))
    assert.ok(
      entry.subscriptions !== null && typeof entry.subscriptions === 'object',
      changed('or removed client.subscriptions'),
    )
    assert.ok(
      Object.keys(entry.subscriptions).includes('internals/+'),
      changed('client.subscriptions (no longer keyed by topic filter)'),
    )
    assert.equal(broker.isConnected('aedes-internals'), true)
  })
})

/**
 * The config node's cluster settings: the persistence property the cluster's Broker resource names
 * (a *set* node's "persist" was sent as `aio-persistence: true` whatever the broker asked, so the
 * key was not kept) and the metric category, both from the editor's fields to the wire.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { ALL, COMMON, TAB, configNode, helper, lastStatus, nextMessage, onTab } from './support'
import { until } from '../../support/wait'

const BROKER = `apiVersion: mqttbroker.iotoperations.azure.com/v1
kind: Broker
metadata: { name: default, namespace: azure-iot-operations }
spec:
  persistence:
    maxSize: 1GiB
    dynamicSettings: { userPropertyKey: keep-on-disk, userPropertyValue: "yes" }
`

describe('nodes: ss-config cluster settings', function () {
  let dir: string
  let emulator: Emulator
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'node-cluster-settings-'))
    writeFileSync(join(dir, 'broker.yaml'), BROKER)
    emulator = await startEmulator({
      listen: { host: '127.0.0.1', port: 0 },
      brokerConfigFile: join(dir, 'broker.yaml'),
      persistFile: join(dir, 'store.aof'),
      admin: true,
      logLevel: 'error',
    })
  })
  after(async () => {
    await emulator?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })
  afterEach(() => helper.unload())

  const setPersisted = async (config: Record<string, unknown>, key: string) => {
    await helper.load(ALL, [
      TAB,
      configNode(emulator.brokerUrl, config),
      onTab({ id: 'set', type: 'ss-set', store: 'cfg', key, keyType: 'str', persist: true, wires: [['out']] }),
      onTab({ id: 'out', type: 'helper' }),
    ])
    const out = nextMessage(helper.getNode('out'))
    helper.getNode('set').receive({ payload: 'v' })
    await out
    await helper.unload()
    return emulator.admin!.inspect(Buffer.from(key))!.persisted
  }

  it("a set node with persist asks with the property the config node's setting names", async () => {
    assert.equal(
      await setPersisted({}, 'node/default'),
      false,
      'aio-persistence: true is not what this broker asks for',
    )
    assert.equal(await setPersisted({ persistenceProperty: 'keep-on-disk=yes' }, 'node/named'), true)
  })
})

/**
 * `--clock-offset` rehearses a cluster whose clock is off by more than the minute the protocol
 * allows: a broker behind refuses the request (TimestampSkew), a broker ahead answers with a version
 * the client cannot take (ClockSkew); the node fails the msg with the code, and its status says it
 * in the catalogue's words.
 */
describe('nodes: a cluster whose clock is off (--clock-offset)', function () {
  afterEach(() => helper.unload())

  for (const [offset, code] of [
    [-90_000, 'TimestampSkew'],
    [90_000, 'ClockSkew'],
  ] as const) {
    it(`a broker ${offset < 0 ? 'behind' : 'ahead'} by 90 s: the set node fails with ${code}, and the status says so`, async () => {
      const emulator = await startEmulator({
        listen: { host: '127.0.0.1', port: 0 },
        clockOffsetMs: offset,
        logLevel: 'error',
      })
      try {
        await helper.load(ALL, [
          TAB,
          configNode(emulator.brokerUrl),
          onTab({ id: 'set', type: 'ss-set', store: 'cfg', key: 'skewed', keyType: 'str', wires: [[]] }),
          onTab({ id: 'catcher', type: 'catch', scope: null, uncaught: false, wires: [['caught']] }),
          onTab({ id: 'caught', type: 'helper' }),
        ])
        const caught = nextMessage(helper.getNode('caught'))
        helper.getNode('set').receive({ payload: 'v' })
        const error = (await caught).error as { code: string }
        assert.equal(error.code, code)
        await until(
          () => lastStatus(helper.getNode('set')).text === `node-red:common.status.error: ${COMMON}failure.${code}`,
          `the status names ${code}`,
        )
        await helper.unload()
      } finally {
        await emulator.stop()
      }
    })
  }
})

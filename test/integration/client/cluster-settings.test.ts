/**
 * The cluster's settings a client brings, end to end:
 * - the persistence property: a cluster's Broker resource may name it (`dynamicSettings`) other
 *   than `aio-persistence: true`, which the client always sent, so `persist: true` was not kept;
 *   now the client option, the context store's and the CLI's settings send the one the broker asks;
 * - `metriccategory` on CONNECT, which the broker's metrics count traffic under: this package's
 *   name by default, another on request, none when blank.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type AddressInfo, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import mqttPacket from 'mqtt-packet'
import { connectionFrom } from '../../../src/cli/connection'
import { ArgumentError } from '../../../src/diagnostics/errors'
import { StateStoreClient, type ClientOptions } from '../../../src/client'
import { resolveConfig } from '../../../src/context/config'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { until } from '../../support/wait'

const BROKER = `apiVersion: mqttbroker.iotoperations.azure.com/v1
kind: Broker
metadata: { name: default, namespace: azure-iot-operations }
spec:
  persistence:
    maxSize: 1GiB
    dynamicSettings:
      userPropertyKey: keep-on-disk
      userPropertyValue: "yes"
`

describe("client: the cluster's settings (persistence property, metric category)", function () {
  this.timeout(30_000)

  describe('the persistence property a Broker resource names', () => {
    let dir: string
    let emulator: Emulator
    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'cluster-settings-'))
      const file = join(dir, 'broker.yaml')
      writeFileSync(file, BROKER)
      emulator = await startEmulator({
        inProcessOnly: true,
        brokerConfigFile: file,
        persistFile: join(dir, 'store.aof'),
        admin: true,
        logLevel: 'error',
      })
    })
    after(async () => {
      await emulator?.stop()
      if (dir) rmSync(dir, { recursive: true, force: true })
    })

    const persisted = async (clientId: string, options: Partial<ClientOptions>): Promise<boolean> => {
      const client = new StateStoreClient({
        brokerUrl: emulator.brokerUrl,
        connectStream: emulator.connectInProcess!,
        clientId,
        ...options,
      })
      try {
        await client.set(`kept/${clientId}`, 'v', { persist: true })
      } finally {
        await client.close()
      }
      return emulator.admin!.inspect(Buffer.from(`kept/${clientId}`))!.persisted
    }

    it('keeps a key SET with persist: true when the client sends the property the broker names', async () => {
      assert.equal(
        await persisted('default-property', {}),
        false,
        'aio-persistence: true is not what this broker asks for',
      )
      assert.equal(
        await persisted('named-property', { persistenceProperty: { key: 'keep-on-disk', value: 'yes' } }),
        true,
      )
    })

    it('takes the property from the context store settings and the CLI as name=value, and refuses one without a name', () => {
      assert.deepEqual(resolveConfig({ persistenceProperty: 'keep-on-disk=yes' }, {}).client.persistenceProperty, {
        key: 'keep-on-disk',
        value: 'yes',
      })
      assert.deepEqual(
        resolveConfig({ persistenceProperty: { key: 'k', value: 'v' } }, {}).client.persistenceProperty,
        { key: 'k', value: 'v' },
      )
      assert.throws(
        () => resolveConfig({ persistenceProperty: '=yes' }, {}),
        /state store context: the persistence property must be written name=value/,
      )
      assert.deepEqual(connectionFrom({ 'persistence-property': 'keep-on-disk=yes' }, {}).options.persistenceProperty, {
        key: 'keep-on-disk',
        value: 'yes',
      })
      assert.throws(
        () => connectionFrom({ 'persistence-property': 'keep-on-disk' }, {}),
        /--persistence-property: the persistence property must be written name=value/,
      )
      assert.throws(
        () =>
          new StateStoreClient({
            brokerUrl: 'mqtt://127.0.0.1:1',
            clientId: 'x',
            persistenceProperty: { key: '', value: 'v' },
          }),
        ArgumentError,
      )
    })
  })

  describe('metriccategory on CONNECT', () => {
    let server: Server
    const connects: Array<Record<string, string | string[]> | undefined> = []
    before(async () => {
      // A listener that reads each CONNECT as the broker would, and answers nothing.
      server = createServer((socket) => {
        const parser = mqttPacket.parser({ protocolVersion: 5 })
        parser.on('packet', (packet) => {
          if (packet.cmd === 'connect')
            connects.push(packet.properties?.userProperties ? { ...packet.properties.userProperties } : undefined)
          socket.destroy()
        })
        socket.on('data', (d) => parser.parse(d))
        socket.on('error', () => {})
      })
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    })
    after(() => new Promise<void>((resolve) => server.close(() => resolve())))

    const connectOnce = async (options: Partial<ClientOptions>) => {
      const before = connects.length
      const { port } = server.address() as AddressInfo
      const client = new StateStoreClient({ brokerUrl: `mqtt://127.0.0.1:${port}`, clientId: 'metrics', ...options })
      client.on('error', () => {})
      client.ready().catch(() => {})
      try {
        await until(() => connects.length > before, 'a CONNECT')
      } finally {
        await client.close()
      }
      return connects[before]
    }

    it('names this package by default, another category on request, and none when blank', async () => {
      assert.deepEqual(await connectOnce({}), { metriccategory: 'node-red-contrib-aio-statestore' })
      assert.deepEqual(await connectOnce({ metricCategory: 'line-1-flows' }), { metriccategory: 'line-1-flows' })
      assert.equal(await connectOnce({ metricCategory: '' }), undefined)
      assert.equal(resolveConfig({ metricCategory: 'ctx' }, {}).client.metricCategory, 'ctx')
      assert.equal(connectionFrom({ 'metric-category': 'cli' }, {}).options.metricCategory, 'cli')
    })
  })
})

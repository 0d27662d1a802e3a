import assert from 'node:assert/strict'
import { StateStoreClient } from '../../../src/client'
import { inProcessConnector } from '../../../src/emulator'
import { acquireEmbedded, stopEmbedded } from '../../../src/emulator/embedded'

/**
 * The embedded emulator's loopback broker took any local client (SCAN, SET, SUBSCRIBE #), even under
 * Node-RED's adminAuth. Now it has no TCP port unless one is asked for
 * (AIO_STATESTORE_EMBEDDED_PORT); the config nodes and the context store reach it in-process.
 */
describe('security: the embedded emulator is reached from its own process only', function () {
  this.timeout(20_000)
  afterEach(async () => {
    delete process.env.AIO_STATESTORE_EMBEDDED_PORT
    await stopEmbedded()
  })

  it('has no TCP port: its URL names no host, and a client in this process still reaches it', async () => {
    const emulator = await acquireEmbedded(() => {})
    const url = new URL(emulator.brokerUrl)
    assert.equal(url.hostname, 'in-process.invalid')
    const connectStream = inProcessConnector(emulator.brokerUrl)
    assert.ok(connectStream)
    const inside = new StateStoreClient({ brokerUrl: emulator.brokerUrl, clientId: 'reach-inside', connectStream })
    try {
      await inside.ready({ timeoutMs: 5000 })
      assert.equal((await inside.set('k', 'v')).applied, true)
    } finally {
      await inside.close()
    }
  })

  it('listens on 127.0.0.1 when AIO_STATESTORE_EMBEDDED_PORT asks for a port', async () => {
    process.env.AIO_STATESTORE_EMBEDDED_PORT = '0'
    const emulator = await acquireEmbedded(() => {})
    const url = new URL(emulator.brokerUrl)
    assert.equal(url.hostname, '127.0.0.1')
    const outside = new StateStoreClient({ brokerUrl: emulator.brokerUrl, clientId: 'reach-tcp' })
    try {
      await outside.ready({ timeoutMs: 5000 })
    } finally {
      await outside.close()
    }
  })
})

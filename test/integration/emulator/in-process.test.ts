import assert from 'node:assert/strict'
import { Socket } from 'node:net'
import mqtt from 'mqtt'
import { StateStoreClient } from '../../../src/client'
import { inProcessConnector, startBroker, startEmulator } from '../../../src/emulator'
import { inProcessPair } from '../../../src/emulator/broker/in-process'
import { until } from '../../support/wait'

describe('in-process connections to the embedded broker (no loopback TCP)', function () {
  this.timeout(10_000)

  it('the stream pair carries bytes in order both ways, holds a writer back while its reader pauses, and closes both ends together', async () => {
    const [a, b] = inProcessPair()
    const received: Buffer[] = []
    b.on('data', (chunk: Buffer) => received.push(chunk))
    b.pause()
    const chunk = Buffer.alloc(4096, 1)
    let written = 0
    let refused = false
    for (let i = 0; i < 200 && !refused; i++) {
      refused = !a.write(Buffer.concat([Buffer.from([i]), chunk]))
      written++
    }
    assert.ok(refused, 'a writer whose reader does not read is told to wait (backpressure)')
    b.resume()
    await until(() => Buffer.concat(received).length === written * 4097, 'every byte')
    const all = Buffer.concat(received)
    for (let i = 0; i < written; i++) assert.equal(all[i * 4097], i, `chunk ${i} in its place`)
    const back = new Promise<Buffer>((resolve) => a.once('data', resolve))
    b.write('pong')
    assert.equal((await back).toString(), 'pong')
    const closed = new Promise((resolve) => a.once('close', resolve))
    b.destroy()
    await closed
    assert.ok(a.destroyed)
  })

  it('a client on connectStream gets, sets and is notified like one over TCP, and the broker sees it come and go', async () => {
    const emulator = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, logLevel: 'silent' })
    assert.ok(emulator.connectInProcess, 'the embedded broker offers in-process connections')
    const inProcess = new StateStoreClient({
      brokerUrl: emulator.brokerUrl,
      clientId: 'in-process',
      connectStream: emulator.connectInProcess,
    })
    const overTcp = new StateStoreClient({ brokerUrl: emulator.brokerUrl, clientId: 'over-tcp' })
    try {
      await Promise.all([inProcess.ready({ timeoutMs: 5000 }), overTcp.ready({ timeoutMs: 5000 })])
      const seen: string[] = []
      const observation = await inProcess.observe('watched', (n) =>
        seen.push(`${n.operation} ${n.value?.toString() ?? ''}`),
      )
      await overTcp.set('watched', 'from tcp')
      assert.equal((await inProcess.get('watched')).value?.toString(), 'from tcp')
      await inProcess.set('watched', 'from in-process')
      assert.equal((await overTcp.get('watched')).value?.toString(), 'from in-process')
      await until(() => seen.length === 2, 'two notifications')
      assert.deepEqual(seen, ['SET from tcp', 'SET from in-process'])
      await observation.close()
    } finally {
      await Promise.all([inProcess.close(), overTcp.close()])
      await emulator.stop()
    }
  })

  it('the broker authenticates, tracks and disconnects an in-process client as any other', async () => {
    const broker = await startBroker({ port: 0, auth: { users: { alice: 'secret' } } })
    try {
      const refused = new mqtt.MqttClient(() => broker.connectInProcess(), {
        protocolVersion: 5,
        clientId: 'mallory',
        username: 'alice',
        password: 'wrong',
        reconnectPeriod: 0,
      })
      const code = await new Promise<number>((resolve) =>
        refused.once('error', (err) => resolve(Number((err as { code?: unknown }).code))),
      )
      assert.equal(code, 0x86, 'bad user name or password')
      await refused.endAsync(true)

      const client = new mqtt.MqttClient(() => broker.connectInProcess(), {
        protocolVersion: 5,
        clientId: 'alice-1',
        username: 'alice',
        password: 'secret',
        reconnectPeriod: 0,
      })
      await new Promise((resolve) => client.once('connect', resolve))
      assert.ok(broker.isConnected('alice-1'))
      const gone = new Promise<string>((resolve) => broker.onClientDisconnect(resolve))
      client.stream.destroy()
      assert.equal(await gone, 'alice-1', 'a dropped in-process connection is a disconnect')
      await client.endAsync(true)

      const polite = new mqtt.MqttClient(() => broker.connectInProcess(), {
        protocolVersion: 5,
        clientId: 'alice-2',
        username: 'alice',
        password: 'secret',
        reconnectPeriod: 0,
      })
      await new Promise((resolve) => polite.once('connect', resolve))
      const left = new Promise<string>((resolve) => broker.onClientDisconnect((id) => id === 'alice-2' && resolve(id)))
      const closed = new Promise((resolve) => polite.stream.once('close', resolve))
      await polite.endAsync()
      assert.equal(await left, 'alice-2', 'a DISCONNECT over an in-process connection is seen by the broker')
      await closed
      assert.ok(!broker.isConnected('alice-2'))
    } finally {
      await broker.stop()
    }
    const refused = broker.connectInProcess()
    const failure = await new Promise<Error>((resolve) => refused.once('error', resolve))
    assert.match(failure.message, /stopped/, 'a stopped broker refuses like a closed port, without throwing')
  })

  it('a connector for a broker of this process connects over TCP while none of this process serves the URL, so a client reaches whoever serves it next', async () => {
    const first = await startBroker({ port: 0 })
    const url = first.url
    const connector = inProcessConnector(url)
    assert.ok(connector, 'a broker runs here at that URL')
    assert.equal(inProcessConnector('mqtt://127.0.0.1:1'), null)
    const client = new StateStoreClient({
      brokerUrl: url,
      clientId: 'follower',
      connectStream: connector,
      reconnectMinMs: 50,
      reconnectMaxMs: 200,
    })
    client.on('error', () => {})
    const emulator = await startEmulator({ brokerUrl: url, logLevel: 'silent' })
    try {
      await client.ready({ timeoutMs: 5000 })
      await client.set('k', 'before')
      await emulator.stop()
      await first.stop()
      assert.equal(inProcessConnector(url), null)
      const meanwhile = connector()
      meanwhile.on('error', () => {})
      assert.ok(meanwhile instanceof Socket, 'with no broker of this process at the URL, a TCP connection to it')
      meanwhile.destroy()
      // The same port again, served by a new broker: the client gets back to it.
      const second = await startBroker({ port: Number(new URL(url).port) })
      const again = await startEmulator({ brokerUrl: url, logLevel: 'silent' })
      try {
        await until(() => client.status.state === 'connected', 'the client back online')
        await client.set('k', 'after')
        assert.equal((await client.get('k')).value?.toString(), 'after')
      } finally {
        await client.close()
        await again.stop()
        await second.stop()
      }
    } finally {
      await client.close()
      await emulator.stop()
      await first.stop()
    }
  })
})

/**
 * The longest key that can be watched: its notification topic carries the client id and the key in
 * hex, and an MQTT topic is at most 65,535 bytes. At the limit (and one byte under) a watch works end
 * to end; one byte over, the client refuses at once with an ArgumentError, ss-watch sends a typed
 * error to Catch, and the emulator answers KEYNOTIFY with -ERR instead of registering a watch it
 * could never serve.
 */
import assert from 'node:assert/strict'
import { StateStoreClient, type KeyNotification } from '../../../src/client'
import { ArgumentError } from '../../../src/diagnostics/errors'
import { encodeCommand } from '../../../src/resp'
import { MAX_TOPIC_BYTES, maxNotifiedKeyBytes, notificationTopic } from '../../../src/protocol'
import { RawClient } from '../emulator/raw-client'
import { ALL, COMMON, flowWith, helper, lastStatus, listen, nextMessage, useStore } from '../nodes/support'
import { until } from '../../support/wait'
import { ClientPool } from '../../support/clients'

/** An ASCII key, so characters and bytes agree. */
const keyOf = (bytes: number, mark: string) => `${mark}/`.padEnd(bytes, 'k')

describe('the watched-key limit', function () {
  const store = useStore()

  it('is the longest key whose notification topic fits in an MQTT topic', () => {
    for (const clientId of ['a', 'client-id1', 'ü'.repeat(200)]) {
      const max = maxNotifiedKeyBytes(clientId)
      assert.ok(Buffer.byteLength(notificationTopic(clientId, Buffer.alloc(max, 0x6b))) <= MAX_TOPIC_BYTES, clientId)
      assert.ok(Buffer.byteLength(notificationTopic(clientId, Buffer.alloc(max + 1, 0x6b))) > MAX_TOPIC_BYTES, clientId)
    }
    assert.equal(maxNotifiedKeyBytes('client-id1'), 32_720)
  })

  describe('client', () => {
    const clients = new ClientPool()
    afterEach(async () => {
      await clients.closeAll()
    })

    for (const over of [-1, 0]) {
      it(`observes a key of the limit ${over === 0 ? '' : '- 1 '}bytes and receives its notification`, async () => {
        const watcher = new StateStoreClient({ brokerUrl: store.emulator.brokerUrl, clientId: `limit-watcher${over}` })
        const writer = new StateStoreClient({ brokerUrl: store.emulator.brokerUrl, clientId: `limit-writer${over}` })
        clients.add(watcher, writer)
        const key = keyOf(maxNotifiedKeyBytes(watcher.clientId) + over, `client${over}`)
        const seen: KeyNotification[] = []
        await watcher.observe(key, (n) => seen.push(n))
        await writer.set(key, 'v')
        await until(() => seen.length === 1, 'the notification')
        assert.equal(seen[0]!.key.toString(), key)
        assert.equal(seen[0]!.value?.toString(), 'v')
      })
    }

    it('refuses a key of the limit + 1 bytes at once, naming the limit, without waiting for a connection', async () => {
      // Nothing listens on port 9: were the key sent, observe would wait for the connection for a minute.
      const client = new StateStoreClient({
        brokerUrl: 'mqtt://127.0.0.1:9',
        clientId: 'limit-refused',
        requestTimeoutMs: 60_000,
      })
      clients.add(client)
      const max = maxNotifiedKeyBytes(client.clientId)
      await assert.rejects(
        client.observe(keyOf(max + 1, 'over'), () => {}),
        (err: unknown) => {
          assert.ok(err instanceof ArgumentError, String(err))
          assert.match(err.message, new RegExp(`${max + 1} bytes long; a watched key can be at most ${max} bytes`))
          return true
        },
      )
    })
  })

  describe('emulator', () => {
    let raw: RawClient
    before(async () => {
      raw = await RawClient.connect(store.emulator.brokerUrl, 'limit-raw')
    })
    after(() => raw?.close())

    for (const over of [-1, 0]) {
      it(`registers KEYNOTIFY for a key of the limit ${over === 0 ? '' : '- 1 '}bytes and publishes its notification`, async () => {
        const key = keyOf(maxNotifiedKeyBytes(raw.clientId) + over, `emulator${over}`)
        const answer = await raw.request(encodeCommand(['KEYNOTIFY', key]))
        assert.equal(answer.payload.toString(), '+OK\r\n')
        await raw.request(encodeCommand(['SET', key, 'v']))
        const n = await raw.nextNotification()
        assert.equal(n.key.toString(), key)
      })
    }

    it('answers KEYNOTIFY for a key of the limit + 1 bytes with -ERR naming the limit, and keeps serving', async () => {
      const max = maxNotifiedKeyBytes(raw.clientId)
      const key = keyOf(max + 1, 'emulator-over')
      const answer = await raw.request(encodeCommand(['KEYNOTIFY', key]))
      assert.equal(
        answer.payload.toString(),
        `-ERR the key is too long to be notified: at most ${max} bytes for this client id\r\n`,
      )
      assert.equal(
        (await raw.request(encodeCommand(['SET', key, 'stored']))).payload.toString(),
        '+OK\r\n',
        'the key itself can be stored',
      )
      assert.equal((await raw.request(encodeCommand(['GET', key]))).payload.toString(), '$6\r\nstored\r\n')
      assert.equal(raw.notifications.length, 0, 'no watch was registered')
    })
  })

  describe('ss-watch', () => {
    it('watches keys of the limit - 1 and the limit, and sends a key of the limit + 1 to Catch with KeyTooLong', async () => {
      const clientId = 'limit-node'
      await helper.load(
        ALL,
        flowWith(store.url, { id: 'watch', type: 'ss-watch', keys: '', decode: 'utf8' }, 1, { clientId }),
      )
      const node = helper.getNode('watch')
      const out = helper.getNode('out1')
      const caught = helper.getNode('caught')
      listen(out, caught)
      await until(() => lastStatus(node).fill === 'green', 'connected')
      const max = maxNotifiedKeyBytes(clientId)

      const c = nextMessage(caught)
      node.receive({ action: 'watch', topic: keyOf(max + 1, 'node-over') })
      const error = (await c).error as { code: string; message: string }
      assert.equal(error.code, 'KeyTooLong')
      assert.ok(error.message.startsWith(`${COMMON}errors.keyTooLongToWatch`), error.message)

      const keys = [keyOf(max - 1, 'node-1'), keyOf(max, 'node0')]
      node.receive({ action: 'watch', topic: keys })
      await until(() => lastStatus(node).text === `${COMMON}status.watching 2`, 'watching both keys')
      const writer = new StateStoreClient({ brokerUrl: store.emulator.brokerUrl, clientId: 'limit-node-writer' })
      try {
        for (const key of keys) {
          await writer.set(key, 'v')
          const m = await nextMessage(out)
          assert.equal(m.topic, key)
          assert.equal(m.payload, 'v')
        }
      } finally {
        await writer.close()
      }
    })
  })
})

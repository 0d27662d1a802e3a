/**
 * The AIO broker's subscriber queue limit with DropOldest (Broker
 * `spec.advanced.clients.subscriberQueueLimit`): a slow watcher loses the oldest queued key
 * notifications, and nothing tells it. A watcher whose last notification of a key was dropped
 * stayed wrong until the key changed again. Now the client reads its observed keys again every
 * `reconcileIntervalMs` and delivers what changed (`reconciled: true`), counted in
 * `lostNotifications`; a client with the reads off keeps the stale value, which is what the
 * emulator's queue limit lets a user see before a cluster shows it.
 */
import assert from 'node:assert/strict'
import { StateStoreClient, type KeyNotification } from '../../../src/client'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { TcpRelay } from '../../support/relay'
import { scaled } from '../../support/deadline'
import { until } from '../../support/wait'
import { contextStore, uniquePrefix, type TestStore } from '../context/support'

const KEYS = ['q/0', 'q/1', 'q/2', 'q/3', 'q/4']

describe('emulator: a subscriber queue limit with DropOldest, and watchers that must not stay wrong', function () {
  this.timeout(scaled(60_000))
  let emulator: Emulator
  let relay: TcpRelay
  const lines: string[] = []
  const clients: StateStoreClient[] = []
  const stores: TestStore[] = []

  before(async () => {
    emulator = await startEmulator({
      listen: { host: '127.0.0.1', port: 0 },
      subscriberQueue: { length: 2, strategy: 'DropOldest' },
      logLevel: 'warn',
      logBurst: Infinity,
      logger: (level, message) => lines.push(`${level} ${message}`),
    })
    relay = await TcpRelay.start(emulator.brokerUrl)
  })
  after(async () => {
    for (const s of stores) await s.close()
    for (const c of clients) await c.close()
    await relay?.stop()
    await emulator?.stop()
  })

  /** A watcher of every key through the relay, with what it last heard of each. */
  async function watcher(clientId: string, reconcileIntervalMs: number) {
    const client = new StateStoreClient({ brokerUrl: relay.url, clientId, reconcileIntervalMs })
    clients.push(client)
    const last = new Map<string, string | null>()
    const reconciled: KeyNotification[] = []
    for (const key of KEYS) {
      const observation = await client.observe(key, (n) => {
        last.set(n.key.toString(), n.value?.toString() ?? null)
        if (n.reconciled) reconciled.push(n)
      })
      last.set(key, observation.initial?.value?.toString() ?? null)
    }
    return { client, last, reconciled }
  }

  it('drops the oldest waiting notification of a watcher that does not acknowledge; the periodic read finds the change, the watcher without it stays behind', async () => {
    const writer = new StateStoreClient({ brokerUrl: emulator.brokerUrl, clientId: 'queue-writer' })
    clients.push(writer)
    for (const key of KEYS) await writer.set(key, 'v1')
    // The read interval only paces the reads; nothing here waits for it to pass a number of times.
    const reading = await watcher('queue-watcher', scaled(300))
    const notReading = await watcher('queue-watcher-no-reads', 0)
    for (const w of [reading, notReading]) assert.deepEqual([...w.last.values()], ['v1', 'v1', 'v1', 'v1', 'v1'])

    // The watchers stop acknowledging (a stalled process, as the broker sees it): each has at most
    // two notifications sent and unacknowledged and two waiting; a fifth pushes the oldest waiting out.
    relay.freeze()
    for (const key of KEYS) await writer.set(key, 'v2')
    const dropsOf = (clientId: string) =>
      lines
        .filter((l) =>
          l.includes(`client ${JSON.stringify(clientId)}: its subscriber queue is full, the oldest message dropped`),
        )
        .map((l) => Buffer.from(/notify\/([0-9A-F]+)"/.exec(l)![1]!, 'hex').toString())
    await until(
      () => dropsOf('queue-watcher').length > 0 && dropsOf('queue-watcher-no-reads').length > 0,
      'a drop for each watcher',
    )
    relay.thaw()

    await until(() => KEYS.every((k) => reading.last.get(k) === 'v2'), 'the reading watcher has every change')
    const dropped = dropsOf('queue-watcher')
    await until(() => reading.client.lostNotifications === dropped.length, 'the reads counted each lost notification')
    assert.deepEqual(
      reading.reconciled.map((n) => `${n.key.toString()}=${n.value?.toString()}`).sort(),
      dropped.map((k) => `${k}=v2`).sort(),
      'each dropped change came reconciled',
    )
    // The other watcher got every notification the broker still had, and not the dropped ones.
    const lost = dropsOf('queue-watcher-no-reads')
    await until(
      () => KEYS.filter((k) => !lost.includes(k)).every((k) => notReading.last.get(k) === 'v2'),
      'the rest reached the other watcher',
    )
    for (const key of lost)
      assert.equal(
        notReading.last.get(key),
        'v1',
        `without the reads, the dropped last notification of ${key} leaves the watcher wrong`,
      )
    assert.equal(notReading.client.lostNotifications, 0)
  })

  it("the context store's cache finds the change whose notification the broker dropped, and says so in its log", async () => {
    const prefix = uniquePrefix()
    const reading = contextStore({
      broker: relay.url,
      prefix,
      clientId: 'ctx-queue-reader',
      reconcileInterval: scaled(300),
    })
    const writing = contextStore({ broker: emulator.brokerUrl, prefix, clientId: 'ctx-queue-writer' })
    stores.push(reading, writing)
    await reading.open()
    await writing.open()
    const keys = ['c0', 'c1', 'c2', 'c3', 'c4', 'c5']
    for (const k of keys) writing.set('global', k, 1)
    await until(() => keys.every((k) => reading.get('global', k) === 1), 'the reader caches every key')
    relay.freeze()
    const before = lines.filter((l) => l.includes('client "ctx-queue-reader": its subscriber queue is full')).length
    for (const k of keys) writing.set('global', k, 2)
    await until(
      () => lines.filter((l) => l.includes('client "ctx-queue-reader": its subscriber queue is full')).length > before,
      'a drop for the reader',
    )
    relay.thaw()
    await until(() => keys.every((k) => reading.get('global', k) === 2), "the reader's cache has every change")
    await until(
      () =>
        reading.logs.some(
          (l) => l.level === 'warn' && /changed without a notification while connected/.test(l.message),
        ),
      'the reads said so',
    )
  })
})

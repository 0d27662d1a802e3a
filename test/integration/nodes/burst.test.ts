/**
 * What a *split* of a big array does to *set key*: one Function node sends 50,000 msgs of 1 KB at
 * once into a *set key* node with its default settings, on the embedded store and through
 * mosquitto. Every msg is written; none reaches the Catch node.
 */
import assert from 'node:assert/strict'
import { StateStoreClient } from '../../../src/client'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { embeddedEmulator, stopEmbedded } from '../../../nodes/config/embedded'
import { mosquittoUrl } from '../../support/broker'
import { scaled } from '../../support/deadline'
import { until } from '../../support/wait'
import { ALL, TAB, helper, onTab, redModule, type TestNode } from './support'

const FUNCTION = redModule('@node-red/nodes/core/function/10-function.js')
const BURST = 50_000

/** A Function node that sends BURST msgs in one call, each with its own key (msg.topic) and 1 KB value. */
function burstFlow(config: Record<string, unknown>, prefix: string): unknown[] {
  const func = [
    `const value = 'x'.repeat(1000);`,
    `for (let i = 0; i < ${BURST}; i++) node.send({ topic: '${prefix}/' + i, payload: value + ':' + i });`,
    'return null;',
  ].join('\n')
  return [
    TAB,
    { id: 'cfg', type: 'ss-config', name: 'store', ...config },
    onTab({ id: 'split', type: 'function', func, outputs: 1, wires: [['set']] }),
    onTab({ id: 'set', type: 'ss-set', store: 'cfg', wires: [['written']] }),
    onTab({ id: 'written', type: 'helper' }),
    onTab({ id: 'catcher', type: 'catch', scope: null, uncaught: false, wires: [['caught']] }),
    onTab({ id: 'caught', type: 'helper' }),
  ]
}

function counter(node: TestNode): { count: number; first?: Record<string, unknown> } {
  const seen: { count: number; first?: Record<string, unknown> } = { count: 0 }
  node.on('input', (msg: Record<string, unknown>) => {
    seen.count++
    seen.first ??= msg
  })
  return seen
}

/** Sends the burst, waits for every msg to come out of *set key* or reach Catch, and checks the store holds all. */
async function burst(
  config: Record<string, unknown>,
  reader: () => Promise<StateStoreClient>,
  prefix: string,
): Promise<void> {
  await helper.load([...ALL, FUNCTION], burstFlow(config, prefix))
  const written = counter(helper.getNode('written'))
  const caught = counter(helper.getNode('caught'))
  helper.getNode('split').receive({})
  await until(() => written.count + caught.count === BURST, `all ${BURST} msgs out of set key or at Catch`, 120_000, 50)
  assert.deepEqual(
    { written: written.count, caught: caught.count, firstError: caught.first?.error },
    { written: BURST, caught: 0, firstError: undefined },
  )
  const client = await reader()
  try {
    let keys = 0
    for await (const page of client.scan(`${prefix}/*`)) keys += page.length
    assert.equal(keys, BURST, 'every key is in the store')
    for (const i of [0, 1, BURST / 2, BURST - 1]) {
      assert.equal((await client.get(`${prefix}/${i}`)).value?.toString(), `${'x'.repeat(1000)}:${i}`)
    }
  } finally {
    await client.close()
  }
}

describe('nodes: a burst of 50,000 msgs from one Function call into set key (default settings)', function () {
  // 50,000 msgs through Node-RED, the client, a broker and the emulator: seconds on a quiet machine, scaled on a busy one.
  this.timeout(180_000)
  afterEach(() => helper.unload())

  it('on the embedded store: all written, none to Catch', async function () {
    after(() => stopEmbedded())
    const prefix = `burst-${process.pid}`
    await burst(
      { embedded: true },
      async () => {
        const emulator = await embeddedEmulator()
        const connect = emulator?.connectInProcess
        assert.ok(emulator && connect, 'the embedded emulator runs, reached in process')
        const client = new StateStoreClient({
          brokerUrl: emulator.brokerUrl,
          connectStream: connect,
          clientId: `${prefix}-reader`,
        })
        await client.ready({ timeoutMs: scaled(5000) })
        return client
      },
      prefix,
    )
  })

  describe('through mosquitto', function () {
    let emulator: Emulator | null = null
    let url = ''
    before(async function () {
      url = await mosquittoUrl(this)
      emulator = await startEmulator({ brokerUrl: url, logLevel: 'error' })
    })
    after(() => emulator?.stop())

    it('all written, none to Catch', async function () {
      const prefix = `burst-mq-${process.pid}-${Date.now()}`
      await burst(
        { broker: url, clientId: `${prefix}-nodered` },
        async () => {
          const client = new StateStoreClient({ brokerUrl: url, clientId: `${prefix}-reader` })
          await client.ready({ timeoutMs: scaled(5000) })
          return client
        },
        prefix,
      )
    })
  })
})

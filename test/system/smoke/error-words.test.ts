// What a flow's Catch node reads when the store refuses a msg, in a real Node-RED 5 runtime (its
// catalogue loaded, the flow deployed through the editor's API): the key, and what to do, as the
// CLI words the same refusals; the code stays the one to act on.
import { strict as assert } from 'node:assert'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { FROM_WORKING_TREE, runtimeSettings, writeSettings } from '../../../dev/node-red'
import { freePort } from '../../../dev/ports'
import { StateStoreClient } from '../../../src/client'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { Hlc } from '../../../src/hlc'
import { debugValue, NodeRedProcess, RED_JS, type Comms } from './node-red'

interface Caught {
  code: string
  message: string
}

describe('smoke: the errors a flow sees name the key and say what to do', function () {
  this.timeout(90_000)
  let work = ''
  let emulator: Emulator
  let red: NodeRedProcess
  let comms: Comms

  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'aio-ss-error-words-'))
    emulator = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, logLevel: 'error' })
    mkdirSync(join(work, 'user'))
    writeSettings(join(work, 'settings.js'), runtimeSettings({ ...FROM_WORKING_TREE, lang: 'en-US' }))
    red = new NodeRedProcess(RED_JS[5], join(work, 'user'), await freePort(), join(work, 'settings.js'))
    await red.start(30_000)
    comms = await red.comms()
    const closed = await freePort()
    const on = (n: Record<string, unknown>) => ({ z: 'tab', x: 100, y: 100, wires: [], ...n })
    await red.deploy(
      [
        { id: 'tab', type: 'tab', label: 'errors' },
        { id: 'cfg', type: 'ss-config', name: 'store', broker: emulator.brokerUrl, clientId: 'error-words' },
        // Nothing listens there; a msg fails at once.
        {
          id: 'downCfg',
          type: 'ss-config',
          name: 'gone',
          broker: `mqtt://127.0.0.1:${closed}`,
          clientId: 'error-words-gone',
          connectionWait: '0',
        },
        on({
          id: 'write',
          type: 'inject',
          props: [{ p: 'payload' }],
          payload: 'unfenced',
          payloadType: 'str',
          wires: [['set']],
        }),
        on({ id: 'set', type: 'ss-set', store: 'cfg', key: 'words/fenced', keyType: 'str', fencingTokenType: 'none' }),
        on({ id: 'read', type: 'inject', props: [{ p: 'payload' }], wires: [['get']] }),
        on({ id: 'get', type: 'ss-get', store: 'downCfg', key: 'words/down', keyType: 'str' }),
        on({ id: 'catch', type: 'catch', scope: null, uncaught: false, wires: [['dbg']] }),
        on({ id: 'dbg', type: 'debug', active: true, tosidebar: true, complete: 'error', targetType: 'msg' }),
      ],
      comms,
    )
  })

  after(async () => {
    comms?.close()
    await red?.stop()
    await emulator?.stop()
    if (work) rmSync(work, { recursive: true, force: true })
  })

  async function caughtAfter(inject: string): Promise<Caught> {
    const seen = comms.debug.length
    await red.inject(inject)
    return debugValue(
      await comms.waitFor((d) => d.slice(seen).find((m) => m.id === 'dbg'), 20_000, `the Catch node's msg (${inject})`),
    ) as Caught
  }

  it('MissingFencingToken: names the key and the lock that writes it', async () => {
    // The key as a lock's writer left it: protected by a fencing token.
    const client = new StateStoreClient({ brokerUrl: emulator.brokerUrl, clientId: 'error-words-fencer' })
    try {
      await client.set('words/fenced', 'fenced', { fencingToken: new Hlc(Date.now(), 0, 'x') })
    } finally {
      await client.close()
    }
    const caught = await caughtAfter('write')
    assert.equal(caught.code, 'MissingFencingToken')
    assert.match(caught.message, /^key "words\/fenced": /)
    assert.match(caught.message, /holding a lock .*msg\.fencingToken.*update key/)
  })

  it('NotConnected: names the key, the reason and the config node fields to check', async () => {
    const caught = await caughtAfter('read')
    assert.equal(caught.code, 'NotConnected', caught.message + red.log)
    assert.match(caught.message, /^key "words\/down": /)
    assert.match(caught.message, /ECONNREFUSED/)
    assert.match(caught.message, /start the broker, or correct the config node's Broker URL/)
  })
})

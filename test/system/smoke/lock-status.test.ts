// A waiting msg shows on the canvas: the lock node's status counts the msgs of the node waiting for
// a lock ("acquired · 3 waiting"), in a real Node-RED 5 runtime, the flow deployed through the
// editor's API and its inject pressed four times at once, as a user clicks.
import { strict as assert } from 'node:assert'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { FROM_WORKING_TREE, runtimeSettings, writeSettings } from '../../../dev/node-red'
import { freePort } from '../../../dev/ports'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { scaled } from '../../support/deadline'
import { until } from '../../support/wait'
import { NodeRedProcess, RED_JS, type Comms } from './node-red'

describe('smoke: the lock node’s status counts the msgs waiting', function () {
  this.timeout(90_000)
  let work = ''
  let emulator: Emulator
  let red: NodeRedProcess
  let comms: Comms

  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'aio-ss-lock-status-'))
    emulator = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, logLevel: 'error' })
    mkdirSync(join(work, 'user'))
    writeSettings(join(work, 'settings.js'), runtimeSettings({ ...FROM_WORKING_TREE, lang: 'en-US' }))
    red = new NodeRedProcess(RED_JS[5], join(work, 'user'), await freePort(), join(work, 'settings.js'))
    await red.start(30_000)
    comms = await red.comms()
  })

  after(async () => {
    comms?.close()
    await red?.stop()
    await emulator?.stop()
    if (work) rmSync(work, { recursive: true, force: true })
  })

  it('shows "acquired · 3 waiting" while three msgs wait behind a hold, and counts down as holds end', async () => {
    const on = (n: Record<string, unknown>) => ({ z: 'tab', x: 100, y: 100, wires: [], ...n })
    // The waits outlast any load; the holds end only when released.
    const wait = String(scaled(120_000))
    await red.deploy(
      [
        { id: 'tab', type: 'tab', label: 'lock status' },
        { id: 'cfg', type: 'ss-config', name: 'store', broker: emulator.brokerUrl, clientId: 'lock-status' },
        on({
          id: 'press',
          type: 'inject',
          props: [{ p: 'payload' }],
          payload: '',
          payloadType: 'date',
          wires: [['take']],
        }),
        on({
          id: 'take',
          type: 'ss-lock',
          store: 'cfg',
          key: 'status/lock',
          keyType: 'str',
          mode: 'lock',
          action: 'acquire',
          timeout: wait,
          holdMs: '0',
          wires: [['keep'], []],
        }),
        // Each acquired msg's msg.lock is kept, so a release node elsewhere can end the latest hold.
        on({ id: 'keep', type: 'change', rules: [{ t: 'set', p: 'held', pt: 'flow', to: 'lock', tot: 'msg' }] }),
        on({
          id: 'free',
          type: 'inject',
          props: [{ p: 'payload' }],
          payload: '',
          payloadType: 'date',
          wires: [['recall']],
        }),
        on({
          id: 'recall',
          type: 'change',
          rules: [{ t: 'set', p: 'lock', pt: 'msg', to: 'held', tot: 'flow' }],
          wires: [['release']],
        }),
        on({
          id: 'release',
          type: 'ss-lock',
          store: 'cfg',
          key: 'status/lock',
          keyType: 'str',
          mode: 'lock',
          action: 'release',
          wires: [[], []],
        }),
      ],
      comms,
    )
    await until(() => comms.status.get('take')?.text === 'connected', 'the lock node connected', 20_000, 20)
    await Promise.all([1, 2, 3, 4].map(() => red.inject('press')))
    const text = () => comms.status.get('take')?.text
    await until(() => text() === 'acquired · 3 waiting', `"acquired · 3 waiting" (shows ${text()})`, 20_000, 20)
    assert.equal(comms.status.get('take')?.fill, 'green', 'a hold in the connection’s colour')
    // A release node elsewhere ends the hold (by the msg.lock the first msg carried): the next msg holds, two wait.
    await red.inject('free')
    await until(
      () => text() === 'acquired · 2 waiting',
      `"acquired · 2 waiting" (shows ${text()}; the release node: ${comms.status.get('release')?.text})`,
      20_000,
      20,
    )
  })
})

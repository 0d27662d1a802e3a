// A Node-RED 5 runtime (its own CLI, this package from the working tree) started with nothing but the
// `.env` of `aio-statestore-emulator --dev`'s layout in its environment, against the emulator's
// TLS + SAT listener: a config node with a blank Broker URL and Client ID is connected, a set → get
// flow works over TLS + SAT, and the context store with an empty config reaches the same store.
import { strict as assert } from 'node:assert'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  FROM_WORKING_TREE,
  RED_JS,
  runtimeSettings,
  startNodeRed,
  writeSettings,
  type NodeRedChild,
} from '../../../dev/node-red'
import { freePort } from '../../../dev/ports'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { prepareDevLayout, writeDevEnv } from '../../../src/emulator/dev-layout'
import { childEnvWithoutAio, repoRoot } from './node-red'
import { readDotEnv } from '../../support/dev-env'
import { scaled } from '../../support/deadline'

const TAB = 'd0e1a0b0c0d0e001'
const STORE = 'd0e1a0b0c0d0e002'
const flows = [
  { id: TAB, type: 'tab', label: 'dev layout' },
  { id: STORE, type: 'ss-config', name: 'from the environment', broker: '', clientId: '' },
  {
    id: 'd0e1a0b0c0d0e003',
    type: 'http in',
    z: TAB,
    url: '/roundtrip',
    method: 'post',
    x: 100,
    y: 100,
    wires: [['d0e1a0b0c0d0e004']],
  },
  {
    id: 'd0e1a0b0c0d0e004',
    type: 'ss-set',
    z: TAB,
    store: STORE,
    key: 'dev/node-red',
    keyType: 'str',
    x: 300,
    y: 100,
    wires: [['d0e1a0b0c0d0e005']],
  },
  {
    id: 'd0e1a0b0c0d0e005',
    type: 'ss-get',
    z: TAB,
    store: STORE,
    key: 'dev/node-red',
    keyType: 'str',
    x: 500,
    y: 100,
    wires: [['d0e1a0b0c0d0e006']],
  },
  { id: 'd0e1a0b0c0d0e006', type: 'http response', z: TAB, x: 700, y: 100, wires: [] },
  {
    id: 'd0e1a0b0c0d0e007',
    type: 'http in',
    z: TAB,
    url: '/context',
    method: 'post',
    x: 100,
    y: 200,
    wires: [['d0e1a0b0c0d0e008']],
  },
  {
    id: 'd0e1a0b0c0d0e008',
    type: 'function',
    z: TAB,
    func: "global.set('dev-context', msg.payload, 'aio', (err) => {\n  if (err) return node.error(err, msg)\n  global.get('dev-context', 'aio', (err2, v) => { msg.payload = String(v); node.send(msg) })\n})\nreturn",
    outputs: 1,
    x: 300,
    y: 200,
    wires: [['d0e1a0b0c0d0e006']],
  },
]

describe("smoke: Node-RED with only the dev layout's .env, over TLS + SAT", function () {
  this.timeout(90_000)
  let dir = ''
  let emulator: Emulator | null = null
  let red: NodeRedChild | null = null

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'aio-ss-dev-red-'))
    const layout = prepareDevLayout(join(dir, 'layout'))
    emulator = await startEmulator({
      listen: { host: '127.0.0.1', port: 0 },
      logLevel: 'error',
      tlsListeners: [
        {
          port: 0,
          certFile: layout.brokerCertFile,
          keyFile: layout.brokerKeyFile,
          authentication: { method: 'sat', tokenFiles: [{ file: layout.tokenFile }] },
        },
      ],
    })
    writeDevEnv(layout, Number(new URL(emulator.tlsUrls[0]!).port))
    const env = childEnvWithoutAio()
    Object.assign(env, readDotEnv(layout.envFile))
    const userDir = join(dir, 'user')
    const settingsFile = join(dir, 'settings.js')
    writeSettings(
      settingsFile,
      runtimeSettings({ ...FROM_WORKING_TREE, userDir }),
      `contextStorage: { default: { module: 'memory' }, aio: { module: require(${JSON.stringify(join(repoRoot, 'dist', 'src', 'context'))}), config: {} } }`,
    )
    mkdirSync(userDir, { recursive: true })
    writeFileSync(join(userDir, 'flows.json'), JSON.stringify(flows))
    red = await startNodeRed({
      redJs: RED_JS[5],
      userDir,
      port: await freePort(),
      settingsFile,
      env,
      timeoutMs: scaled(30_000),
      ready: async (url, log) => (await fetch(`${url}/settings`)).ok && log.includes('connected to the state store'),
    })
  })

  after(async () => {
    await red?.stop()
    await emulator?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('a blank config node connects over TLS + SAT and a set then get flow works', async () => {
    assert.match(
      red!.log,
      /connected to the state store as nodered-/,
      "connected, with the config node's own default client id",
    )
    const res = await fetch(`${red!.url}/roundtrip`, {
      method: 'POST',
      headers: { 'Content-Type': 'text/plain' },
      body: 'over TLS + SAT',
    })
    assert.equal(res.status, 200)
    assert.equal(await res.text(), 'over TLS + SAT')
  })

  it('the context store with an empty config reaches the same store', async () => {
    const res = await fetch(`${red!.url}/context`, {
      method: 'POST',
      headers: { 'Content-Type': 'text/plain' },
      body: 'in context',
    })
    assert.equal(await res.text(), 'in context')
    assert.ok(emulator!.keyCount >= 2, 'both keys are in the emulator')
  })
})

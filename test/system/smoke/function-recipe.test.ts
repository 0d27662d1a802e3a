// docs/data.md's Function-node recipe, deployed through the editor's admin API as a user pastes it
// (Setup → Modules `node-red-contrib-aio-statestore` as `aio`): under `npm start`, where the package
// is this working tree, and in a runtime with the packed package installed in its user directory.
// Node-RED installs from the npm registry every module a Function node lists that its user
// directory's package.json does not, and a failed install stops every flow.
import { strict as assert } from 'node:assert'
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from '../../../dev/ports'
import { startEmulator, type Emulator } from '../../../src/emulator'
import {
  debugValue,
  installIntoUserDir,
  NodeRedProcess,
  nodeBinary,
  pack,
  RED_JS,
  repoRoot,
  writeSettings,
} from './node-red'

/** The first ```js block under docs/data.md's "The client in a Function node". */
export function docsRecipe(): string {
  const page = readFileSync(join(repoRoot, 'docs', 'data.md'), 'utf8')
  const section = page.slice(page.indexOf('## The client in a Function node'))
  const block = /```js\n([\s\S]*?)```/.exec(section)
  assert.ok(block, 'docs/data.md has the recipe')
  return block[1]!
}

/** The recipe's flow: a config node named as the recipe names it, an inject of a JSON payload, the Function node, a debug node. */
function recipeFlow(broker: string): unknown[] {
  const code = docsRecipe()
  const name = /aio\.stateStore\('([^']+)'\)/.exec(code)?.[1]
  assert.ok(name, 'the recipe names its config node')
  return [
    { id: 'tab', type: 'tab', label: 'recipe' },
    { id: 'cfg', type: 'ss-config', name, broker },
    {
      id: 'go',
      type: 'inject',
      z: 'tab',
      x: 100,
      y: 100,
      props: [{ p: 'payload' }],
      payload: '{"rpm":1200}',
      payloadType: 'json',
      wires: [['fn']],
    },
    {
      id: 'fn',
      type: 'function',
      z: 'tab',
      x: 300,
      y: 100,
      func: code,
      outputs: 1,
      libs: [{ var: 'aio', module: 'node-red-contrib-aio-statestore' }],
      wires: [['dbg']],
    },
    {
      id: 'dbg',
      type: 'debug',
      z: 'tab',
      x: 500,
      y: 100,
      active: true,
      tosidebar: true,
      complete: 'payload',
      wires: [],
    },
  ]
}

async function runsTheRecipe(red: NodeRedProcess, broker: string): Promise<void> {
  const comms = await red.comms()
  try {
    await red.deploy(recipeFlow(broker), comms)
    await red.inject('go')
    const out = await comms.waitFor((d) => d.find((m) => m.id === 'dbg'), 20_000, "the recipe's msg")
    const payload = debugValue(out) as { target: unknown; version: string }
    assert.deepEqual(payload.target, { rpm: 1200 })
    assert.match(payload.version, /^\d{15}:\d{5}:/)
  } finally {
    comms.close()
  }
}

describe("docs/data.md's Function-node recipe, deployed from the editor", function () {
  this.timeout(120_000)
  let work = ''
  before(() => {
    work = mkdtempSync(join(tmpdir(), 'aio-ss-recipe-'))
  })
  after(() => {
    if (work) rmSync(work, { recursive: true, force: true })
  })

  it('runs under npm start, with no install from the registry and no flow stopped', async () => {
    const env = {
      ...process.env,
      PORT: '0',
      MQTT_PORT: '0',
      NODE_RED_USER_DIR: join(work, 'start'),
      EMULATOR_LOG_LEVEL: 'warn',
    }
    const child = spawn(nodeBinary(), [join(repoRoot, 'scripts', 'start.mjs'), '--memory'], {
      cwd: repoRoot,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    const exit = new Promise<number | null>((r) => child.once('exit', (code) => r(code)))
    const ready = new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        output += d
        const m = /editor ready at http:\/\/127\.0\.0\.1:(\d+)/.exec(output)
        if (m) resolve(m[1]!)
      })
      child.stderr.on('data', (d: Buffer) => (output += d))
      void exit.then((code) => reject(new Error(`start.mjs exited (${code}):\n${output}`)))
    })
    try {
      const port = Number(await ready)
      // Only the admin API of the runtime start.mjs runs: nothing here starts or stops it.
      const red = new NodeRedProcess('', '', port, '')
      // A blank Broker URL is npm start's own broker.
      await runsTheRecipe(red, '')
      assert.doesNotMatch(output, /Installing module|missing modules/i, 'no install attempted, no flow stopped')
      const sets = await red.getJson<Array<{ module: string; types: string[] }>>('/nodes')
      assert.equal(
        sets.filter((s) => s.module === 'node-red-contrib-aio-statestore' && s.types.includes('ss-get')).length,
        1,
        'the palette has the package once',
      )
    } finally {
      child.kill('SIGTERM')
      assert.equal(await exit, 0, output)
    }
  })

  describe('in a runtime with the packed package installed', function () {
    let emulator: Emulator
    let red: NodeRedProcess
    before(async function () {
      emulator = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, logLevel: 'error' })
      const userDir = join(work, 'installed')
      await installIntoUserDir(userDir, await pack(work))
      writeSettings(join(work, 'settings.js'))
      red = new NodeRedProcess(RED_JS[5], userDir, await freePort(), join(work, 'settings.js'))
      await red.start(30_000)
    })
    after(async () => {
      await red?.stop()
      await emulator?.stop()
    })

    it('runs the recipe', async () => {
      await runsTheRecipe(red, emulator.brokerUrl)
      assert.doesNotMatch(red.log, /Installing module|missing modules/i)
    })
  })
})

// `npm start` (scripts/start.mjs, after the build `npm test` has already done): the ready lines,
// the seeded flows, never clobbering the user's flows, and a clean stop on SIGTERM.
import { strict as assert } from 'node:assert'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { nodeBinary, repoRoot } from './node-red'

const READY = /editor ready at (http:\/\/127\.0\.0\.1:\d+)/
const BROKER = /broker ready at (mqtt:\/\/127\.0\.0\.1:\d+)/

interface Started {
  child: ChildProcess
  editor: string
  broker: string
  output: () => string
  exit: Promise<number | null>
}

function startScript(userDir: string): Promise<Started> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env, PORT: '0', MQTT_PORT: '0', NODE_RED_USER_DIR: userDir, EMULATOR_LOG_LEVEL: 'warn' }
    const child = spawn(nodeBinary(), [join(repoRoot, 'scripts', 'start.mjs')], { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    const exit = new Promise<number | null>((r) => child.once('exit', (code) => r(code)))
    const onData = (d: Buffer) => {
      output += d
      const editor = READY.exec(output)?.[1]
      const broker = BROKER.exec(output)?.[1]
      if (editor && broker) resolve({ child, editor, broker, output: () => output, exit })
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', (d: Buffer) => (output += d))
    void exit.then((code) => reject(new Error(`start.mjs exited (${code}) before it was ready:\n${output}`)))
  })
}

async function stopScript(started: Started): Promise<number | null> {
  started.child.kill('SIGTERM')
  return started.exit
}

function listening(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname)
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

describe('npm start (scripts/start.mjs)', function () {
  this.timeout(30000)
  let userDir = ''
  let running: Started | null = null

  before(function () {
    userDir = mkdtempSync(join(tmpdir(), 'aio-ss-start-'))
  })

  afterEach(async function () {
    if (running) {
      running.child.kill('SIGKILL')
      await running.exit
      running = null
    }
  })

  after(function () {
    rmSync(userDir, { recursive: true, force: true })
  })

  it('starts broker, emulator and Node-RED 5 with the examples deployed, and stops cleanly on SIGTERM', async function () {
    running = await startScript(userDir)
    const { editor, broker } = running
    assert.ok(await listening(broker), `broker at ${broker}`)
    assert.match(running.output(), /Node-RED 5\.\d+\.\d+\S* on Node\.js v2[2-9]\./)

    const flowFile = join(userDir, 'flows.json')
    assert.ok(existsSync(flowFile), 'flows.json seeded')
    const res = await fetch(`${editor}/flows`, { headers: { Accept: 'application/json' } })
    const flows = (await res.json()) as Array<{ type: string; label?: string; broker?: string }>
    const examples = readExampleNames()
    const tabs = flows.filter((n) => n.type === 'tab')
    assert.ok(tabs.length >= examples.length, `a tab per example (${examples.join(', ')}): ${JSON.stringify(tabs)}`)
    const configs = flows.filter((n) => n.type === 'ss-config')
    if (examples.length > 0) assert.equal(configs.length, 1, 'the examples share one config node')
    for (const c of configs) assert.equal(c.broker, '${AIO_STATESTORE_URL}')

    const code = await stopScript(running)
    const output = running.output()
    running = null
    assert.equal(code, 0, output)
    assert.match(output, /\[npm start\] stopped/)
    assert.equal(await listening(editor), false, 'editor port closed')
    assert.equal(await listening(broker), false, 'broker port closed')
  })

  it("never overwrites the user's flow file", async function () {
    const flowFile = join(userDir, 'flows.json')
    const mine = [{ id: 'mytab', type: 'tab', label: 'mine' }]
    writeFileSync(flowFile, JSON.stringify(mine))
    running = await startScript(userDir)
    assert.match(running.output(), /flows: .*yours/)
    assert.equal(await stopScript(running), 0)
    running = null
    assert.deepEqual(JSON.parse(readFileSync(flowFile, 'utf8')), mine)
  })
})

function readExampleNames(): string[] {
  return readdirSync(join(repoRoot, 'examples')).filter((f) => f.endsWith('.json'))
}

// `npm start` (scripts/start.mjs, after the build `npm test` has already done): the ready lines,
// the seeded flows, never clobbering the user's flows, and a clean stop on SIGTERM.
import { strict as assert } from 'node:assert'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from '../../../dev/ports'
import { StateStoreClient } from '../../../src/client'
import { Comms, nodeBinary, repoRoot } from './node-red'
import { scaled } from '../../support/deadline'

const READY = /editor ready at (http:\/\/127\.0\.0\.1:\d+)/
const BROKER = /broker ready at (mqtt:\/\/127\.0\.0\.1:\d+)/

interface Started {
  child: ChildProcess
  editor: string
  broker: string
  output: () => string
  exit: Promise<number | null>
}

/** Runs start.mjs directly, or (underShell) the way npm does: as the child of an `sh -c`. */
function startScript(userDir: string, underShell = false, editorPort = 0, scriptArgs: string[] = []): Promise<Started> {
  return new Promise((resolve, reject) => {
    const env = {
      ...process.env,
      PORT: String(editorPort),
      MQTT_PORT: '0',
      NODE_RED_USER_DIR: userDir,
      EMULATOR_LOG_LEVEL: 'warn',
    }
    const script = join(repoRoot, 'scripts', 'start.mjs')
    // The trailing `:` keeps any shell from exec-ing node in its own place.
    const [command, args] = underShell
      ? ['sh', ['-c', `"${nodeBinary()}" "${script}"; :`]]
      : [nodeBinary(), [script, ...scriptArgs]]
    const child = spawn(command, args, { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    const exit = new Promise<number | null>((r) => child.once('exit', (code) => r(code)))
    const onData = (d: Buffer) => {
      output += d
      const editor = READY.exec(output)?.[1]
      const broker = BROKER.exec(output)?.[1]
      if (editor && broker) resolve({ child, editor, broker, output: () => output, exit })
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', (d: Buffer) => (output += d))
    void exit.then((code) => reject(new Error(`start.mjs exited (${code}) before it was ready:\n${output}`)))
  })
}

async function stopScript(started: Started): Promise<number | null> {
  started.child.kill('SIGTERM')
  return started.exit
}

async function closes(url: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + scaled(timeoutMs)
  while (Date.now() < deadline) {
    if (!(await listening(url))) return true
    await new Promise((r) => setTimeout(r, 100))
  }
  return false
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
    const flows = (await res.json()) as Array<{ id: string; type: string; label?: string; broker?: string }>
    const examples = readExampleNames()
    const tabs = flows.filter((n) => n.type === 'tab')
    assert.ok(tabs.length >= examples.length, `a tab per example (${examples.join(', ')}): ${JSON.stringify(tabs)}`)
    const configs = flows.filter((n) => n.type === 'ss-config')
    if (examples.length > 0) assert.equal(configs.length, 1, 'the examples share one config node')
    for (const c of configs) assert.equal(c.broker, '${AIO_STATESTORE_URL}')

    // The seeded flows reach the broker through the environment variable: a node shows "connected"
    // (green). Node status is retained by the editor connection, so it is there whenever we look.
    const stateStoreNodes = new Set(
      flows.filter((n) => n.type.startsWith('ss-') && n.type !== 'ss-config').map((n) => n.id),
    )
    if (stateStoreNodes.size > 0) {
      const comms = new Comms(`${editor.replace('http', 'ws')}/comms`)
      await comms.open()
      try {
        await comms.waitFor(
          () =>
            [...comms.status].some(([id, st]) => stateStoreNodes.has(id) && st.fill === 'green') ? true : undefined,
          10000,
          'a connected state store node',
        )
      } finally {
        comms.close()
      }
    }

    const code = await stopScript(running)
    const output = running.output()
    running = null
    assert.equal(code, 0, output)
    assert.match(output, /\[npm start\] stopped/)
    assert.deepEqual(
      output.split('\n').filter((l) => /\[error\]/.test(l)),
      [],
      output,
    )
    assert.equal(await listening(editor), false, 'editor port closed')
    assert.equal(await listening(broker), false, 'broker port closed')
  })

  it('stops when the shell npm runs it under is killed (npm passes SIGTERM only to that shell)', async function () {
    running = await startScript(userDir, true)
    const { editor, broker } = running
    running.child.kill('SIGKILL')
    assert.equal(await closes(editor, 10000), true, 'editor port closed')
    assert.equal(await closes(broker, 10000), true, 'broker port closed')
    running = null
  })

  it('answers an editor request made during start-up with the editor once the runtime runs, and logs no error', async function () {
    const port = await freePort()
    const editorUrl = `http://127.0.0.1:${port}/`
    const starting = startScript(userDir, false, port)
    // Ask as early as the port accepts connections: the request is made before the ready line.
    let earlyStatus = 0
    let earlyBody = ''
    let askedBeforeReady = false
    let ready = false
    void starting.then(
      () => (ready = true),
      () => undefined,
    )
    const early = (async () => {
      const deadline = Date.now() + scaled(25000)
      while (Date.now() < deadline && !ready) {
        if (await listening(editorUrl)) {
          askedBeforeReady = !ready
          const res = await fetch(editorUrl)
          earlyStatus = res.status
          earlyBody = await res.text()
          return
        }
        await new Promise((r) => setTimeout(r, 10))
      }
    })()
    running = await starting
    await early
    assert.ok(askedBeforeReady, 'the editor URL was requested before "editor ready" was printed')
    assert.equal(earlyStatus, 200, earlyBody)
    assert.match(earlyBody, /<title>Node-RED<\/title>/)
    assert.equal(await stopScript(running), 0)
    const output = running.output()
    running = null
    assert.deepEqual(
      output.split('\n').filter((l) => /\[error\]|not started/i.test(l)),
      [],
      output,
    )
  })

  it('keeps the store and the context in it across runs, in the user directory, and starts empty with --fresh', async function () {
    const dir = mkdtempSync(join(tmpdir(), 'aio-ss-start-store-'))
    const contextKey = 'examples/context/global/counter'
    const withClient = async <T>(broker: string, use: (client: StateStoreClient) => Promise<T>): Promise<T> => {
      const client = new StateStoreClient({ brokerUrl: broker, clientId: 'start-test', requestTimeoutMs: 5000 })
      try {
        await client.ready({ timeoutMs: 5000 })
        return await use(client)
      } finally {
        await client.close()
      }
    }
    try {
      running = await startScript(dir)
      assert.match(running.output(), /store: 0 key\(s\) from .*statestore\.aof; every key is kept there .*--fresh/)
      const first = running
      await withClient(first.broker, async (client) => {
        // A plain key, written without Persist, and global context through the example's button.
        assert.equal((await client.set('start-test/kept', 'yes')).applied, true)
        let counted!: (value: string) => void
        const count = new Promise<string>((resolve) => (counted = resolve))
        await client.observe(contextKey, (n) => {
          if (n.operation === 'SET') counted(n.value!.toString())
        })
        const flows = (await (
          await fetch(`${first.editor}/flows`, { headers: { Accept: 'application/json' } })
        ).json()) as Array<{
          id: string
          type: string
          name?: string
        }>
        const button = flows.find((n) => n.type === 'inject' && n.name === 'count in A')
        assert.ok(button, 'the context example\'s "count in A" button')
        assert.equal((await fetch(`${first.editor}/inject/${button.id}`, { method: 'POST' })).status, 200)
        assert.equal(await count, '1')
      })
      assert.equal(await stopScript(first), 0, first.output())

      running = await startScript(dir)
      const second = running
      assert.match(second.output(), /store: [1-9]\d* key\(s\) from .*statestore\.aof/)
      await withClient(second.broker, async (client) => {
        assert.equal((await client.get('start-test/kept')).value?.toString(), 'yes')
        assert.equal((await client.get(contextKey)).value?.toString(), '1')
      })
      assert.equal(await stopScript(second), 0, second.output())

      running = await startScript(dir, false, 0, ['--fresh'])
      const third = running
      assert.match(third.output(), /store: started empty \(--fresh\)/)
      await withClient(third.broker, async (client) => {
        assert.equal((await client.get('start-test/kept')).value, null)
        assert.equal((await client.get(contextKey)).value, null)
      })
      assert.equal(await stopScript(third), 0, third.output())
      running = null
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
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

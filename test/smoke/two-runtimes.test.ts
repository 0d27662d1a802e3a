// Active/standby across two real Node-RED runtimes (the packed package in two user directories,
// each its own process) on one emulator process with its embedded broker, running the example
// flows of examples/two-runtimes/: the active runtime holds the lease and writes a fenced key every
// 10 ms; `kill -9` of the active; the standby takes over with a greater fencing token, no write of
// the dead runtime lands after the takeover, and the old runtime, started again, stays standby.
// Node-RED 5 only: the same run on 4.x would double the time and tests nothing more of ours.
//
// The takeover time and write counts are printed, not asserted (docs/reliability.md has them).
import { strict as assert } from 'node:assert'
import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { StateStoreClient, type Observation } from '../../src/client'
import { Hlc } from '../../src/hlc'
import { EmulatorProcess } from '../emulator/cli-process'
import { freePort } from '../support/mosquitto'
import { installIntoUserDir, NodeRedProcess, pack, readJson, repoRoot, writeSettings, type Comms } from './node-red'

const RED_JS = join(repoRoot, 'node_modules', 'node-red', 'red.js')
const OUTPUT_KEY = 'examples/two-runtimes/pump-setting'
const LEASE_MS = 2000

type FlowNode = { id: string; type: string; [k: string]: unknown }

interface Write {
  by: string
  token: string
  seq: number
  /** When the runtime sent it (its wall clock; both runtimes share this host's). */
  at: number
  /** When the observer was notified of it. */
  seen: number
}

/** The example as shipped, pointed at the emulator, with the client id this runtime must have of its own. */
function exampleFor(file: string, brokerUrl: string, clientId: string): FlowNode[] {
  const nodes = readJson<FlowNode[]>(join(repoRoot, 'examples', 'two-runtimes', file))
  return nodes.map((n) => (n.type === 'ss-config' ? { ...n, broker: brokerUrl, clientId } : n))
}

async function until<T>(poll: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = poll()
    if (v !== undefined) return v
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 5))
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe('smoke: active/standby across two Node-RED 5 runtimes', function () {
  this.timeout(60000)
  let work = ''
  let emulator: EmulatorProcess | null = null
  let observer: StateStoreClient | null = null
  const runtimes: NodeRedProcess[] = []
  const settings = () => join(work, 'settings.js')

  before(async function () {
    this.timeout(120000)
    work = mkdtempSync(join(tmpdir(), 'aio-ss-two-'))
    const tarball = await pack(work)
    await installIntoUserDir(join(work, 'a'), tarball)
    // The same install twice: a copy is a second, independent user directory.
    cpSync(join(work, 'a'), join(work, 'b'), { recursive: true })
    writeSettings(settings())
    emulator = await EmulatorProcess.start(['--listen', `127.0.0.1:${await freePort()}`, '--log-level', 'warn'])
    observer = new StateStoreClient({ brokerUrl: emulator.url, clientId: 'two-runtimes-observer' })
    await observer.ready({ timeoutMs: 5000 })
  })

  afterEach(async function () {
    await Promise.all(runtimes.splice(0).map((r) => r.stop()))
  })

  after(async function () {
    await observer?.close()
    await emulator?.kill('SIGTERM')
    if (work) rmSync(work, { recursive: true, force: true })
  })

  for (const [mode, file] of [
    ['lock', 'active-standby-lock.json'],
    ['leader election', 'active-standby-leader.json'],
  ] as const) {
    it(`${mode}: kill -9 of the active runtime; the standby takes over with a greater token, the old one comes back as standby`, async function () {
      const url = emulator!.url
      const writes: Write[] = []
      const observation: Observation = await observer!.observe(OUTPUT_KEY, (n) => {
        if (n.operation !== 'SET' || !n.value) return
        writes.push({ ...(JSON.parse(n.value.toString()) as Omit<Write, 'seen'>), seen: Date.now() })
      })
      const comms: Comms[] = []
      try {
        const start = async (name: 'a' | 'b'): Promise<{ red: NodeRedProcess; comms: Comms }> => {
          const red = new NodeRedProcess(RED_JS, join(work, name), await freePort(), settings())
          runtimes.push(red)
          await red.start(30000)
          const c = await red.comms()
          comms.push(c)
          return { red, comms: c }
        }
        const byA = (w: Write) => w.by.startsWith('runtime-a/')
        const byB = (w: Write) => w.by.startsWith('runtime-b/')

        const [a, b] = await Promise.all([start('a'), start('b')])
        await a.red.deploy(exampleFor(file, url, 'runtime-a'), a.comms)
        await until(() => (writes.some(byA) ? true : undefined), 15000, 'the first write of runtime A')
        await b.red.deploy(exampleFor(file, url, 'runtime-b'), b.comms)
        // B is deployed and connected; it must stand by while A holds the lease.
        const lockId = exampleFor(file, url, '').find((n) => n.type === 'ss-lock')!.id
        const lockOf = (c: Comms) => c.status.get(lockId)
        await b.comms.waitFor(() => (lockOf(b.comms)?.fill === 'green' ? true : undefined), 10000, "B's lock node connected")
        await sleep(LEASE_MS)
        assert.equal(writes.filter(byB).length, 0, 'B wrote while A was active')

        const killedAt = Date.now()
        await a.red.kill()
        const firstB = await until(() => writes.find(byB), 5 * LEASE_MS, 'the first write of runtime B after A was killed')
        const firstIndex = writes.indexOf(firstB)
        const lastA = writes.slice(0, firstIndex).filter(byA).at(-1)!
        // Give anything of A's still in flight (in the broker, in the emulator) time to land.
        await sleep(500)
        const afterTakeover = writes.slice(firstIndex)
        assert.deepEqual(afterTakeover.filter(byA), [], 'no write of the dead runtime lands after the takeover')
        const aTokens = writes.filter(byA).map((w) => Hlc.parse(w.token))
        const bToken = Hlc.parse(firstB.token)
        for (const t of aTokens) assert.ok(Hlc.compare(bToken, t) > 0, `B's token ${bToken} is greater than A's ${t}`)
        const aWrites = writes.filter(byA).length

        // A comes back (same user directory, so the same flows) and must stay standby.
        const a2 = await start('a')
        await a2.comms.waitFor(() => (lockOf(a2.comms)?.fill === 'green' ? true : undefined), 15000, "the restarted A's lock node connected")
        const backAt = writes.length
        await sleep(2 * LEASE_MS)
        const sinceBack = writes.slice(backAt)
        assert.deepEqual(sinceBack.filter(byA), [], 'the restarted runtime wrote although B is active')
        assert.ok(sinceBack.filter(byB).length > 0, 'B goes on writing')
        const owner = await observer!.get(mode === 'lock' ? 'examples/two-runtimes/pump-owner' : 'examples/two-runtimes/pump-leader')
        assert.ok(owner.value?.toString().startsWith('runtime-b/'), `B holds the lease: ${owner.value}`)

        const takeoverMs = firstB.seen - killedAt
        console.log(
          `      (${mode}: lease ${LEASE_MS} ms; takeover ${takeoverMs} ms after kill -9, ${firstB.at - lastA.at} ms from A's last write to B's first; ` +
            `A wrote ${aWrites} times, B ${writes.filter(byB).length} times, ${writes.length} in all; A back as standby: 0 writes in ${2 * LEASE_MS} ms)`,
        )
      } finally {
        for (const c of comms) c.close()
        await observation.close()
      }
    })
  }
})

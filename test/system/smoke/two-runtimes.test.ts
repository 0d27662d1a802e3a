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
import { StateStoreClient, type Observation } from '../../../src/client'
import { Hlc } from '../../../src/hlc'
import { EmulatorProcess } from '../emulator/cli-process'
import { eventually as until } from '../../support/wait'
import { freePort } from '../../../dev/ports'
import {
  installIntoUserDir,
  NodeRedProcess,
  pack,
  readJson,
  RED_JS,
  repoRoot,
  writeSettings,
  type Comms,
} from './node-red'

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
        const start = async (name: 'a' | 'b', fresh = false): Promise<{ red: NodeRedProcess; comms: Comms }> => {
          // A fresh start must not run the flows the previous test left in the user directory.
          if (fresh) rmSync(join(work, name, 'flows.json'), { force: true })
          const red = new NodeRedProcess(RED_JS[5], join(work, name), await freePort(), settings())
          runtimes.push(red)
          await red.start(30000)
          const c = await red.comms()
          comms.push(c)
          return { red, comms: c }
        }
        const by = (name: string) => (w: Write) => w.by.startsWith(`runtime-${name}/`)

        const started = { a: await start('a', true), b: await start('b', true) }
        await started.a.red.deploy(exampleFor(file, url, 'runtime-a'), started.a.comms)
        await until(() => (writes.some(by('a')) ? true : undefined), 'the first write of runtime A', 15000)
        await started.b.red.deploy(exampleFor(file, url, 'runtime-b'), started.b.comms)
        const lockId = exampleFor(file, url, '').find((n) => n.type === 'ss-lock')!.id
        const lockConnected = (c: Comms) => (c.status.get(lockId)?.fill === 'green' ? true : undefined)
        await started.b.comms.waitFor(() => lockConnected(started.b.comms), 10000, "B's lock node connected")
        await sleep(LEASE_MS)

        // The active runtime is the one whose writes land. Normally A, which started first; on a
        // machine so loaded that A missed its renewals for a whole term, B legitimately took over.
        const killIndex = writes.length
        const active = writes.at(-1)!.by.startsWith('runtime-a/') ? 'a' : 'b'
        const standby = active === 'a' ? 'b' : 'a'
        const handovers = writes.slice(0, killIndex).filter((w, i, all) => i > 0 && w.by !== all[i - 1]!.by).length
        const killedAt = Date.now()
        await started[active].red.kill()
        const firstIndex = await until(
          () => {
            const i = writes.findIndex((w, j) => j >= killIndex && by(standby)(w))
            return i >= 0 ? i : undefined
          },
          `the first write of runtime ${standby.toUpperCase()} after ${active.toUpperCase()} was killed`,
          5 * LEASE_MS,
        )
        const takeover = writes[firstIndex]!
        const lastOfDead = writes.slice(0, firstIndex).filter(by(active)).at(-1)!
        // Give anything of the dead runtime's still in flight (broker, emulator) time to land.
        await sleep(500)
        assert.deepEqual(
          writes.slice(firstIndex).filter(by(active)),
          [],
          'no write of the dead runtime lands after the takeover',
        )
        const takeoverToken = Hlc.parse(takeover.token)
        for (const w of writes.filter(by(active))) {
          assert.ok(
            Hlc.compare(takeoverToken, Hlc.parse(w.token)) > 0,
            `the new token ${takeover.token} is greater than the dead runtime's ${w.token}`,
          )
        }
        const deadWrites = writes.filter(by(active)).length

        // The killed runtime comes back (same user directory, so the same flows) and must stand by.
        const back = await start(active)
        await back.comms.waitFor(() => lockConnected(back.comms), 15000, 'the restarted lock node connected')
        const backAt = writes.length
        await sleep(2 * LEASE_MS)
        const sinceBack = writes.slice(backAt)
        assert.deepEqual(
          sinceBack.filter(by(active)),
          [],
          'the restarted runtime wrote although the other one is active',
        )
        assert.ok(sinceBack.filter(by(standby)).length > 0, 'the new active runtime goes on writing')
        const owner = await observer!.get(
          mode === 'lock' ? 'examples/two-runtimes/pump-owner' : 'examples/two-runtimes/pump-leader',
        )
        assert.ok(
          owner.value?.toString().startsWith(`runtime-${standby}/`),
          `the new active runtime holds the lease: ${owner.value}`,
        )

        // Fencing over the whole run: the writes that landed carry tokens that never go down.
        for (let i = 1; i < writes.length; i++) {
          assert.ok(
            Hlc.compare(Hlc.parse(writes[i]!.token), Hlc.parse(writes[i - 1]!.token)) >= 0,
            `write ${i} (${writes[i]!.by}) landed with an older token than write ${i - 1} (${writes[i - 1]!.by})`,
          )
        }

        console.log(
          `      (${mode}: lease ${LEASE_MS} ms; ${active.toUpperCase()} killed, takeover ${takeover.seen - killedAt} ms after kill -9, ` +
            `${takeover.at - lastOfDead.at} ms from the last write of the dead runtime to the first of the new one; ` +
            `writes: ${deadWrites} by the killed runtime, ${writes.filter(by(standby)).length} by the other, ${writes.length} in all; ` +
            `${handovers} handover(s) before the kill; back as standby: 0 writes in ${2 * LEASE_MS} ms)`,
        )
      } finally {
        for (const c of comms) c.close()
        await observation.close()
      }
    })
  }
})

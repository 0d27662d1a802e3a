// The replica examples (examples/leader-gated-tick, run-once-job, semaphore-api-calls) imported into
// two real Node-RED 5 runtimes (the packed package in two user directories, each its own process)
// on one emulator process, as a user runs them in two replicas: the tick runs in the leading
// runtime only and goes on in the other after a kill -9, the day's job runs in one runtime, and the
// semaphore's slots, read from the slot keys the holders write, never hold two msgs at once.
import { strict as assert } from 'node:assert'
import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { StateStoreClient, type Observation } from '../../../src/client'
import { Hlc } from '../../../src/hlc'
import { EmulatorProcess } from '../emulator/cli-process'
import { freePort } from '../../../dev/ports'
import { until } from '../../support/wait'
import {
  debugValue,
  installIntoUserDir,
  NodeRedProcess,
  pack,
  readJson,
  RED_JS,
  repoRoot,
  writeSettings,
  type Comms,
} from './node-red'

type FlowNode = { id: string; type: string; name?: string; [k: string]: unknown }
type Msg = Record<string, unknown>
const RUNTIMES = ['a', 'b'] as const
type Name = (typeof RUNTIMES)[number]

/**
 * The example as shipped, pointed at the emulator, with the client id this runtime must have of its
 * own; its debug nodes show the whole msg, so the test reads the fencing token beside what they show.
 */
function exampleFor(file: string, brokerUrl: string, clientId: string): FlowNode[] {
  return readJson<FlowNode[]>(join(repoRoot, 'examples', `${file}.json`)).map((n) => {
    if (n.type === 'ss-config') return { ...n, broker: brokerUrl, clientId }
    if (n.type === 'debug') return { ...n, complete: 'true', targetType: 'full' }
    return n
  })
}

interface Replica {
  red: NodeRedProcess
  comms: Comms
  nodes: FlowNode[]
}

describe('smoke: the replica examples in two Node-RED 5 runtimes', function () {
  this.timeout(120000)
  let work = ''
  let emulator: EmulatorProcess | null = null
  let observer: StateStoreClient | null = null
  const running: Replica[] = []

  before(async function () {
    this.timeout(180000)
    work = mkdtempSync(join(tmpdir(), 'aio-ss-replicas-'))
    const tarball = await pack(work)
    await installIntoUserDir(join(work, 'a'), tarball)
    cpSync(join(work, 'a'), join(work, 'b'), { recursive: true })
    writeSettings(join(work, 'settings.js'))
    emulator = await EmulatorProcess.start(['--listen', `127.0.0.1:${await freePort()}`, '--log-level', 'warn'])
    observer = new StateStoreClient({ brokerUrl: emulator.url, clientId: 'replicas-observer' })
    await observer.ready({ timeoutMs: 5000 })
  })

  afterEach(async function () {
    for (const r of running) r.comms.close()
    await Promise.all(running.splice(0).map((r) => r.red.stop()))
  })

  after(async function () {
    await observer?.close()
    await emulator?.kill('SIGTERM')
    if (work) rmSync(work, { recursive: true, force: true })
  })

  /** Both runtimes started afresh, the example deployed in each. */
  async function deployInBoth(file: string): Promise<Record<Name, Replica>> {
    const started = {} as Record<Name, Replica>
    for (const name of RUNTIMES) {
      rmSync(join(work, name, 'flows.json'), { force: true })
      const red = new NodeRedProcess(RED_JS[5], join(work, name), await freePort(), join(work, 'settings.js'))
      await red.start(30000)
      const comms = await red.comms()
      const nodes = exampleFor(file, emulator!.url, `runtime-${name}`)
      const replica = { red, comms, nodes }
      running.push(replica)
      await red.deploy(nodes, comms)
      started[name] = replica
    }
    return started
  }

  const idOf = (r: Replica, type: string, name: string) => {
    const n = r.nodes.find((x) => x.type === type && x.name === name)
    assert.ok(n, `no ${type} named "${name}"`)
    return n.id
  }
  /** The msgs the named debug node of this runtime has shown, whole. */
  const shown = (r: Replica, debug: string): Msg[] => {
    const id = idOf(r, 'debug', debug)
    return r.comms.debug.filter((m) => m.id === id && m.level === undefined).map((m) => debugValue(m) as Msg)
  }
  const errors = (r: Replica) => r.comms.debug.filter((m) => m.level !== undefined)
  /** Presses the inject in this runtime and waits until one of the debug nodes has shown one msg more. */
  async function pressAndSee(r: Replica, inject: string, debugs: string[]): Promise<string> {
    const before = debugs.map((d) => shown(r, d).length)
    await r.red.inject(idOf(r, 'inject', inject))
    return r.comms.waitFor(
      () => debugs.find((d, i) => shown(r, d).length > before[i]!),
      15000,
      `an answer to "${inject}" in ${debugs.join(' or ')}`,
    )
  }

  it('leader-gated-tick: the ticks run in the leading runtime only, each term in one runtime; after a kill -9 of the leader they run in the other', async function () {
    const r = await deployInBoth('leader-gated-tick')
    const gate = (name: Name) => `runtime-${name}/${idOf(r[name], 'ss-lock', 'one replica leads')}`
    // Both gates campaign from the start; until one is elected every tick leaves by "skipped".
    await Promise.all(
      RUNTIMES.map((name) =>
        r[name].comms.waitFor(
          () => (shown(r.a, 'tick ran').length + shown(r.b, 'tick ran').length > 0 ? true : undefined),
          30000,
          'a tick run in either runtime (the inject repeats every 5 s)',
        ),
      ),
    )
    // Pressed in both runtimes, tick after tick: each tick leaves its gate exactly once.
    for (let i = 0; i < 5; i++)
      for (const name of RUNTIMES) await pressAndSee(r[name], 'every 5 s', ['tick ran', 'skipped'])
    for (const name of RUNTIMES) {
      for (const m of shown(r[name], 'tick ran')) {
        assert.equal(m.holder, gate(name), 'a tick runs with its own runtime as the holder')
        assert.equal(m.leader, true)
        assert.match(String(m.fencingToken), /^\d+:\d+:/, 'with the term fencing token')
      }
      const other = gate(name === 'a' ? 'b' : 'a')
      for (const m of shown(r[name], 'skipped'))
        assert.ok(m.holder === other || m.holder === null, `skipped names the other leader, or none: ${m.holder}`)
    }
    // A term belongs to one runtime: no fencing token runs ticks in both.
    const tokens = (name: Name) => new Set(shown(r[name], 'tick ran').map((m) => String(m.fencingToken)))
    const shared = [...tokens('a')].filter((t) => tokens('b').has(t))
    assert.deepEqual(shared, [], 'no term runs ticks in two runtimes')
    const leader: Name = shown(r.b, 'tick ran').length > shown(r.a, 'tick ran').length ? 'b' : 'a'
    const follower: Name = leader === 'a' ? 'b' : 'a'
    const lastOfLeader = shown(r[leader], 'tick ran').at(-1)!

    await r[leader].red.kill()
    // The follower's ticks run once the dead leader's term has ended (one Lease, 10 s, at most).
    const from = shown(r[follower], 'tick ran').length
    await until(
      async () => (await pressAndSee(r[follower], 'every 5 s', ['tick ran', 'skipped'])) === 'tick ran',
      'a tick run in the surviving runtime',
      30000,
      100,
    )
    const taken = shown(r[follower], 'tick ran').slice(from)
    for (const m of taken) {
      assert.equal(m.holder, gate(follower))
      assert.ok(
        Hlc.compare(Hlc.parse(String(m.fencingToken)), Hlc.parse(String(lastOfLeader.fencingToken))) > 0,
        'the new term has a greater token than the dead leader had',
      )
    }
    assert.deepEqual(errors(r[follower]), [])
  })

  it('run-once-job: pressed in both runtimes at once, one writes the report and the other says it is done', async function () {
    const r = await deployInBoth('run-once-job')
    const day = new Date().toISOString().slice(0, 10)
    const answers = ['report written', 'already done']
    await Promise.all(RUNTIMES.map((name) => pressAndSee(r[name], 'every day at 06:00', answers)))
    const written = RUNTIMES.flatMap((name) => shown(r[name], 'report written').map((m) => ({ name, m })))
    assert.equal(written.length, 1, `the job ran once: ${JSON.stringify(written)}`)
    const { name: doer, m: report } = written[0]!
    assert.equal(report.payload, `report of ${day} written`)
    assert.equal(report.completed, true)
    const claimant = `runtime-${doer}/${idOf(r[doer], 'ss-lock', "claim today's report")}`
    const other: Name = doer === 'a' ? 'b' : 'a'
    const [duplicate] = shown(r[other], 'already done')
    assert.equal(duplicate?.claimedBy, claimant, 'the other runtime names who claimed the day')
    // Pressed again in each: done already, in both.
    for (const name of RUNTIMES)
      assert.equal(await pressAndSee(r[name], 'every day at 06:00', answers), 'already done', name)
    for (const name of RUNTIMES) {
      assert.deepEqual(shown(r[name], 'claim ran out'), [])
      assert.deepEqual(errors(r[name]), [])
    }
  })

  it('semaphore-api-calls: 5 calls pressed in each runtime at once; every call runs, and no slot key is written for a second holder while held', async function () {
    const name = 'examples/replicas/api-slots'
    // The holders' own records: each slot's key, SET with its holder's value and deleted at release.
    const events: Array<{ slot: number; op: string; value: string }> = []
    const observations: Observation[] = []
    for (let slot = 0; slot < 3; slot++)
      observations.push(
        await observer!.observe(`${name}/slot-${slot}`, (n) =>
          events.push({ slot, op: n.operation, value: n.value?.toString() ?? '' }),
        ),
      )
    try {
      const r = await deployInBoth('semaphore-api-calls')
      await Promise.all(RUNTIMES.map((n) => r[n].red.inject(idOf(r[n], 'inject', '5 calls'))))
      for (const n of RUNTIMES)
        await r[n].comms.waitFor(
          () => (shown(r[n], 'call done').length >= 5 ? true : undefined),
          60000,
          `five calls done in runtime ${n}`,
        )
      for (const n of RUNTIMES) {
        const calls = shown(r[n], 'calling').map((m) => String(m.payload))
        assert.deepEqual(
          calls.map((c) => c.replace(/ in slot [01]$/, '')).sort(),
          [1, 2, 3, 4, 5].map((i) => `call ${i}`),
          `runtime ${n}: five calls, each in slot 0 or 1: ${calls.join(', ')}`,
        )
        assert.deepEqual(shown(r[n], 'no slot'), [])
        assert.deepEqual(errors(r[n]), [])
      }
      assert.deepEqual(
        events.filter((e) => e.slot === 2),
        [],
        'no third slot',
      )
      // A slot holds one msg at a time: once SET with a holder's value, the next SET of another
      // value comes only after the DELETE of the release.
      let acquisitions = 0
      for (const slot of [0, 1]) {
        let holder: string | null = null
        for (const e of events.filter((x) => x.slot === slot)) {
          if (e.op === 'DELETE') holder = null
          else if (holder === null) {
            holder = e.value
            acquisitions++
          } else assert.equal(e.value, holder, `slot ${slot} written for ${e.value} while ${holder} held it`)
        }
      }
      assert.equal(acquisitions, 10, `ten holds over the two slots: ${JSON.stringify(events)}`)
    } finally {
      await Promise.all(observations.map((o) => o.close()))
    }
  })
})

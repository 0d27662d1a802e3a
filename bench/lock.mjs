// The lock: the hand-off and an edit beside the SDK's algorithm, at no load and under CPU load of
// our own making (scripts/cpu-load.mjs; `--load N` runs at N busy processes only, else at 0 and 6).
//
// - Hand-off: from the holder's release (its VDEL sent) to the waiter's acquire resolved, for our
//   Lock (as Lock.edit and update key take it; and with followKey, as the lock node does) against
//   its floor measured in the same round: the same two clients doing the least the protocol allows,
//   a VDEL heard by a waiter already registered (one notification) that answers with one SET NEX
//   (one round trip).
// - Edit: two Lock.edit loops and two contenders running the Go SDK's leasedlock algorithm on the
//   same client class (KEYNOTIFY before each Lock, SET NEX, wait for a DELETE, GET, fenced SET, VDEL,
//   KEYNOTIFY STOP), all on one counter; each edit's time from its start (lock wait included) to its
//   write answered; our median beside theirs, and the share of the edits each side made.
// - Beside the real Go SDK: two Lock.edit loops here and two processes of the interop lane's Go
//   program (test/system/interop/go, `-case bench`: the official SDK's Lock.Edit) on one counter; each
//   side's median turn, its share of the turns, and the cost of a turn against four bare round
//   trips (SET NEX, GET, SET, VDEL, one after another, on a free lock) measured in the same round.
//   Left out, and said so, where Go is not installed (--no-go leaves it out too).
//
// Processes: the emulator (embedded broker) in its own; our clients in this one; the Go SDK's in
// their own.
import { spawn, spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import {
  benchArgs,
  fmtNum,
  fmtRange,
  fmtRatio,
  percentiles,
  ROOT,
  sleep,
  summarize,
  table,
  writeResult,
} from './lib/harness.mjs'
import { connectClient } from './lib/load.mjs'
import { startEmulatorProcess } from './lib/procs.mjs'
import { formatLoad, startCpuLoad } from '../scripts/cpu-load.mjs'

const require = createRequire(import.meta.url)
const { Lock } = require(join(ROOT, 'dist/src/locks'))

const { quick, rounds, argv } = benchArgs()
const loadAt = argv.indexOf('--load')
const LOADS = loadAt >= 0 ? [Math.max(0, Number(argv[loadAt + 1]) || 0)] : [0, 6]
/** Hand-offs per variant and round (the round's figure is their median). */
const HANDOFFS = quick ? 10 : 20
/** Edits per contest (one contest a round). */
const EDITS = quick ? 200 : 400
const LEASE_MS = 10_000
/** A loop's pause between its edits, as a flow's msgs do not come back to back. */
const THINK_MS = 1
/** How long the busy processes run before measuring, so the load average has risen. */
const SETTLE_MS = quick ? 3000 : 6000

/** Four bare round trips, timed this many times a round (the figure is their median). */
const BARE = quick ? 20 : 40

const goContender = argv.includes('--no-go') ? null : buildGoContender()
const emulator = await startEmulatorProcess({})
const tables = []
const headline = []
const data = {}
const notes = []
let run = 0

try {
  for (const load of LOADS) {
    const cpu = startCpuLoad(load)
    if (load > 0) await sleep(SETTLE_MS)
    const handoff = {
      floor: [],
      ours: [],
      ratio: [],
      follow: [],
      followRatio: [],
      free: [],
      freeSet: [],
      freeRatio: [],
    }
    const edit = { ours: [], sdk: [], ratio: [], oursShare: [] }
    const real = { ours: [], go: [], ratio: [], oursShare: [], bare: [], oursPerBare: [], goPerBare: [] }
    try {
      // The hand-offs' rounds, then the contests': each figure is a ratio within its own round.
      for (let round = -1; round < rounds; round++) {
        const h = await handoffRound(`bench-lock-${process.pid}-${++run}`)
        if (round < 0) continue // warm-up
        handoff.floor.push(h.floor)
        handoff.ours.push(h.ours)
        handoff.ratio.push(h.ours / h.floor)
        handoff.follow.push(h.follow)
        handoff.followRatio.push(h.follow / h.floor)
        handoff.free.push(h.free)
        handoff.freeSet.push(h.freeSet)
        handoff.freeRatio.push(h.free / h.freeSet)
        console.log(
          `load ${load}, round ${round + 1}: hand-off ours ${h.ours.toFixed(2)} ms, followKey ${h.follow.toFixed(2)} ms / floor ${h.floor.toFixed(2)} ms; free lock ${h.free.toFixed(2)} ms / SET ${h.freeSet.toFixed(2)} ms`,
        )
      }
      for (let round = -1; round < rounds; round++) {
        const e = await contest(`bench-lock-${process.pid}-${++run}`)
        if (round < 0) continue
        edit.ours.push(e.ours)
        edit.sdk.push(e.sdk)
        edit.ratio.push(e.ours / e.sdk)
        edit.oursShare.push(e.oursShare)
        console.log(
          `load ${load}, round ${round + 1}: edit median ours ${e.ours.toFixed(2)} ms / SDK algorithm ${e.sdk.toFixed(2)} ms, ours made ${(e.oursShare * 100).toFixed(0)} %`,
        )
      }
      for (let round = -1; goContender && round < rounds; round++) {
        const g = await goContest(`bench-lock-${process.pid}-${++run}`)
        if (round < 0) continue
        real.ours.push(g.ours)
        real.go.push(g.go)
        real.ratio.push(g.ours / g.go)
        real.oursShare.push(g.oursShare)
        real.bare.push(g.bare)
        real.oursPerBare.push(g.ours / g.bare)
        real.goPerBare.push(g.go / g.bare)
        console.log(
          `load ${load}, round ${round + 1}: beside the Go SDK, edit median ours ${g.ours.toFixed(2)} ms / Go SDK ${g.go.toFixed(2)} ms, four bare round trips ${g.bare.toFixed(2)} ms, ours made ${(g.oursShare * 100).toFixed(0)} %`,
        )
      }
    } finally {
      const seen = await cpu.stop()
      const shown = load > 0 ? formatLoad(seen) : `load ${seen.first.toFixed(2)}–${seen.last.toFixed(2)}`
      const s = {
        floor: summarize(handoff.floor),
        ours: summarize(handoff.ours),
        ratio: summarize(handoff.ratio),
        follow: summarize(handoff.follow),
        followRatio: summarize(handoff.followRatio),
        free: summarize(handoff.free),
        freeSet: summarize(handoff.freeSet),
        freeRatio: summarize(handoff.freeRatio),
        editOurs: summarize(edit.ours),
        editSdk: summarize(edit.sdk),
        editRatio: summarize(edit.ratio),
        share: summarize(edit.oursShare),
        ...(goContender
          ? {
              realOurs: summarize(real.ours),
              realGo: summarize(real.go),
              realRatio: summarize(real.ratio),
              realShare: summarize(real.oursShare),
              bare: summarize(real.bare),
              oursPerBare: summarize(real.oursPerBare),
              goPerBare: summarize(real.goPerBare),
            }
          : {}),
      }
      data[`load ${load}`] = { busyProcesses: load, load: seen, ...s }
      tables.push(
        table(
          `Lock at --load ${load} (${shown}): median of the rounds (min–max)`,
          ['figure', 'ours', 'reference', 'ours / reference'],
          [
            [
              'hand-off, release → next acquire (Lock, as Lock.edit and update key)',
              fmtRange(s.ours, 2, ' ms'),
              `floor ${fmtRange(s.floor, 2, ' ms')}`,
              fmtRatio(s.ratio),
            ],
            [
              'hand-off with followKey (as the lock node: the holder follows its key)',
              fmtRange(s.follow, 2, ' ms'),
              'the same floor',
              fmtRatio(s.followRatio),
            ],
            [
              'a free lock taken with followKey (as the lock node)',
              fmtRange(s.free, 2, ' ms'),
              `one SET NEX ${fmtRange(s.freeSet, 2, ' ms')}`,
              fmtRatio(s.freeRatio),
            ],
            [
              'edit, median (lock wait included)',
              fmtRange(s.editOurs, 2, ' ms'),
              `SDK algorithm ${fmtRange(s.editSdk, 2, ' ms')}`,
              fmtRatio(s.editRatio),
            ],
            ['share of the edits made by ours', `${fmtNum(s.share.median * 100)} %`, '', ''],
            ...(goContender
              ? [
                  [
                    'edit beside the real Go SDK, median (2 + 2 processes)',
                    fmtRange(s.realOurs, 2, ' ms'),
                    `Go SDK ${fmtRange(s.realGo, 2, ' ms')}`,
                    fmtRatio(s.realRatio),
                  ],
                  [
                    'our turn / four bare round trips (same round)',
                    fmtRange(s.realOurs, 2, ' ms'),
                    `4 round trips ${fmtRange(s.bare, 2, ' ms')}`,
                    fmtRatio(s.oursPerBare),
                  ],
                  [
                    "the Go SDK's turn / four bare round trips",
                    fmtRange(s.realGo, 2, ' ms'),
                    'the same',
                    fmtRatio(s.goPerBare),
                  ],
                  [
                    'share of the edits made by ours beside the Go SDK',
                    `${fmtNum(s.realShare.median * 100)} % (${fmtNum(s.realShare.min * 100)}–${fmtNum(s.realShare.max * 100)})`,
                    '',
                    '',
                  ],
                ]
              : []),
          ],
        ),
      )
      headline.push({
        metric: `--load ${load} (${shown}): lock hand-off / its floor (one notification + one SET)`,
        value: Number(s.ratio.median.toFixed(3)),
        min: s.ratio.min,
        max: s.ratio.max,
        target: '<= 1.5x',
        pass: s.ratio.median <= 1.5,
      })
      headline.push({
        metric: `--load ${load} (${shown}): lock hand-off with followKey (two clients notified) / the same floor`,
        value: Number(s.followRatio.median.toFixed(3)),
        min: s.followRatio.min,
        max: s.followRatio.max,
        target: 'report (no target)',
        pass: true,
      })
      headline.push({
        metric: `--load ${load} (${shown}): a free lock taken with followKey / one SET NEX round trip`,
        value: Number(s.freeRatio.median.toFixed(3)),
        min: s.freeRatio.min,
        max: s.freeRatio.max,
        target: 'report (one request: about 1x)',
        pass: true,
      })
      headline.push({
        metric: `--load ${load} (${shown}): our Lock.edit median / the SDK algorithm's, same client`,
        value: Number(s.editRatio.median.toFixed(3)),
        min: s.editRatio.min,
        max: s.editRatio.max,
        target: '<= 1.2x',
        pass: s.editRatio.median <= 1.2,
      })
      if (goContender) {
        headline.push({
          metric: `--load ${load} (${shown}): our share of the edits beside the real Go SDK (2 + 2)`,
          value: Number(s.realShare.median.toFixed(3)),
          min: s.realShare.min,
          max: s.realShare.max,
          target: 'report (an even share: 0.5)',
          pass: true,
        })
        headline.push({
          metric: `--load ${load} (${shown}): our turn beside the Go SDK / four bare round trips`,
          value: Number(s.oursPerBare.median.toFixed(3)),
          min: s.oursPerBare.min,
          max: s.oursPerBare.max,
          target: 'report (no target)',
          pass: true,
        })
      }
    }
  }
} finally {
  await emulator.stop()
}
notes.push(
  `${HANDOFFS} hand-offs per variant and round, ${EDITS} edits per contest, ${rounds} rounds after one warm-up, at --load ${LOADS.join(' and ')}`,
)
notes.push(
  goContender
    ? `the real Go SDK: ${goContender}, built from test/system/interop/go`
    : 'the real Go SDK left out (--no-go, or Go not installed)',
)
writeResult('lock', { tables, headline, data, notes })

/** One round of hand-offs: the floor and ours, alternately, on fresh clients; the median of each. */
async function handoffRound(name) {
  const a = await connectClient(emulator.url)
  // The waiter's requests, as they are answered: ours is released on once its try was refused.
  const verbs = []
  const b = await connectClient(emulator.url, { metrics: { record: (verb) => verbs.push(verb) } })
  b.verbs = verbs
  const floorName = `${name}-floor`
  // The floor's waiter is registered once, as our lock name's observation is kept.
  let wake = null
  const observation = await b.observe(floorName, (n) => n.operation === 'DELETE' && wake?.())
  const floor = []
  const ours = []
  const follow = []
  const free = []
  const freeSet = []
  try {
    for (let i = 0; i < HANDOFFS + 1; i++) {
      const f = await floorHandoff(a, b, floorName, (w) => (wake = w))
      const o = await ourHandoff(a, b, name, false)
      const k = await ourHandoff(a, b, `${name}-follow`, true)
      const [l, t] = await freeLock(a, `${name}-free`)
      if (i === 0) continue // the first of ours registers the lock name
      floor.push(f)
      ours.push(o)
      follow.push(k)
      free.push(l)
      freeSet.push(t)
    }
  } finally {
    await observation.close()
    await Promise.all([a.close(), b.close()])
  }
  return {
    floor: percentiles(floor).p50,
    ours: percentiles(ours).p50,
    follow: percentiles(follow).p50,
    free: percentiles(free).p50,
    freeSet: percentiles(freeSet).p50,
  }
}

/** A free lock: our acquire with followKey (as the lock node), beside the one SET NEX it should cost. */
async function freeLock(a, name) {
  const lockSet = { condition: 'NEX', expiryMs: LEASE_MS, timeoutMs: LEASE_MS }
  let t0 = performance.now()
  await a.set(`${name}-set`, 'A', lockSet)
  const set = performance.now() - t0
  await a.vdel(`${name}-set`, 'A')
  const lock = new Lock(a, name, { holder: 'A', leaseMs: LEASE_MS, followKey: true })
  t0 = performance.now()
  await lock.acquire({ timeoutMs: LEASE_MS })
  const ours = performance.now() - t0
  await lock.release()
  return [ours, set]
}

/**
 * The least the protocol allows: a VDEL, its DELETE heard by a waiter already refused, one SET. The
 * SET is the one every SDK's lock sends (NEX, PX, the request's timeout as its message expiry).
 */
async function floorHandoff(a, b, name, onWake) {
  const lockSet = { condition: 'NEX', expiryMs: LEASE_MS, timeoutMs: LEASE_MS }
  await a.set(name, 'A', lockSet)
  const freed = new Promise((resolve) => onWake(resolve))
  const refused = await b.set(name, 'B', lockSet)
  if (refused.applied) throw new Error('the floor waiter took a held key')
  const t0 = performance.now()
  const releasing = a.vdel(name, 'A')
  await freed
  const taken = await b.set(name, 'B', lockSet)
  const ms = performance.now() - t0
  if (!taken.applied) throw new Error('the floor waiter did not take the freed key')
  await releasing
  await b.vdel(name, 'B')
  return ms
}

/**
 * Our Lock: the holder releases while the waiter waits. `followKey` as the lock node takes it: then
 * the holder's client is registered on the key too (it follows its hold), so the DELETE goes to two
 * clients; without it, as Lock.edit and update key take it, to the waiter's alone, as in the floor.
 */
async function ourHandoff(a, b, name, followKey) {
  const holder = new Lock(a, name, { holder: 'A', leaseMs: LEASE_MS, followKey })
  await holder.acquire({ timeoutMs: LEASE_MS })
  const waiter = new Lock(b, name, { holder: 'B', leaseMs: LEASE_MS, followKey })
  // The waiter has tried and been refused once it asks who holds the lock: then it waits.
  const mark = b.verbs.length
  const acquiring = waiter.acquire({ timeoutMs: 30_000 })
  await untilRefused(b, mark)
  const t0 = performance.now()
  const releasing = holder.release()
  await acquiring
  const ms = performance.now() - t0
  await releasing
  await waiter.release()
  return ms
}

/**
 * Waits, without sleeping (a process that slept wakes late on a loaded machine, and the floor's does
 * not sleep), until the waiter's try was answered: the SET after its registration, if it made one.
 */
async function untilRefused(b, mark) {
  for (;;) {
    const since = b.verbs.slice(mark)
    if (since.indexOf('SET', since.lastIndexOf('KEYNOTIFY') + 1) >= 0) return
    await new Promise((resolve) => setImmediate(resolve))
  }
}

/** Two Lock.edit loops and two SDK-algorithm loops on one counter until EDITS; each side's median edit time. */
async function contest(name) {
  const clients = await Promise.all([0, 1, 2, 3].map(() => connectClient(emulator.url)))
  const key = `${name}-counter`
  const lockName = `${name}.lock`
  const times = { ours: [], sdk: [] }
  try {
    await Promise.all([
      ourLoop(clients[0], lockName, key, times.ours),
      ourLoop(clients[1], lockName, key, times.ours),
      sdkLoop(clients[2], lockName, key, times.sdk),
      sdkLoop(clients[3], lockName, key, times.sdk),
    ])
    const counted = Number((await clients[0].get(key)).value?.toString())
    if (counted !== EDITS || times.ours.length + times.sdk.length !== EDITS)
      throw new Error(`the counter says ${counted}, ${times.ours.length + times.sdk.length} edits made`)
  } finally {
    await Promise.all(clients.map((c) => c.close()))
  }
  // A side that made no edit has no median: its contenders had every turn.
  const median = (t) => (t.length > 0 ? percentiles(t).p50 : Infinity)
  return { ours: median(times.ours), sdk: median(times.sdk), oursShare: times.ours.length / EDITS }
}

async function ourLoop(c, lockName, key, times) {
  const lock = new Lock(c, lockName, { leaseMs: LEASE_MS })
  for (;;) {
    let reached = false
    const started = performance.now()
    await lock.edit(
      key,
      (value) => {
        const current = Number(value?.toString() ?? '0')
        reached = current >= EDITS
        return reached ? value : String(current + 1)
      },
      { timeoutMs: 60_000 },
    )
    if (reached) return
    times.push(performance.now() - started)
    await sleep(THINK_MS)
  }
}

/** The Go SDK's Lock then Edit then Unlock, on our client: KEYNOTIFY first, SET NEX, a DELETE wakes a refused try. */
async function sdkLoop(c, lockName, key, times) {
  for (;;) {
    const started = performance.now()
    let wake = null
    const observation = await c.observe(lockName, (n) => n.operation === 'DELETE' && wake?.())
    let token
    try {
      for (;;) {
        const freed = new Promise((resolve) => (wake = resolve))
        const { applied, version } = await c.set(lockName, c.clientId, { condition: 'NEX', expiryMs: LEASE_MS })
        if (applied) {
          token = version
          break
        }
        await freed
      }
    } finally {
      await observation.close()
    }
    const { value } = await c.get(key)
    const current = Number(value?.toString() ?? '0')
    if (current < EDITS) await c.set(key, String(current + 1), { fencingToken: token })
    await c.vdel(lockName, c.clientId)
    if (current >= EDITS) return
    times.push(performance.now() - started)
    await sleep(THINK_MS)
  }
}

/** The interop lane's Go program, built into its cache (as the lane builds it); null without Go. */
function buildGoContender() {
  const cache = process.env.INTEROP_CACHE ?? join(homedir(), '.cache', 'aio-statestore-interop')
  const out = join(cache, 'go', 'interop')
  const built = spawnSync('go', ['build', '-mod=readonly', '-trimpath', '-o', out, '.'], {
    cwd: join(ROOT, 'test', 'system', 'interop', 'go'),
    env: { ...process.env, GOCACHE: process.env.GOCACHE ?? join(cache, 'go-build') },
    stdio: ['ignore', 'inherit', 'inherit'],
  })
  if (built.error || built.status !== 0) {
    console.warn('(the real Go SDK is left out: Go is not installed, or go build failed)')
    return null
  }
  return out
}

/** One Go SDK contender: connected, it waits for `go()`; `done` settles with its turns' times. */
function startGoContender(lockName, key, prefix) {
  const child = spawn(
    goContender,
    [
      '-case',
      'bench',
      '-url',
      emulator.url,
      '-prefix',
      prefix,
      '-n',
      String(EDITS),
      '-lock',
      lockName,
      '-key',
      key,
      '-lease-ms',
      String(LEASE_MS),
      '-timeout',
      '600s',
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  )
  const times = []
  let output = ''
  let onReady
  const ready = new Promise((resolve) => (onReady = resolve))
  createInterface({ input: child.stdout }).on('line', (line) => {
    output += `${line}\n`
    if (line.startsWith('STEP connected')) onReady()
    else if (line.startsWith('TURN ')) times.push(Number(line.slice(5)))
  })
  const done = new Promise((resolve, reject) =>
    child.once('exit', (code) =>
      code === 0 ? resolve(times) : reject(new Error(`the Go SDK contender exited ${code}:\n${output}`)),
    ),
  )
  return { ready, done, go: () => child.stdin.write('\n') }
}

/** A turn's least: SET NEX, GET, SET, VDEL, one after another, on a free lock and its key. */
async function bareTurns(c, name) {
  const lockSet = { condition: 'NEX', expiryMs: LEASE_MS }
  const times = []
  for (let i = 0; i < BARE; i++) {
    const t0 = performance.now()
    await c.set(`${name}.bare-lock`, c.clientId, lockSet)
    const { value } = await c.get(`${name}.bare`)
    await c.set(`${name}.bare`, String(Number(value?.toString() ?? '0') + 1))
    await c.vdel(`${name}.bare-lock`, c.clientId)
    times.push(performance.now() - t0)
  }
  return percentiles(times).p50
}

/** Two Lock.edit loops here and two Go SDK processes on one counter until EDITS, and the bare turn. */
async function goContest(name) {
  const clients = await Promise.all([0, 1].map(() => connectClient(emulator.url)))
  const key = `${name}-counter`
  const lockName = `${name}.lock`
  const times = { ours: [], go: [] }
  try {
    const bare = await bareTurns(clients[0], name)
    const goes = [0, 1].map((i) => startGoContender(lockName, key, `${name}-go${i}`))
    await Promise.all(goes.map((g) => g.ready))
    for (const g of goes) g.go()
    const [goA, goB] = await Promise.all([
      ...goes.map((g) => g.done),
      ourLoop(clients[0], lockName, key, times.ours),
      ourLoop(clients[1], lockName, key, times.ours),
    ])
    times.go.push(...goA, ...goB)
    const counted = Number((await clients[0].get(key)).value?.toString())
    if (counted !== EDITS || times.ours.length + times.go.length !== EDITS)
      throw new Error(
        `beside the Go SDK the counter says ${counted}, ${times.ours.length + times.go.length} edits made`,
      )
    const median = (t) => (t.length > 0 ? percentiles(t).p50 : Infinity)
    return { ours: median(times.ours), go: median(times.go), bare, oursShare: times.ours.length / EDITS }
  } finally {
    await Promise.all(clients.map((c) => c.close()))
  }
}

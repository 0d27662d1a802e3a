// Joins the events bench/lib/watch-trace.cjs recorded in every process of `bench/watch.mjs --trace`
// by (round, sequence number) and splits each message's latency into stages. One table per path:
// per stage its p50 and p99 over all measured messages, and its mean over the slowest 1% (by total
// latency), which is where the p99 comes from.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { quantile, table } from './harness.mjs'

/** Events of one process, as arrays of objects in time order. */
function eventsOf(raw) {
  const out = []
  for (let i = 0; i < raw.type.length; i++)
    out.push({
      type: raw.type[i],
      topic: raw.topic[i],
      seq: raw.seq[i],
      stamp: raw.stamp[i],
      t: raw.t[i],
      extra: raw.extra[i],
    })
  return out
}

/**
 * Per round (a new round starts where the sequence number goes down), a Map seq -> event, for the
 * events matching `type` and `topic`; `withWrite` adds `.w`, the first socket write after the publish.
 */
function byRound(events, type, topic, { withWrite = false } = {}) {
  const rounds = []
  let current = null
  let prev = Infinity
  const writes = withWrite ? events.filter((e) => e.type === 'W') : []
  let wi = 0
  for (const e of events) {
    if (e.type !== type || e.topic !== topic || e.seq < 0) continue
    if (current === null || e.seq < prev) rounds.push((current = new Map()))
    prev = e.seq
    if (current.has(e.seq)) continue
    const entry = { ...e }
    if (withWrite) {
      while (wi < writes.length && (writes[wi].extra < e.extra || writes[wi].t < e.t)) wi++
      entry.w = writes[wi]?.t ?? NaN
    }
    current.set(e.seq, entry)
  }
  return rounds
}

const ms = (ns) => ns / 1e6

/** The garbage collections of one process, as [start, end] in ns. */
const gcOf = (events) => events.filter((e) => e.type === 'G').map((e) => [e.t, e.t + e.extra])

/** How much of [a, b] the collections cover, ns (they are in time order). */
function gcWithin(gcs, a, b) {
  let sum = 0
  for (const [s, e] of gcs) {
    if (s >= b) break
    if (e > a) sum += Math.min(b, e) - Math.max(a, s)
  }
  return sum
}

/**
 * `chain` lists the stamps of one message in order: [name, (round, seq) -> ns, collections of the
 * process the stamp is taken in]. A stage is charged the collections of the process it ends in
 * (for a hop, the receiver: it reads the bytes only when its event loop is free). Returns the
 * stage table over the measured rounds (the first `warmup` are skipped).
 */
function stageTable(title, chain, roundCount, warmup, seqs) {
  const rows = []
  for (let r = warmup; r < roundCount; r++) {
    for (const seq of seqs(r)) {
      const stamps = chain.map(([, at]) => at(r, seq))
      if (stamps.some((x) => !Number.isFinite(x))) continue
      rows.push(stamps)
    }
  }
  if (rows.length === 0) return null
  const totals = rows.map((s) => s[s.length - 1] - s[0])
  const order = totals.map((_, i) => i).sort((a, b) => totals[a] - totals[b])
  const slow = order.slice(Math.floor(order.length * 0.99))
  const lines = []
  for (let k = 1; k < chain.length; k++) {
    const d = Float64Array.from(rows.map((s) => s[k] - s[k - 1])).sort()
    const slowMean = slow.reduce((a, i) => a + rows[i][k] - rows[i][k - 1], 0) / slow.length
    const gcs = chain[k][2] ?? []
    const slowGc = slow.reduce((a, i) => a + gcWithin(gcs, rows[i][k - 1], rows[i][k]), 0) / slow.length
    lines.push([
      `${chain[k - 1][0]} -> ${chain[k][0]}`,
      ms(quantile(d, 0.5)).toFixed(3),
      ms(quantile(d, 0.99)).toFixed(3),
      ms(slowMean).toFixed(3),
      ms(slowGc).toFixed(3),
    ])
  }
  const sortedTotals = Float64Array.from(totals).sort()
  const slowTotal = slow.reduce((a, i) => a + totals[i], 0) / slow.length
  lines.push([
    'total',
    ms(quantile(sortedTotals, 0.5)).toFixed(3),
    ms(quantile(sortedTotals, 0.99)).toFixed(3),
    ms(slowTotal).toFixed(3),
    '',
  ])
  return table(
    `${title}: stages of ${rows.length} messages, ms (a stage's p50/p99 do not add up to the total's)`,
    ['stage', 'p50', 'p99', 'mean of slowest 1%', 'of it in GC'],
    lines,
  )
}

/**
 * `dir` holds the JSON files of the other processes (writer-<mode>-*, emulator-*, relay-*); `watcher`
 * is the benchmark's own events. `warmup` rounds are left out.
 */
export function traceReport({ dir, watcher, warmup }) {
  const files = readdirSync(dir)
  const load = (prefix) => {
    const f = files.find((n) => n.startsWith(prefix))
    return f ? eventsOf(JSON.parse(readFileSync(join(dir, f), 'utf8'))) : []
  }
  // A listener call (L) is paired with the watcher's last PUBLISH (R) of the same sequence number before it.
  const w = eventsOf(watcher)
  const lastR = new Map()
  for (const e of w) {
    if (e.type === 'R') lastR.set(e.seq, e)
    if (e.type === 'L') {
      e.bytesIn = lastR.get(e.seq)?.extra ?? NaN
      e.message = lastR.get(e.seq)?.t ?? NaN
    }
  }
  const tables = []
  const get =
    (rounds, field = 't') =>
    (r, seq) =>
      rounds[r]?.get(seq)?.[field] ?? NaN
  const cg = gcOf(w)
  // Every path starts in a writer and ends at the watcher's listener; only the stages between differ.
  const writerStages = (wp, wg) => [
    ['value stamped', get(wp, 'stamp'), wg],
    ['writer publish()', get(wp), wg],
    ['writer socket write', get(wp, 'w'), wg],
  ]
  const watcherStages = (cl) => [
    ['watcher bytes in', get(cl, 'bytesIn'), cg],
    ['watcher message', get(cl, 'message'), cg],
    ['listener', get(cl), cg],
  ]
  const addTable = (title, chain, cl) => {
    const t = stageTable(title, chain, cl.length, warmup, (r) => cl[r]?.keys() ?? [])
    if (t) tables.push(t)
  }

  // State store: writer SET publish -> emulator request -> notification publish -> watcher.
  {
    const writer = load('writer-statestore-')
    const wp = byRound(writer, 'P', 'Q', { withWrite: true })
    const emu = load('emulator-')
    const eg = gcOf(emu)
    const er = byRound(emu, 'R', 'Q')
    const ep = byRound(emu, 'P', 'N', { withWrite: true })
    const cl = byRound(w, 'L', 'statestore')
    addTable(
      'trace, state store',
      [
        ...writerStages(wp, gcOf(writer)),
        ['emulator bytes in', get(er, 'extra'), eg],
        ['emulator request handled', get(er), eg],
        ['notification publish()', get(ep), eg],
        ['emulator socket write', get(ep, 'w'), eg],
        ...watcherStages(cl),
      ],
      cl,
    )
  }
  // The references: one hop (raw), two hops through a bare relay (relay).
  for (const mode of ['raw', 'relay']) {
    const writer = load(`writer-${mode}-`)
    const wp = byRound(writer, 'P', 'B', { withWrite: true })
    if (wp.length === 0) continue
    const relay = mode === 'relay' ? load('relay-') : []
    const rg = gcOf(relay)
    const rr = byRound(relay, 'R', 'B')
    const rp = byRound(relay, 'P', 'B', { withWrite: true })
    const cl = byRound(w, 'L', mode)
    const relayStages = [
      ['relay bytes in', get(rr, 'extra'), rg],
      ['relay message', get(rr), rg],
      ['relay publish()', get(rp), rg],
      ['relay socket write', get(rp, 'w'), rg],
    ]
    addTable(
      `trace, ${mode === 'raw' ? 'one-hop publish' : 'two-hop bare relay'}`,
      [...writerStages(wp, gcOf(writer)), ...(mode === 'relay' ? relayStages : []), ...watcherStages(cl)],
      cl,
    )
  }
  // How much each process collects over the whole run (warm-up and set-up included).
  const gcRows = []
  for (const [name, events] of [
    ['watcher (benchmark process)', w],
    ...['emulator-', 'relay-', 'writer-statestore-', 'writer-raw-', 'writer-relay-'].map((p) => [
      p.replace(/-$/, ''),
      load(p),
    ]),
  ]) {
    const g = events.filter((e) => e.type === 'G')
    if (g.length === 0) continue
    const kinds = {}
    for (const e of g) kinds[e.topic] = (kinds[e.topic] ?? 0) + 1
    gcRows.push([
      name,
      g.length,
      ms(g.reduce((a, e) => a + e.extra, 0)).toFixed(1),
      ms(Math.max(...g.map((e) => e.extra))).toFixed(2),
      JSON.stringify(kinds),
    ])
  }
  tables.push(
    table(
      'trace, garbage collection per process over the whole run',
      ['process', 'collections', 'total ms', 'longest ms', 'by kind (1 minor, 2 major, 4 incremental, 8 weak)'],
      gcRows,
    ),
  )
  return tables
}

// Measurement 5: the RESP codec against redis-parser and the RESP3 decoder/encoder of @redis/client.
//
// Each MQTT response carries exactly one complete RESP value, so every decoder is given one whole
// payload per call: ours through `decodeExact` (what the client does with a response), the two
// streaming parsers through their `execute`/`write` entry point with a reply callback. All three
// return bulk strings as Buffers (redis-parser `returnBuffers`, @redis/client type mapping
// `$ -> Buffer`) so nobody pays for a UTF-8 decode the others skip.
//
// Every codec runs in a process of its own (bench/codec-worker.mjs), new ones every round. A round
// of one case is `SLICES` passes of A B C, a few milliseconds each, only one process running at a
// time, so a burst of load from elsewhere lands on all three alike; the ratio is taken per round.
import { fork } from 'node:child_process'
import { join } from 'node:path'
import { DECODERS, ENCODERS, decodeCases, encodeCases } from './codec-worker.mjs'
import { BENCH_DIR, benchArgs, fmtNum, fmtRange, fmtRatio, summarize, table, writeResult } from './lib/harness.mjs'

const { quick, rounds } = benchArgs()
const SLICES = quick ? 6 : 12
const SLICE_MS = 6

/** A forked codec worker; `slice(name, ms)` times one slice in it. */
async function startWorker(side, variant) {
  const child = fork(join(BENCH_DIR, 'codec-worker.mjs'), [side, variant], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  let waiting = null
  child.on('message', (m) => waiting?.(m))
  const next = () => new Promise((resolve) => (waiting = resolve))
  await next() // ready
  return {
    slice: (name, ms) => {
      const reply = next()
      child.send({ name, ms })
      return reply
    },
    stop: () => child.kill(),
  }
}

/**
 * Every round starts fresh worker processes (so the median also spans V8's optimisation luck, which
 * differs from process to process), then runs each case as SLICES passes of A B C ….
 * Returns variant -> case -> { median, min, max, samples } of ops/s.
 */
async function measureSide(side, variants, cases) {
  const samples = Object.fromEntries(variants.map((v) => [v, Object.fromEntries(cases.map((c) => [c, []]))]))
  for (let r = 0; r < rounds; r++) {
    const workers = {}
    for (const v of variants) workers[v] = await startWorker(side, v)
    for (const name of cases) {
      const acc = Object.fromEntries(variants.map((x) => [x, { ops: 0, ms: 0 }]))
      for (let s = 0; s < SLICES; s++) {
        for (const x of variants) {
          const { ops, ms } = await workers[x].slice(name, SLICE_MS)
          acc[x].ops += ops
          acc[x].ms += ms
        }
      }
      for (const x of variants) samples[x][name].push((acc[x].ops / acc[x].ms) * 1000)
    }
    for (const w of Object.values(workers)) w.stop()
  }
  return Object.fromEntries(
    variants.map((v) => [v, Object.fromEntries(cases.map((c) => [c, summarize(samples[v][c])]))]),
  )
}

const dec = await measureSide('decode', DECODERS, [...Object.keys(decodeCases), 'mix'])
const enc = await measureSide('encode', ENCODERS, Object.keys(encodeCases))

/** ours / ref, per round. */
function vs(r, ref, metric) {
  const ratios = r.ours[metric].samples.map((x, i) => x / r[ref][metric].samples[i])
  const sorted = [...ratios].sort((a, b) => a - b)
  return { median: sorted[Math.floor(sorted.length / 2)], min: sorted[0], max: sorted[sorted.length - 1] }
}
function altVsOurs(r, metric) {
  const ratios = r.alt[metric].samples.map((x, i) => x / r.ours[metric].samples[i]).sort((a, b) => a - b)
  return { median: ratios[Math.floor(ratios.length / 2)], min: ratios[0], max: ratios[ratios.length - 1] }
}
const target = (metric, s) => ({
  metric,
  value: Number(s.median.toFixed(3)),
  min: s.min,
  max: s.max,
  target: '>= 1.0x',
  pass: s.median >= 1.0,
})

const rows = []
const headline = []
for (const name of [...Object.keys(decodeCases), 'mix']) {
  const label = name === 'mix' ? 'mix (4 bulk : 2 $-1 : 2 +OK : 1 :1 : 1 NOTIFY)' : name
  if (dec.alt) console.log(`alt / ours, decode ${name}: ${fmtRatio(altVsOurs(dec, name))}`)
  rows.push([
    `decode ${label}`,
    fmtRange(dec.ours[name]),
    fmtRange(dec['redis-parser'][name]),
    fmtRange(dec['@redis/client'][name]),
    fmtRatio(vs(dec, 'redis-parser', name)),
    fmtRatio(vs(dec, '@redis/client', name)),
  ])
  headline.push(
    target(`decode ${name} vs redis-parser`, vs(dec, 'redis-parser', name)),
    target(`decode ${name} vs @redis/client`, vs(dec, '@redis/client', name)),
  )
}
for (const name of Object.keys(encodeCases)) {
  if (enc.alt) console.log(`alt / ours, encode ${name}: ${fmtRatio(altVsOurs(enc, name))}`)
  const joined = vs(enc, '@redis/client (joined)', name)
  const chunks = vs(enc, '@redis/client (chunks)', name)
  rows.push([
    `encode ${name}`,
    fmtRange(enc.ours[name]),
    '–',
    `${fmtNum(enc['@redis/client (joined)'][name].median)} joined / ${fmtNum(enc['@redis/client (chunks)'][name].median)} chunks`,
    '–',
    `${fmtRatio(joined)} joined / ${chunks.median.toFixed(2)}x chunks`,
  ])
  // The target is against a payload: MQTT needs one contiguous Buffer, which the chunk list is not.
  headline.push(target(`encode ${name} vs @redis/client joined`, joined))
}

const t = table(
  `RESP codec, ops/s median (min–max), ${rounds} rounds, each codec in its own process, interleaved in slices; ratio = ours / reference per round`,
  ['case', 'ours', 'redis-parser', '@redis/client', 'ours / redis-parser', 'ours / @redis/client'],
  rows,
)
const missed = headline.filter((h) => !h.pass)
console.log(
  missed.length === 0
    ? 'codec: every case >= 1.0x'
    : `codec: below 1.0x: ${missed.map((m) => `${m.metric} ${m.value}x`).join('; ')}`,
)
writeResult('codec', {
  tables: [t],
  headline,
  data: { decode: dec, encode: enc },
  notes: [
    'decoders get one whole payload per call (an MQTT message holds exactly one value); bulk strings are Buffers in all three',
    'each codec is timed in its own process (new ones every round) after seeing every payload shape, as a client does; a round interleaves the processes in 6 ms slices',
    '@redis/client encodes to a list of chunks for a socket write; an MQTT payload is one Buffer, so the target is against the chunks joined',
  ],
})

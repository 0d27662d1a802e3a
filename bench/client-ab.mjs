// Same-run A/B of builds of the client against the bare mqtt.js requester on one echo responder
// (bench/README.md, Issue 13, "second pass"). Each build is a compiled dist/ of this package, e.g. of
// an older commit built elsewhere; all run in this one process, interleaved round by round.
//   node bench/client-ab.mjs <GET|SET> <window> <ms> <rounds> <echo broker URL> before=/path/dist after=dist [bare-promise]
// (`bare-promise`: the bare requester awaiting a promise per request, see bench/lib/bare-requester.mjs.)
// Prints one JSON line per build: requester CPU per request and ops/s, and per-round ratios to bare
// (median (min–max)). Start the echo responder with bench/lib/procs.mjs's startEchoProcess.
import { createRequire } from 'node:module'
import { resolve } from 'node:path'
import { connectBare, connectBarePromises } from './lib/bare-requester.mjs'
import { drive, keyOf, VALUE_100 } from './lib/load.mjs'

const require = createRequire(import.meta.url)
const [op, window, ms, rounds, url, ...builds] = process.argv.slice(2)
const clients = { bare: await connectBare(url) }
let n = 0
for (const spec of builds) {
  if (spec === 'bare-promise') {
    clients[spec] = await connectBarePromises(url)
    continue
  }
  const [name, dist] = spec.split('=')
  const { StateStoreClient } = require(resolve(dist, 'src/client'))
  const c = new StateStoreClient({ brokerUrl: url, clientId: `ab-${process.pid}-${++n}`, requestTimeoutMs: 10_000, maxInFlight: 2000 })
  c.on('error', () => {})
  await c.ready({ timeoutMs: 10_000 })
  clients[name] = c
}
const variants = Object.keys(clients)
if (op === 'GET') for (let i = 0; i < 1000; i++) await clients[variants[1]].set(keyOf(i), VALUE_100)
const res = Object.fromEntries(variants.map((v) => [v, { cpu: [], ops: [] }]))
for (let r = 0; r < +rounds; r++) {
  for (const v of r % 2 ? [...variants].reverse() : variants) {
    const c = clients[v]
    const run = (s) => (v.startsWith('bare') ? c.drive(s) : drive(c, s))
    await run({ op, window: +window, ms: 150, keys: 1000 })
    const cpu0 = process.cpuUsage()
    const x = await run({ op, window: +window, ms: +ms, keys: 1000 })
    const cpu = process.cpuUsage(cpu0)
    res[v].cpu.push((cpu.user + cpu.system) / x.done)
    res[v].ops.push(x.opsPerSec)
  }
}
const fmt = (a, d = 2) => {
  const s = [...a].sort((x, y) => x - y)
  return `${s[s.length >> 1].toFixed(d)} (${s[0].toFixed(d)}–${s[s.length - 1].toFixed(d)})`
}
for (const v of variants.slice(1)) {
  const b = res.bare
  console.log(JSON.stringify({ op, window, v, cpu: fmt(res[v].cpu, 1), bareCpu: fmt(b.cpu, 1), cpuRatio: fmt(b.cpu.map((x, i) => x / res[v].cpu[i])), ops: fmt(res[v].ops, 0), bareOps: fmt(b.ops, 0), opsRatio: fmt(res[v].ops.map((o, i) => o / b.ops[i])) }))
}
for (const c of Object.values(clients)) await c.close()
process.exit(0)

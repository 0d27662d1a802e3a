// The client's own request layer alone, without MQTT (bench/README.md, Issue 13, "third pass"): the
// code of client.get/set (argument checks, RESP encoding, correlation, the pending record and its
// promise, HLC stamp, request properties, then the answer's header checks, `__ts` parse and clock
// merge, reply parsing) over its Requests class, with a stand-in transport that acknowledges and
// answers every publish in the next turn of the event loop (a fresh packet object per answer, as
// mqtt-packet makes one). CPU per request in ns, builds of dist/ interleaved round by round.
//   node bench/client-layer.mjs <GET|SET> <window> <rounds> before=/path/to/dist after=dist
import { createRequire } from 'node:module'
import { resolve } from 'node:path'
import { keyOf, VALUE_100 } from './lib/load.mjs'
const require = createRequire(import.meta.url)
const [op, window, rounds, ...builds] = process.argv.slice(2)
const variants = builds.map((spec) => {
  const [name, dist] = spec.split('=')
  const d = resolve(dist, 'src')
  const { Requests } = require(`${d}/client/requests.js`)
  const { resolveOptions } = require(`${d}/client/options.js`)
  const { get } = require(`${d}/client/get.js`)
  const { set } = require(`${d}/client/set.js`)
  const { Reply } = require(`${d}/protocol/index.js`)
  const { HybridLogicalClock } = require(`${d}/hlc/index.js`)
  const version = new HybridLogicalClock({ nodeId: 'svc' }).tick().toString()
  const answer = op === 'GET' ? Reply.value(VALUE_100) : Reply.ok
  let queue = []
  let scheduled = false
  let requests
  const flush = () => {
    scheduled = false
    const q = queue
    queue = []
    for (const [props, onAck] of q) {
      onAck({})
      // a fresh packet per answer, as mqtt-packet makes one
      requests.handleResponse(answer, { properties: { correlationData: Buffer.from(props.correlationData), contentType: 'application/octet-stream', userProperties: { __stat: '200', __protVer: '1.0', __ts: version } } })
    }
  }
  let mid = 0
  const transport = {
    online: true,
    status: { state: 'connected' },
    publish(topic, payload, properties, onAck) {
      queue.push([properties, onAck])
      if (!scheduled) { scheduled = true; setImmediate(flush) }
      return (mid = (mid % 65535) + 1)
    },
    forget() {},
  }
  const options = resolveOptions({ brokerUrl: 'mqtt://127.0.0.1:1', clientId: `micro-${name}`, requestTimeoutMs: 10_000, maxInFlight: 2000 })
  requests = new Requests(transport, options, `clients/micro-${name}/services/x/response`)
  const invoke = requests.invoke
  const client = { get: (k) => get(invoke, k), set: (k, v) => set(invoke, k, v) }
  return { name, client }
})
async function drive(client, n) {
  let counter = 0
  const per = Math.ceil(n / +window)
  const loop = async () => {
    for (let i = 0; i < per; i++) {
      const key = keyOf(counter++ % 1000)
      if (op === 'GET') await client.get(key)
      else await client.set(key, VALUE_100)
    }
  }
  await Promise.all(Array.from({ length: +window }, loop))
  return per * +window
}
const res = Object.fromEntries(variants.map((v) => [v.name, []]))
for (const v of variants) await drive(v.client, 20000)
for (let r = 0; r < +rounds; r++) {
  for (const v of r % 2 ? [...variants].reverse() : variants) {
    const c0 = process.cpuUsage()
    const n = await drive(v.client, 20000)
    const c = process.cpuUsage(c0)
    res[v.name].push(((c.user + c.system) * 1000) / n)
  }
}
const med = (a) => [...a].sort((x, y) => x - y)[a.length >> 1]
const fmt = (a) => { const s = [...a].sort((x, y) => x - y); return `${med(a).toFixed(0)} (${s[0].toFixed(0)}–${s[s.length - 1].toFixed(0)})` }
const base = res[variants[0].name]
console.log(op, 'window', window, variants.map((v) => `${v.name} ${fmt(res[v.name])} ns/req, ratio to ${variants[0].name} ${fmt(res[v.name].map((x, i) => x / base[i] * 1000)).replace(/(\d+)/g, (m) => (m / 1000).toFixed(2))}`).join(' | '))
process.exit(0)

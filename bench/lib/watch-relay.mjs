// The two-hop reference of the watch benchmark, in its own process (spawned by bench/watch.mjs):
//   watch-relay.mjs <brokerUrl>
// A plain mqtt.js client, with no code of this project, that republishes every message it receives
// on bench/relay/<key> to bench/watch/<key> at QoS 1: the path a key notification takes (writer ->
// broker -> a service process -> broker -> watcher) with nothing done in the middle. The state store
// against it shows what the emulator and the client library add; against the one-hop publish, what
// the whole path costs.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const mqtt = require('mqtt')

const client = mqtt.connect(process.argv[2], {
  protocolVersion: 5,
  clientId: `watch-relay-${process.pid}`,
  reconnectPeriod: 0,
})
client.on('connect', () => client.stream.setNoDelay?.(true))
client.on('message', (topic, payload) =>
  client.publish(`bench/watch/${topic.slice('bench/relay/'.length)}`, payload, { qos: 1 }),
)
await new Promise((resolve, reject) => {
  client.once('connect', resolve)
  client.once('error', reject)
})
await client.subscribeAsync('bench/relay/#', { qos: 1 })
console.log('relay ready')
process.on('SIGTERM', () => client.end(true, () => process.exit(0)))

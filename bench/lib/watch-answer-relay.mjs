// The answering reference of the watch benchmark, in its own process (spawned by bench/watch.mjs):
//   watch-answer-relay.mjs <brokerUrl>
// A plain mqtt.js client, with no code of this project, that does the MQTT work the emulator does
// for a SET of a watched key and nothing else: each request on bench/ask/<key> (sent with the
// client's properties by bench/lib/watch-writer.mjs in `answer` mode) is answered `+OK` on its
// response topic with its correlation data and the answer's user properties, and its value is
// republished to bench/watch/<key> with a notification's properties, both at QoS 1. So one PUBLISH
// in, two out and two PUBACKs in, where the bare relay (watch-relay.mjs) has one of each.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const mqtt = require('mqtt')

const OK = Buffer.from('+OK\r\n')
const client = mqtt.connect(process.argv[2], {
  protocolVersion: 5,
  clientId: `watch-answer-relay-${process.pid}`,
  reconnectPeriod: 0,
})
client.on('connect', () => client.stream.setNoDelay?.(true))
let counter = 0
const stamp = () => `${String(Date.now()).padStart(15, '0')}:${String(++counter % 100000).padStart(5, '0')}:relay`
client.on('message', (topic, payload, packet) => {
  const ts = stamp()
  const props = packet.properties ?? {}
  client.publish(props.responseTopic, OK, {
    qos: 1,
    properties: {
      correlationData: props.correlationData,
      contentType: 'application/octet-stream',
      userProperties: { __stat: '200', __protVer: '1.0', __ts: ts },
    },
  })
  client.publish(`bench/watch/${topic.slice('bench/ask/'.length)}`, payload, {
    qos: 1,
    properties: { contentType: 'application/octet-stream', userProperties: { __ts: ts, __protVer: '1.0' } },
  })
})
await new Promise((resolve, reject) => {
  client.once('connect', resolve)
  client.once('error', reject)
})
await client.subscribeAsync('bench/ask/#', { qos: 1 })
console.log('answer relay ready')
process.on('SIGTERM', () => client.end(true, () => process.exit(0)))

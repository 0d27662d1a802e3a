// The echo limit: the least a state store service over MQTT 5 can do. One mqtt.js client subscribed
// to the request topic answers every request at once with a fixed reply, correlation data echoed,
// and the headers a client requires (`__stat`, `__protVer`, `__ts`), the same properties and QoS as
// the emulator's answers. Nothing is parsed but one byte to tell a GET (answered with a 100-byte
// bulk string, what the emulator answers for the benchmark's keys) from anything else (`+OK`).
//
//   node bench/lib/echo-responder.mjs --broker <url>   serve through a broker
//   node bench/lib/echo-responder.mjs --listen         start the emulator's embedded aedes broker in
//                                                      this process and serve through it over
//                                                      loopback, exactly as the emulator does
// Prints "echo ready on <url>".
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { ROOT } from './harness.mjs'

const require = createRequire(import.meta.url)
const mqtt = require('mqtt')
const { REQUEST_TOPIC, CONTENT_TYPE, PROTOCOL_VERSION, Prop, Reply } = require(join(ROOT, 'dist/src/protocol'))
const { HybridLogicalClock } = require(join(ROOT, 'dist/src/hlc'))

const argv = process.argv.slice(2)
let url
let broker = null
if (argv[0] === '--broker') url = argv[1]
else if (argv[0] === '--listen') {
  const { startBroker } = require(join(ROOT, 'dist/src/emulator/broker/broker'))
  broker = await startBroker({ port: 0 })
  url = broker.url
} else {
  console.error('usage: echo-responder.mjs --broker <url> | --listen')
  process.exit(2)
}

const getReply = Reply.value(Buffer.alloc(100, 0x76))
const okReply = Reply.ok
// One fixed version for every answer: a real HLC, parseable, minted once.
const version = new HybridLogicalClock({ nodeId: 'echo' }).tick().toString()

const client = mqtt.connect(url, {
  protocolVersion: 5,
  clientId: `echo-${process.pid}`,
  clean: true,
  keepalive: 30,
  reconnectPeriod: 0,
})
client.on('connect', () => client.stream.setNoDelay?.(true))
client.on('error', (err) => console.error(`echo: ${err.message}`))
client.on('message', (topic, payload, packet) => {
  const props = packet.properties ?? {}
  if (!props.responseTopic || !props.correlationData) return
  // `*2\r\n$3\r\nGET…` against `*3…SET…`: the verb's first letter is byte 8.
  const answer = payload[8] === 0x47 /* G */ ? getReply : okReply
  client.publish(props.responseTopic, answer, {
    qos: 1,
    properties: {
      correlationData: props.correlationData,
      contentType: CONTENT_TYPE,
      userProperties: { [Prop.status]: '200', [Prop.protocolVersion]: PROTOCOL_VERSION, [Prop.timestamp]: version },
      ...(props.messageExpiryInterval !== undefined ? { messageExpiryInterval: props.messageExpiryInterval } : {}),
    },
  })
})
await new Promise((resolve, reject) => {
  client.once('connect', resolve)
  client.once('error', reject)
})
await client.subscribeAsync(REQUEST_TOPIC, { qos: 1 })
console.log(`echo ready on ${url}`)

const stop = async () => {
  await client.endAsync(true)
  await broker?.stop()
  process.exit(0)
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)

// The bare-MQTT reference for the requester side: a plain mqtt.js client that sends what
// StateStoreClient sends (the same RESP bytes, the same MQTT 5 properties: response topic,
// correlation data, message expiry, content type, payload format, and the user properties `__ts`,
// `__srcId`, `__protVer`, `$partition`, `$high_priority`, all fixed strings of the client's lengths),
// at QoS 1, and counts an answer as done when a message with its correlation data comes back. No code
// of ours is on its path: no encoder, no clock, no correlation map of ours, no promise per request
// (the callback of mqtt.js's own message event is all), no check of the reply. A figure "ours / bare"
// is therefore what our client, and behind it our service, keep of what MQTT itself allows.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const mqtt = require('mqtt')

// Topic and fixed strings as the client and the protocol have them (src/protocol); written out here
// so that not even our constants module is on the path.
const REQUEST_TOPIC = 'statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke'
const TS = '001732200000000:00000:00000000-0000-4000-8000-000000000000'
let count = 0

/** fixed RESP bytes of a 16-byte-key GET and a 100-byte-value SET, as bench/lib/load.mjs sends them */
export function fixedRequest(op) {
  const key = 'key-000000000001'
  if (op === 'GET') return Buffer.from(`*2\r\n$3\r\nGET\r\n$${key.length}\r\n${key}\r\n`)
  return Buffer.concat([
    Buffer.from(`*3\r\n$3\r\nSET\r\n$${key.length}\r\n${key}\r\n$100\r\n`),
    Buffer.alloc(100, 0x76),
    Buffer.from('\r\n'),
  ])
}

/**
 * `connectStream` (optional): a stream factory for mqtt.js instead of a TCP connection to the URL,
 * e.g. the embedded broker's in-process stream (src/emulator's inProcessConnector).
 */
export async function connectBare(brokerUrl, { connectStream } = {}) {
  const clientId = `bare-${process.pid}-${++count}`
  const responseTopic = `clients/${clientId}/services/${REQUEST_TOPIC}/response`
  const options = { protocolVersion: 5, clientId, clean: true, keepalive: 30, reconnectPeriod: 0, resubscribe: false }
  const client = connectStream ? new mqtt.MqttClient(() => connectStream(), options) : mqtt.connect(brokerUrl, options)
  client.on('error', () => {})
  await new Promise((resolve, reject) => {
    client.once('connect', resolve)
    client.once('error', reject)
  })
  client.stream.setNoDelay?.(true)
  await client.subscribeAsync(responseTopic, { qos: 1 })
  const userProperties = { __ts: TS, __srcId: clientId, __protVer: '1.0', $partition: clientId, $high_priority: '' }
  /** correlation number -> the loop to call back */
  const waiting = new Map()
  let next = 0
  client.on('message', (_topic, _payload, packet) => {
    const c = packet.properties?.correlationData
    if (!c) return
    const id = c.readUInt32BE(12)
    const done = waiting.get(id)
    if (done) {
      waiting.delete(id)
      done()
    }
  })
  const send = (payload, onReply) => {
    const id = ++next >>> 0
    // 16 bytes like the client's; a fresh Buffer per request because mqtt.js keeps the packet until its PUBACK.
    const correlationData = Buffer.alloc(16)
    correlationData.writeUInt32BE(id, 12)
    waiting.set(id, onReply)
    client.publish(REQUEST_TOPIC, payload, {
      qos: 1,
      properties: {
        responseTopic,
        correlationData,
        messageExpiryInterval: 10,
        contentType: 'application/octet-stream',
        payloadFormatIndicator: false,
        userProperties,
      },
    })
  }
  return {
    /** One request of these bytes; `onReply` when its answer is back. */
    send,
    /**
     * The same contract as load.mjs's drive(): `window` requests in flight for `ms`, each loop sending
     * its next when its previous is answered; ops/s until the last answer, latencies in ms when asked.
     */
    drive({ op, window, ms, latencies = null }) {
      const payload = fixedRequest(op)
      return new Promise((resolve) => {
        let done = 0
        let running = window
        const t0 = performance.now()
        const end = t0 + ms
        const loop = () => {
          if (performance.now() >= end) {
            if (--running === 0) resolve({ opsPerSec: (done / (performance.now() - t0)) * 1000, done, errors: 0 })
            return
          }
          const start = latencies ? performance.now() : 0
          send(payload, () => {
            done++
            if (latencies) latencies.push(performance.now() - start)
            loop()
          })
        }
        for (let i = 0; i < window; i++) loop()
      })
    },
    /** The mqtt.js client itself, for the variant below. */
    mqtt: client,
    close: () => client.endAsync(true),
  }
}

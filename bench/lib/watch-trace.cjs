// Bench-only stage trace for `bench/watch.mjs --trace`, loaded with `node --require` into the writer,
// the emulator and the watcher (never part of the product): it wraps mqtt.js and net.Socket from the
// outside and records, with process.hrtime (CLOCK_MONOTONIC, shared by every process), when
//   D  a chunk of bytes arrived on an MQTT connection (the first moment JavaScript sees it),
//   R  mqtt.js handed a PUBLISH to the application ('message'), with the D before it,
//   P  the application called publish(),
//   W  bytes were handed to the kernel (net.Socket _write/_writev), with how many publish() calls came before,
//   G  a garbage collection started (extra: how long it took, ns).
// An event carries the sequence number of the benchmark value it concerns (read from the payload:
// the value itself, or a RESP command ending with it) or -1. On exit the events go to
// $WATCH_TRACE_DIR/<role>-<pid>.json, which bench/watch.mjs joins by sequence number.
'use strict'
const net = require('node:net')
const { writeFileSync } = require('node:fs')
const { join } = require('node:path')
const { performance, PerformanceObserver } = require('node:perf_hooks')
const mqtt = require('mqtt')

const dir = process.env.WATCH_TRACE_DIR
const role = process.env.WATCH_TRACE_ROLE || 'process'
const now = () => Number(process.hrtime.bigint())

// Flat arrays, preallocated-ish: one push per event keeps the tracer's own cost small.
const ev = { type: [], topic: [], seq: [], t: [], extra: [], stamp: [] }
let published = 0
let lastData = 0

function topicKind(topic) {
  if (topic.includes('/command/notify/')) return 'N'
  if (topic.startsWith('bench/')) return 'B'
  if (topic.startsWith('statestore/')) return 'Q'
  return 'O'
}

/** The benchmark value's sequence number: the payload is the 100-byte value, or a RESP array ending with it. */
function valueOf(payload) {
  if (!Buffer.isBuffer(payload)) return null
  const n = payload.length
  if (n === 100 && payload[99] === 0x76) return payload
  if (n >= 102 && payload[n - 1] === 0x0a && payload[n - 3] === 0x76 && payload[n - 102 + 12] === 0x76)
    return payload.subarray(n - 102, n - 2)
  return null
}

function record(type, topic, payload, extra) {
  const value = valueOf(payload)
  ev.type.push(type)
  ev.topic.push(topic)
  ev.seq.push(value ? value.readUInt32LE(8) : -1)
  ev.stamp.push(value ? Number(value.readBigUInt64LE(0)) : 0)
  ev.t.push(now())
  ev.extra.push(extra)
}

// performance.now() and process.hrtime share their clock; this turns the one into the other.
const hrtimeAtPerformanceZero = now() - performance.now() * 1e6
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    ev.type.push('G')
    ev.topic.push(String(e.detail?.kind ?? ''))
    ev.seq.push(-1)
    ev.stamp.push(0)
    ev.t.push(hrtimeAtPerformanceZero + e.startTime * 1e6)
    ev.extra.push(e.duration * 1e6)
  }
}).observe({ entryTypes: ['gc'] })

const proto = mqtt.MqttClient.prototype
const emit = proto.emit
proto.emit = function (event, ...args) {
  if (event === 'connect' && this.stream && !this.stream.__watchTrace) {
    this.stream.__watchTrace = true
    this.stream.prependListener('data', () => (lastData = now()))
  } else if (event === 'message') {
    record('R', topicKind(args[0]), args[1], lastData)
  }
  return emit.call(this, event, ...args)
}
const publish = proto.publish
proto.publish = function (topic, payload, ...rest) {
  published++
  record('P', topicKind(topic), payload, published)
  return publish.call(this, topic, payload, ...rest)
}
for (const name of ['_write', '_writev']) {
  const original = net.Socket.prototype[name]
  net.Socket.prototype[name] = function (...args) {
    if (this.__watchTrace) record('W', '', null, published)
    return original.apply(this, args)
  }
}

// The watcher is the benchmark's own process: it marks the listener call and reads the events in place.
globalThis.__watchTrace = { events: ev, listener: (kind, value) => record('L', kind, value, 0) }

process.on('exit', () => {
  if (dir) writeFileSync(join(dir, `${role}-${process.pid}.json`), JSON.stringify(ev))
})

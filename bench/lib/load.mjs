// Driving load through the real client (dist/src/client).
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { ROOT } from './harness.mjs'

const require = createRequire(import.meta.url)
export const { StateStoreClient } = require(join(ROOT, 'dist/src/client'))

let clientCount = 0
export async function connectClient(brokerUrl, extra = {}) {
  const client = new StateStoreClient({
    brokerUrl,
    clientId: `bench-${process.pid}-${++clientCount}`,
    requestTimeoutMs: 10_000,
    maxInFlight: 2000,
    ...extra,
  })
  client.on('error', () => {})
  await client.ready({ timeoutMs: 10_000 })
  return client
}

/** 16-byte keys. */
export const keyOf = (i) => `key-${String(i).padStart(12, '0')}`
export const VALUE_100 = Buffer.alloc(100, 0x76)

/**
 * Keeps `window` requests in flight for `ms` milliseconds (each of `window` loops sends its next
 * request when the previous one is answered); returns ops/s over the time until the last answer,
 * and, when `latencies` is given, pushes every round trip in milliseconds.
 */
export async function drive(client, { op, window, ms, keys = 1000, latencies = null, keyOffset = 0 }) {
  let counter = 0
  let done = 0
  let errors = 0
  let firstError = null
  const t0 = performance.now()
  const end = t0 + ms
  const loop = async () => {
    while (performance.now() < end) {
      const key = keyOf(keyOffset + (counter++ % keys))
      const start = latencies ? performance.now() : 0
      try {
        if (op === 'GET') await client.get(key)
        else await client.set(key, VALUE_100)
        done++
        if (latencies) latencies.push(performance.now() - start)
      } catch (err) {
        errors++
        firstError ??= err
        if (errors > 100) throw new Error(`${op} failing: ${firstError.message}`, { cause: err })
      }
    }
  }
  await Promise.all(Array.from({ length: window }, loop))
  const elapsed = performance.now() - t0
  if (errors > 0) console.log(`warning: ${errors} ${op} request(s) failed: ${firstError.message}`)
  return { opsPerSec: (done / elapsed) * 1000, done, errors }
}

/** Loads `count` keys with 100-byte values through the client, `window` at a time. */
export async function preload(client, count, { window = 256, keyOffset = 0 } = {}) {
  let next = 0
  const loop = async () => {
    while (next < count) {
      const i = next++
      await client.set(keyOf(keyOffset + i), VALUE_100)
    }
  }
  await Promise.all(Array.from({ length: window }, loop))
}

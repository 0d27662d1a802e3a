// Opening a context store of many keys against the protocol's floor, in one run: a bare client
// observing every key the store follows (KEYNOTIFY, then a GET of the key, as client.observe does),
// the same pairs, pipelined with the client's window; then a context store opening the same keys
// (the index's buckets and delta, then every listed key). Rounds alternate the two; each round uses
// a fresh client id, so every registration is new.
import os from 'node:os'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { ROOT, summarize } from './harness.mjs'

const require = createRequire(import.meta.url)

/** Stores `count` context keys under `prefix` (scopes f0…f9) and their index, with a plain client. */
export async function seedContext(client, prefix, count, window = 1000) {
  const { BUCKETS, bucketOf, bucketKey } = require(join(ROOT, 'dist/src/context/index-format.js'))
  const buckets = Array.from({ length: BUCKETS }, () => ({}))
  const keys = []
  for (let i = 0; i < count; i++) {
    const scope = `f${i % 10}`
    const top = `k${i}`
    keys.push(`${prefix}${scope}/${top}`)
    const bucket = buckets[bucketOf(scope, top)]
    ;(bucket[scope] ??= []).push(top)
  }
  await pipelined(keys.length, window, (i) => client.set(keys[i], JSON.stringify({ i })))
  await Promise.all(
    buckets.map((b, i) => {
      for (const scope of Object.keys(b)) b[scope].sort()
      return Object.keys(b).length === 0 ? null : client.set(bucketKey(prefix, i), JSON.stringify(b))
    }),
  )
  // what a store follows: every bucket and the delta, then every key
  return [...Array.from({ length: BUCKETS }, (_, i) => bucketKey(prefix, i)), `${prefix}#keys/delta`, ...keys]
}

/** `count` calls of `one(i)`, `window` outstanding. */
export function pipelined(count, window, one) {
  return new Promise((resolve, reject) => {
    let sent = 0
    let finished = 0
    if (count === 0) return resolve()
    const next = () => {
      if (sent >= count) return
      const i = sent++
      one(i).then(() => {
        finished += 1
        if (finished === count) resolve()
        else next()
      }, reject)
    }
    for (let w = 0; w < Math.min(window, count); w++) next()
  })
}

/**
 * Times `rounds` openings of a store of `count` keys and as many bare runs of the same KEYNOTIFY +
 * GET pairs, alternated. Returns the seconds of each and their ratio paired by round.
 */
export async function measureOpen({ StateStoreClient, contextStore, brokerUrl, count, rounds, logger }) {
  const prefix = `bench/${process.pid}/open/`
  const seeder = new StateStoreClient({ brokerUrl, clientId: `bench-open-seed-${process.pid}` })
  await seeder.ready({ timeoutMs: 10_000 })
  const followed = await seedContext(seeder, prefix, count)
  await seeder.close()
  const bare = []
  const store = []
  let loadLines = 0
  for (let r = 0; r < rounds; r++) {
    const client = new StateStoreClient({ brokerUrl, clientId: `bench-open-bare-${r}-${process.pid}` })
    await client.ready({ timeoutMs: 10_000 })
    let started = performance.now()
    // the client's window: every request it lets out at once
    await pipelined(followed.length, 1000, (i) => client.observe(followed[i], () => {}))
    bare.push((performance.now() - started) / 1000)
    await client.close()

    started = performance.now()
    const opened = contextStore({
      broker: brokerUrl,
      prefix,
      clientId: `bench-open-store-${r}-${process.pid}`,
      logger: (level, message) => {
        if (level === 'info' && /loading/.test(message)) loadLines += 1
        logger(level, message)
      },
    })
    await opened.open()
    store.push((performance.now() - started) / 1000)
    const keys = (
      await Promise.all(
        Array.from(
          { length: 10 },
          (_, s) =>
            new Promise((resolve, reject) => opened.keys(`f${s}`, (err, k) => (err ? reject(err) : resolve(k.length)))),
        ),
      )
    ).reduce((a, b) => a + b, 0)
    await opened.close()
    if (keys !== count) throw new Error(`the store opened ${keys} keys of ${count}`)
  }
  return {
    count,
    bare: summarize(bare),
    store: summarize(store),
    ratio: summarize(store.map((s, i) => s / bare[i])),
    progressLines: loadLines,
    load: os.loadavg(),
  }
}

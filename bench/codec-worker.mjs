// One codec in a process of its own, forked by bench/codec.mjs with `<decode|encode> <variant>`;
// it times one slice of one case per message from the parent.
//
// Why a process per codec: in one shared process the codecs' results depend on what ran before
// (redis-parser decodes `$-1` at 18M/s in a fresh process and at 80M/s after it has seen other
// replies, on the same machine a minute apart). Here every codec first sees every payload shape, as
// a real client does, and only then is timed on each shape, in short slices the parent interleaves
// with the other codecs' (only one process runs at a time).
import { createRequire } from 'node:module'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ROOT } from './lib/harness.mjs'

const require = createRequire(import.meta.url)
const ours = require(join(ROOT, 'dist/src/resp'))
// RESP_ALT: another build of src/resp, measured as the extra variant `alt` (to develop the codec).
const alt = process.env.RESP_ALT ? require(resolve(process.env.RESP_ALT)) : null

const key = Buffer.from('bench-key-000001') // 16 bytes
const value100 = Buffer.alloc(100, 0x61)
const value64k = Buffer.alloc(64 * 1024, 0x62)

export const decodeCases = {
  '+OK': Buffer.from('+OK\r\n'),
  '$-1': Buffer.from('$-1\r\n'),
  ':1': Buffer.from(':1\r\n'),
  'bulk 100 B': ours.encodeBulk(value100),
  'bulk 64 KiB': ours.encodeBulk(value64k),
  'NOTIFY SET VALUE <100 B>': ours.encodeCommand(['NOTIFY', 'SET', 'VALUE', value100]),
}
// A reply stream as a client sees it under a read-mostly load: GET hits and misses, SET acks, a DEL,
// a notification, in this proportion, round-robin.
const MIX = [
  ...Array(4).fill('bulk 100 B'),
  ...Array(2).fill('$-1'),
  ...Array(2).fill('+OK'),
  ':1',
  'NOTIFY SET VALUE <100 B>',
].map((name) => decodeCases[name])

// The client hands keys and values to the encoder as Buffers (`requireKey`/`toBytes`).
export const encodeCases = {
  'GET <16 B key>': ['GET', key],
  'SET <16 B key> <100 B>': ['SET', key, value100],
  'SET <16 B key> <64 KiB>': ['SET', key, value64k],
}

export const DECODERS = ['ours', 'redis-parser', '@redis/client', ...(alt ? ['alt'] : [])]
export const ENCODERS = ['ours', '@redis/client (chunks)', '@redis/client (joined)', ...(alt ? ['alt'] : [])]

function decoderFor(variant) {
  let last = null
  const keep = (x) => {
    last = x
  }
  switch (variant) {
    case 'ours':
      return (payload) => ours.decodeExact(payload)
    case 'alt':
      return (payload) => alt.decodeExact(payload)
    case 'redis-parser': {
      const RedisParser = require('redis-parser')
      const parser = new RedisParser({ returnReply: keep, returnError: keep, returnBuffers: true })
      return (payload) => {
        parser.execute(payload)
        return last
      }
    }
    case '@redis/client': {
      const { Decoder, RESP_TYPES } = require('@redis/client/dist/lib/RESP/decoder')
      const typeMapping = { [RESP_TYPES.BLOB_STRING]: Buffer }
      const decoder = new Decoder({
        onReply: keep,
        onErrorReply: keep,
        onPush: keep,
        getTypeMapping: () => typeMapping,
      })
      return (payload) => {
        decoder.write(payload)
        return last
      }
    }
  }
  throw new Error(`unknown decoder ${variant}`)
}

// @redis/client's encoder returns the chunks to write to a socket (strings and Buffers); an MQTT
// payload must be one Buffer, so it is measured both as it is and joined into one Buffer.
export const joinChunks = (chunks) =>
  Buffer.concat(chunks.map((c) => (typeof c === 'string' ? Buffer.from(c, 'latin1') : c)))

function encoderFor(variant) {
  switch (variant) {
    case 'ours':
      return (args) => ours.encodeCommand(args)
    case 'alt':
      return (args) => alt.encodeCommand(args)
    case '@redis/client (chunks)':
      return require('@redis/client/dist/lib/RESP/encoder').default
    case '@redis/client (joined)': {
      const encode = require('@redis/client/dist/lib/RESP/encoder').default
      return (args) => joinChunks(encode(args))
    }
  }
  throw new Error(`unknown encoder ${variant}`)
}

/**
 * Runs `fn(i)` for about `ms` milliseconds; returns { ops, ms }. Each batch (about 0.1 ms) is one
 * call of a function compiled for this `fn` alone, and the clock is read between calls. The shared
 * `runFor` (bench/lib/harness.mjs) runs every batch inside one call per slice: V8 then only ever
 * optimizes its loop on stack (OSR), and `--trace-deopt` showed that code thrown away ("exit from
 * OSR'd inner loop") after every batch in some processes and not in others, for every codec alike,
 * so the same codec ran at 10M or 40M ops/s depending on the process (`:1`, all three codecs).
 * Called thousands of times, a batch function is optimized as a whole, as a client's decode is.
 */
const batchRunners = new Map()
function timeSlice(fn, ms) {
  let run = batchRunners.get(fn)
  if (!run) {
    // The comment makes each source text unique: V8 caches compiled `new Function` sources, and
    // functions from one cached source share their type feedback, so every case would see every
    // callee and none would be inlined.
    const batchOf = new Function(
      'fn',
      'batch',
      'keep',
      `for (let i = 0; i < batch; i++) keep[i & 7] = fn(i) // ${batchRunners.size}`,
    )
    const keep = new Array(8)
    let batch = 1
    for (;;) {
      const t0 = process.hrtime.bigint()
      batchOf(fn, batch, keep)
      if (Number(process.hrtime.bigint() - t0) / 1e6 >= 0.1 || batch >= 1 << 20) break
      batch *= 2
    }
    run = (t) => {
      let ops = 0
      let elapsed
      const t0 = process.hrtime.bigint()
      do {
        batchOf(fn, batch, keep)
        ops += batch
        elapsed = Number(process.hrtime.bigint() - t0) / 1e6
      } while (elapsed < t)
      return { ops, ms: elapsed }
    }
    batchRunners.set(fn, run)
  }
  return run(ms)
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const [side, variant] = process.argv.slice(2)
  let fns
  if (side === 'decode') {
    const decode = decoderFor(variant)
    fns = Object.fromEntries(Object.entries(decodeCases).map(([name, payload]) => [name, () => decode(payload)]))
    fns.mix = (i) => decode(MIX[i % MIX.length])
    for (const [name, payload] of Object.entries(decodeCases)) {
      if (decode(payload) === undefined) throw new Error(`${variant} did not decode ${name}`)
    }
  } else {
    const encode = encoderFor(variant)
    fns = Object.fromEntries(Object.entries(encodeCases).map(([name, args]) => [name, () => encode(args)]))
    for (const [name, args] of Object.entries(encodeCases)) {
      if (!joinChunks([].concat(encode(args))).equals(ours.encodeCommand(args)))
        throw new Error(`${variant} encodes ${name} differently`)
    }
  }
  // Every shape first, twice, so the measured code has seen all of them, as a client's has.
  for (let pass = 0; pass < 2; pass++) for (const fn of Object.values(fns)) timeSlice(fn, 20)
  // Then one timed slice per request from the parent: { name, ms } -> { ops, ms }.
  process.on('message', ({ name, ms }) => process.send(timeSlice(fns[name], ms)))
  process.send({ ready: true })
}

// Bulk import: `aio-statestore import` of an export file of 100,000 keys (16-byte keys, 100-byte
// values, the shape of the 13.9 MB file) into the emulator through mosquitto, against the
// MQTT floor measured on the same emulator in the same rounds: a bare mqtt.js requester
// (bench/lib/bare-requester.mjs) in this process sending the same SETs, pipelined with the same
// window as the command (256 in flight), the RESP bytes built before the clock starts. The command
// runs as a user runs it, a process of its own (`dist/src/cli/main.js`), timed from its start to its
// exit, so its figure also holds Node.js's start, the connect and both passes over the file (the
// check, then the writes); its peak RSS comes from the process itself (test/system/cli/peak-rss.cjs).
import { spawn } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, rmSync, statSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ROOT, benchArgs, fmtRange, fmtRatio, interleave, table, writeResult } from './lib/harness.mjs'
import { connectBare } from './lib/bare-requester.mjs'
import { startEmulatorProcess, startMosquitto } from './lib/procs.mjs'

const { quick, rounds, argv } = benchArgs()
const keysFlag = argv.indexOf('--keys')
const KEYS = keysFlag >= 0 ? Number(argv[keysFlag + 1]) : quick ? 20_000 : 100_000
/** The command's window (src/cli/commands/import.ts): the reference keeps as many in flight. */
const WINDOW = 256
const TARGET = 1.5

const dir = mkdtempSync(join(tmpdir(), 'bench-import-'))
const file = join(dir, 'keys.ndjson')
const keyOf = (i) => `key-${String(i).padStart(12, '0')}`
const value = 'v'.repeat(100)
{
  const out = openSync(file, 'w')
  let batch = ''
  for (let i = 0; i < KEYS; i++) {
    batch += `{"key":"${keyOf(i)}","value":"${value}"}\n`
    if (batch.length > 1 << 20) {
      writeSync(out, batch)
      batch = ''
    }
  }
  writeSync(out, batch)
  closeSync(out)
}
const fileBytes = statSync(file).size

const mosquitto = await startMosquitto()
const emulator = await startEmulatorProcess({ brokerUrl: mosquitto.urls[0] })
const bare = await connectBare(mosquitto.urls[0])
const payloads = Array.from({ length: KEYS }, (_, i) => {
  const key = keyOf(i)
  return Buffer.from(`*3\r\n$3\r\nSET\r\n$${key.length}\r\n${key}\r\n$${value.length}\r\n${value}\r\n`)
})

/** Every SET once, WINDOW in flight; seconds from the first send to the last answer. */
function bareLoop() {
  return new Promise((resolve) => {
    const t0 = performance.now()
    let sent = 0
    let answered = 0
    const next = () => {
      if (sent < KEYS) bare.send(payloads[sent++], onAnswer)
    }
    const onAnswer = () => {
      if (++answered === KEYS) resolve((performance.now() - t0) / 1000)
      else next()
    }
    for (let i = 0; i < WINDOW; i++) next()
  })
}

/** The command in its own process: seconds from spawn to exit, and its peak RSS. */
function importCommand() {
  return new Promise((resolve, reject) => {
    const t0 = performance.now()
    const args = [
      '--require',
      join(ROOT, 'test/system/cli/peak-rss.cjs'),
      join(ROOT, 'dist/src/cli/main.js'),
      'import',
      file,
      '--broker',
      mosquitto.urls[0],
    ]
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (d) => (stderr += d))
    child.once('error', reject)
    child.once('close', (code) => {
      const seconds = (performance.now() - t0) / 1000
      if (code !== 0 || !stderr.includes(`imported ${KEYS} key(s)`))
        return reject(new Error(`import exited ${code}: ${stderr}`))
      resolve({ seconds, peakRssMiB: Number(/peak-rss-kib (\d+)/.exec(stderr)[1]) / 1024 })
    })
  })
}

/** Node.js's start and the command's own load, without a connection: what the command pays before its first SET. */
function startOnly() {
  return new Promise((resolve) => {
    const t0 = performance.now()
    const child = spawn(process.execPath, [join(ROOT, 'dist/src/cli/main.js'), '--help'], { stdio: 'ignore' })
    child.once('close', () => resolve((performance.now() - t0) / 1000))
  })
}

const r = await interleave({
  variants: ['bare', 'import', 'start'],
  reference: 'bare',
  rounds,
  // 100,000 SETs are their own warm-up: five rounds of both take about a minute and a half here.
  warmup: 0,
  measure: async (variant) => {
    if (variant === 'bare') return { seconds: await bareLoop(), peakRssMiB: NaN }
    if (variant === 'start') return { seconds: await startOnly(), peakRssMiB: NaN }
    return importCommand()
  },
})
await bare.close()
await emulator.stop()
await mosquitto.stop()
rmSync(dir, { recursive: true, force: true })

const ratio = r.import.seconds.ratio
const t = table(
  `Bulk import: ${KEYS.toLocaleString('en')} keys (16-byte keys, 100-byte values, ${(fileBytes / 2 ** 20).toFixed(1)} MiB of NDJSON) into the emulator through mosquitto, seconds median (min–max) over ${rounds} interleaved rounds; ratio = variant / bare loop per round`,
  ['variant', 'time', 'keys/s', 'peak RSS', 'ratio to the bare loop'],
  [
    [
      'bare mqtt.js pipelined SET loop, window 256, in the bench process (reference)',
      fmtRange(r.bare.seconds, 2, ' s'),
      Math.round(KEYS / r.bare.seconds.median),
      '',
      '1 (reference)',
    ],
    [
      'aio-statestore import FILE (its own process: start, connect, check pass, write pass)',
      fmtRange(r.import.seconds, 2, ' s'),
      Math.round(KEYS / r.import.seconds.median),
      fmtRange(r.import.peakRssMiB, 0, ' MiB'),
      fmtRatio(ratio),
    ],
    [
      'aio-statestore --help (Node.js start and the command loaded, for scale)',
      fmtRange(r.start.seconds, 2, ' s'),
      '',
      '',
      fmtRatio(r.start.seconds.ratio),
    ],
  ],
)
writeResult('import', {
  tables: [t],
  headline: [
    {
      metric: `import of ${KEYS.toLocaleString('en')} keys / bare mqtt.js pipelined SET loop, same emulator, same rounds`,
      value: Number(ratio.median.toFixed(3)),
      min: ratio.min,
      max: ratio.max,
      target: `<= ${TARGET}x`,
      pass: ratio.median <= TARGET,
    },
    {
      metric: `import peak RSS for a ${(fileBytes / 2 ** 20).toFixed(1)} MiB file (MiB)`,
      value: Math.round(r.import.peakRssMiB.median),
      min: r.import.peakRssMiB.min,
      max: r.import.peakRssMiB.max,
      target: 'report (does not grow with the file: test/system/cli/data.test.ts)',
      pass: true,
    },
  ],
  data: { keys: KEYS, fileBytes, window: WINDOW, result: r },
  notes: [
    'the bare loop builds every RESP payload before its clock starts and runs in the bench process; the command is timed from spawn to exit',
    'the emulator (its CLI) and mosquitto each in their own process; every SET overwrites the same keys, round after round',
  ],
})

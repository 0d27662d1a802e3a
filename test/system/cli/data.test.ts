import assert from 'node:assert/strict'
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { main } from '../../../src/cli/main'
import { StateStoreClient } from '../../../src/client'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { parseKeyRecords } from '../../../src/formats/key-records'
import { scaled } from '../../support/deadline'
import { FROM_SOURCE, runCli } from './run'

/** The V8 heap (old space, MiB) the command runs in for the memory test: tsx alone takes about 25. */
const HEAP_MB = 48

/** `aio-statestore ARGS` in this process; stdout as bytes, stderr as text. */
async function cli(args: string[], stdin = ''): Promise<{ code: number; stdout: Buffer; stderr: string }> {
  const input = new PassThrough()
  input.end(stdin)
  const stdout = new PassThrough()
  const stderr = new PassThrough()
  const out: Buffer[] = []
  const err: Buffer[] = []
  stdout.on('data', (d: Buffer) => out.push(d))
  stderr.on('data', (d: Buffer) => err.push(d))
  const code = await main(args, { stdin: input, stdout, stderr }, new AbortController().signal)
  return { code, stdout: Buffer.concat(out), stderr: Buffer.concat(err).toString('utf8') }
}

function start(extra: Parameters<typeof startEmulator>[0] = {}): Promise<Emulator> {
  return startEmulator({ listen: { host: '127.0.0.1', port: 0 }, logLevel: 'error', scanPageKeys: 50, ...extra })
}

async function withClient<T>(url: string, work: (c: StateStoreClient) => Promise<T>): Promise<T> {
  const client = new StateStoreClient({ brokerUrl: url, clientId: `data-test-${Math.random().toString(36).slice(2)}` })
  try {
    await client.ready({ timeoutMs: 5000 })
    return await work(client)
  } finally {
    await client.close()
  }
}

/** Every key of a store with its value, through SCAN and GET. */
async function contents(url: string): Promise<Map<string, Buffer>> {
  return withClient(url, async (c) => {
    const all = new Map<string, Buffer>()
    for await (const page of c.scan('*')) for (const k of page) all.set(k, (await c.get(k)).value!)
    return all
  })
}

describe('data in and out: --seed, export and import', function () {
  this.timeout(20_000)
  let dir = ''
  const emulators: Emulator[] = []
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'aio-data-'))
  })
  after(async () => {
    for (const e of emulators) await e.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it("serves the keys of a WASM graph development environment's statestore.json given as --seed", async () => {
    const file = join(dir, 'statestore.json')
    writeFileSync(
      file,
      JSON.stringify([{ factoryId: 'factoryA' }, { 'line/1': { speed: 3, tags: ['a'] } }, { count: 7 }], null, 2),
    )
    const seeded = await start({ seedFile: file })
    emulators.push(seeded)
    await withClient(seeded.brokerUrl, async (c) => {
      assert.equal((await c.get('factoryId')).value!.toString(), 'factoryA', 'a string is stored as its text')
      assert.equal((await c.get('line/1')).value!.toString(), '{"speed":3,"tags":["a"]}', 'anything else as its JSON')
      assert.equal((await c.get('count')).value!.toString(), '7')
    })
  })

  it('refuses to start on a bad seed file, naming the file, the line and the reason', async () => {
    const file = join(dir, 'bad.json')
    writeFileSync(file, '[\n  {"a": "x"},\n  "not an object"\n]\n')
    await assert.rejects(
      start({ seedFile: file }),
      (err: Error) => err.message.includes(`${file}:3:`) && /not an object/.test(err.message),
    )
    const ndjson = join(dir, 'bad.ndjson')
    writeFileSync(ndjson, '{"key":"a","value":"x"}\n{"key":"b"}\n')
    await assert.rejects(
      start({ seedFile: ndjson }),
      (err: Error) => err.message.includes(`${ndjson}:2:`) && /no value/.test(err.message),
    )
  })

  it('export then import into a second emulator gives the same keys and values, binary values included', async () => {
    const source = await start()
    const target = await start()
    emulators.push(source, target)
    const binary = Buffer.from([0, 1, 0xff, 0xfe, 0x80, 10, 13])
    await withClient(source.brokerUrl, async (c) => {
      await c.set('bin/blob', binary)
      await c.set('text/é', 'héllo\nworld')
      await c.set('json/x', '{"a":1}')
      for (let i = 0; i < 120; i++) await c.set(`many/${i}`, `v${i}`)
    })
    const exported = await cli(['export', '--broker', source.brokerUrl])
    assert.equal(exported.code, 0, exported.stderr)
    assert.match(exported.stderr, /exported 123 key\(s\)/)
    const records = parseKeyRecords(exported.stdout.toString('utf8'))
    assert.equal(records.length, 123)
    assert.match(
      exported.stdout.toString('utf8'),
      /"valueBase64":"AAH\/\/oAKDQ=="/,
      'bytes that are not UTF-8 travel as base64',
    )

    const file = join(dir, 'export.ndjson')
    writeFileSync(file, exported.stdout)
    const dry = await cli(['import', file, '--dry-run', '--broker', target.brokerUrl])
    assert.equal(dry.code, 0, dry.stderr)
    assert.match(dry.stderr, /would import 123 key\(s\)/)
    assert.equal((await contents(target.brokerUrl)).size, 0, 'a dry run writes nothing')

    const imported = await cli(['import', file, '--broker', target.brokerUrl])
    assert.equal(imported.code, 0, imported.stderr)
    assert.match(imported.stderr, /imported 123 key\(s\)/)
    const [a, b] = [await contents(source.brokerUrl), await contents(target.brokerUrl)]
    assert.deepEqual([...b.keys()].sort(), [...a.keys()].sort())
    for (const [k, v] of a) assert.deepEqual(b.get(k), v, k)
    assert.deepEqual(b.get('bin/blob'), binary)

    // --nx keeps what exists; a pattern exports a part of the store.
    await withClient(target.brokerUrl, (c) => c.set('json/x', 'changed'))
    const nx = await cli(['import', '--nx', file, '--broker', target.brokerUrl])
    assert.equal(nx.code, 0, nx.stderr)
    assert.match(nx.stderr, /imported 0 key\(s\).*123 kept/)
    assert.equal((await contents(target.brokerUrl)).get('json/x')!.toString(), 'changed')
    const part = await cli(['export', 'text/*', '--broker', source.brokerUrl, '-o', join(dir, 'part.ndjson')])
    assert.equal(part.code, 0, part.stderr)
    assert.deepEqual(
      parseKeyRecords(readFileSync(join(dir, 'part.ndjson'), 'utf8')).map((r) => r.key.toString()),
      ['text/é'],
    )
  })

  it("export --admin carries expiry and persistence, as the emulator's admin channel tells them, and import applies them", async () => {
    const source = await start({ adminOverMqtt: true, persistFile: join(dir, 'source.persist') })
    const target = await start({ admin: true })
    emulators.push(source, target)
    await withClient(source.brokerUrl, async (c) => {
      await c.set('kept/a', 'A', { expiryMs: 600_000, persist: true })
      await c.set('kept/b', 'B')
    })
    const exported = await cli(['export', '--admin', '--broker', source.brokerUrl])
    assert.equal(exported.code, 0, exported.stderr)
    const records = parseKeyRecords(exported.stdout.toString('utf8'))
    const a = records.find((r) => r.key.toString() === 'kept/a')!
    assert.ok(a.expiresAt! > Date.now() + 500_000, 'the expiry travels')
    assert.equal(a.persist, true)
    assert.equal(records.find((r) => r.key.toString() === 'kept/b')!.expiresAt, undefined)
    const imported = await cli(['import', '-', '--broker', target.brokerUrl], exported.stdout.toString('utf8'))
    assert.equal(imported.code, 0, imported.stderr)
    const details = target.admin!.inspect(Buffer.from('kept/a'))
    assert.ok(
      details && Math.abs(details.expiresAt! - a.expiresAt!) < 5000,
      `the key expires when it did in the source: ${details?.expiresAt} and ${a.expiresAt}`,
    )
    const noAdmin = await cli(['export', '--admin', '--broker', target.brokerUrl])
    assert.equal(noAdmin.code, 2, 'an emulator without --admin over MQTT: a clear usage error')
    assert.match(noAdmin.stderr, /--admin: no emulator serves its admin channel/)
  })

  it('import refuses a bad file before writing anything, naming the line', async () => {
    const target = await start()
    emulators.push(target)
    const r = await cli(
      ['import', '-', '--broker', target.brokerUrl],
      '{"key":"ok","value":"1"}\n{"key":"x","valueBase64":"%%"}\n',
    )
    assert.equal(r.code, 2)
    assert.match(r.stderr, /-:2: valueBase64 is not base64/)
    assert.equal((await contents(target.brokerUrl)).size, 0)
  })

  it('import reads a file as a stream and still refuses a bad line far into it before writing anything, from a file and from stdin', async () => {
    const target = await start()
    emulators.push(target)
    // 5,000 good lines (about 300 KB, several chunks of the stream), then a bad one, then more.
    const good = Array.from({ length: 5_000 }, (_, i) => `{"key":"bulk/${i}","value":"${'v'.repeat(32)}"}\n`).join('')
    const text = `${good}{"key":"bad","value":7}\n{"key":"after","value":"1"}\n`
    const file = join(dir, 'bad-far.ndjson')
    writeFileSync(file, text)
    const fromFile = await cli(['import', file, '--broker', target.brokerUrl])
    assert.equal(fromFile.code, 2, fromFile.stderr)
    assert.ok(
      fromFile.stderr.includes(`${file}:5001: value is text; bytes go in valueBase64`) ||
        /:5001: /.test(fromFile.stderr),
      fromFile.stderr,
    )
    const fromStdin = await cli(['import', '-', '--broker', target.brokerUrl], text)
    assert.equal(fromStdin.code, 2, fromStdin.stderr)
    assert.match(fromStdin.stderr, /-:5001: /)
    assert.equal((await contents(target.brokerUrl)).size, 0, 'nothing written')

    // The same lines without the bad one: every key written, from stdin too (read twice: it is kept in a file).
    const ok = await cli(['import', '-', '--broker', target.brokerUrl], good)
    assert.equal(ok.code, 0, ok.stderr)
    assert.match(ok.stderr, /imported 5000 key\(s\)/)
    await withClient(target.brokerUrl, async (c) => {
      for (const i of [0, 2_499, 4_999]) assert.equal((await c.get(`bulk/${i}`)).value!.toString(), 'v'.repeat(32))
    })
  })

  it("import's peak memory does not grow with the file: four times the file, the same peak", async function () {
    this.timeout(scaled(90_000))
    const target = await start()
    emulators.push(target)
    const valueOf = (k: number) => String.fromCharCode(97 + (k % 26)).repeat(32 * 1024)
    /** The peak RSS (bytes) of an import of `lines` lines of 32 KiB values over 60 keys, each key's value the same on every line. */
    const peakOf = async (lines: number) => {
      const file = join(dir, `large-${lines}.ndjson`)
      const out = openSync(file, 'w')
      for (let i = 0; i < lines; i++) writeSync(out, `{"key":"large/${i % 60}","value":"${valueOf(i % 60)}"}\n`)
      closeSync(out)
      const r = await runCli(
        {
          ...FROM_SOURCE,
          args: [`--max-old-space-size=${HEAP_MB}`, '--require', join(__dirname, 'peak-rss.cjs'), ...FROM_SOURCE.args],
        },
        ['import', file, '--broker', target.brokerUrl],
      )
      assert.equal(r.code, 0, r.stderr)
      assert.match(r.stderr, new RegExp(`imported ${lines} key\\(s\\)`))
      const held = await contents(target.brokerUrl)
      assert.equal(held.size, 60)
      for (const [k, v] of held) assert.equal(v.toString(), valueOf(Number(k.split('/')[1])), k)
      return { bytes: statSync(file).size, peak: Number(/peak-rss-kib (\d+)/.exec(r.stderr)![1]) * 1024 }
    }
    // Both files are past the 64 MiB or so of garbage Buffers V8 lets pile up before it collects
    // them (a 9 MiB file never reaches it: its peak is lower for that alone, at any file size).
    const small = await peakOf(1_000)
    const large = await peakOf(4_000)
    // Holding the file (or its records) would add at least the 94 MiB more it holds, three times
    // over as text, Buffers and records; streamed, the peak is the window of SETs in flight whatever
    // the file's size. (The heap is bounded because V8 otherwise lets garbage grow the heap with the
    // rate of allocation, the file's size or not.)
    const grown = large.peak - small.peak
    assert.ok(
      grown < (large.bytes - small.bytes) / 2,
      `peak ${(small.peak / 2 ** 20).toFixed(0)} MiB for ${(small.bytes / 2 ** 20).toFixed(0)} MiB, ${(large.peak / 2 ** 20).toFixed(0)} MiB for ${(large.bytes / 2 ** 20).toFixed(0)} MiB`,
    )
  })
})

import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough, Readable } from 'node:stream'
import { ExportTooLarge, streamExport, type ExportLimits } from '../../../nodes/sidebar/export-keys'
import { ImportCut, importFile } from '../../../nodes/sidebar/import-keys'
import { main } from '../../../src/cli/main'
import { countKeys } from '../../../src/export/key-export'
import { StateStoreClient } from '../../../src/client'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { settleEach } from '../../../src/lang/bounded'

const KEYS = 20
const VALUE_BYTES = 1024

/** `aio-statestore ARGS` in this process; stderr as text. */
async function cli(args: string[]): Promise<{ code: number; stderr: string }> {
  const stdin = new PassThrough()
  stdin.end()
  const stdout = new PassThrough()
  const stderr = new PassThrough()
  const err: Buffer[] = []
  stdout.resume()
  stderr.on('data', (d: Buffer) => err.push(d))
  const code = await main(args, { stdin, stdout, stderr }, new AbortController().signal)
  return { code, stderr: Buffer.concat(err).toString('utf8') }
}

/**
 * The sidebar's export stops at its limits (`aioStateStore.exportMaxBytes`, `exportMaxKeys`), and a
 * download cut there held whole lines only: saved, it imported with exit 0 (63 of 150 keys) and
 * nothing said it was cut. A cut export now ends in an `exportCut` line (the keys written, the keys
 * matching, the limit), which `aio-statestore import`, the sidebar's import and the emulator's --seed
 * refuse, naming the file and the line; `import --accept-cut` imports it and says how many of how many.
 */
describe('security: an export cut at its limit is marked, and import refuses it', function () {
  this.timeout(60_000)
  let dir = ''
  let source: Emulator
  let target: Emulator
  let client: StateStoreClient
  let reader: StateStoreClient

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'aio-export-cut-'))
    source = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, logLevel: 'error' })
    target = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, logLevel: 'error' })
    client = new StateStoreClient({ brokerUrl: source.brokerUrl, clientId: 'export-cut-source' })
    reader = new StateStoreClient({ brokerUrl: target.brokerUrl, clientId: 'export-cut-target' })
    await client.ready({ timeoutMs: 10_000 })
    await reader.ready({ timeoutMs: 10_000 })
    const keys = Array.from({ length: KEYS }, (_, i) => `cut/${String(i).padStart(2, '0')}`)
    await settleEach(keys, 8, (k) => client.set(k, Buffer.alloc(VALUE_BYTES, 0x61)))
  })
  after(async () => {
    await client?.close()
    await reader?.close()
    await source?.stop()
    await target?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  /** The sidebar's export of cut/* within `limits`, as the file a browser saves; whether it was cut. */
  async function exported(limits: ExportLimits): Promise<{ text: string; cut: ExportTooLarge | null }> {
    const chunks: string[] = []
    const sink = { write: (chunk: string) => Promise.resolve(void chunks.push(chunk)) }
    let cut: ExportTooLarge | null = null
    try {
      await streamExport(client, null, 'cut/*', sink, limits, new AbortController().signal)
    } catch (err) {
      if (!(err instanceof ExportTooLarge)) throw err
      cut = err
    }
    return { text: chunks.join(''), cut }
  }

  const lines = (text: string) => text.split('\n').filter((l) => l !== '')
  const targetKeys = () => countKeys(reader, null, 'cut/*')

  it('a cut at the byte cap ends in its exportCut line; import refuses the file with its line and exit 2, --accept-cut imports it saying 8 of 20', async () => {
    const { text, cut } = await exported({ maxKeys: 1000, maxBytes: 8.5 * (VALUE_BYTES + 76) })
    assert.equal(cut?.limit, 'bytes')
    const all = lines(text)
    assert.deepEqual(JSON.parse(all.at(-1)!), { exportCut: { written: all.length - 1, total: KEYS, reason: 'bytes' } })
    assert.equal(all.length - 1, 8, 'whole records up to the cap')
    const path = join(dir, 'cut-bytes.ndjson')
    writeFileSync(path, text)

    const refused = await cli(['import', path, '--broker', target.brokerUrl])
    assert.equal(refused.code, 2, refused.stderr)
    assert.ok(refused.stderr.includes(`${path}:${all.length}:`), `names the file and the line: ${refused.stderr}`)
    assert.match(refused.stderr, /cut at its bytes limit: it holds 8 of 20 keys/)
    assert.match(refused.stderr, /--accept-cut/)
    assert.equal(await targetKeys(), 0, 'nothing was written')

    const dry = await cli(['import', path, '--dry-run', '--broker', target.brokerUrl])
    assert.equal(dry.code, 2, 'a dry run refuses it too')

    const accepted = await cli(['import', path, '--accept-cut', '--broker', target.brokerUrl])
    assert.equal(accepted.code, 0, accepted.stderr)
    assert.match(accepted.stderr, /8 key\(s\) from .*cut export: 8 of 20 keys \(bytes limit\)/)
    assert.equal(await targetKeys(), 8)
  })

  it('a cut at the key cap says so with reason keys, and the sidebar import refuses it as importCut', async () => {
    const { text, cut } = await exported({ maxKeys: 5, maxBytes: 64 * 2 ** 20 })
    assert.equal(cut?.limit, 'keys')
    const all = lines(text)
    assert.equal(all.length, 6)
    assert.deepEqual(JSON.parse(all[5]!), { exportCut: { written: 5, total: KEYS, reason: 'keys' } })
    await assert.rejects(
      importFile(
        Readable.from([Buffer.from(text)]),
        reader,
        { maxKeys: 1000, maxBytes: 2 ** 20 },
        AbortSignal.timeout(30_000),
      ),
      (err: unknown) => err instanceof ImportCut && err.line === 6 && err.written === 5 && err.total === KEYS,
    )
  })

  it("the emulator's --seed refuses a cut export, naming the file and the line", async () => {
    const { text } = await exported({ maxKeys: 3, maxBytes: 64 * 2 ** 20 })
    const path = join(dir, 'cut-seed.ndjson')
    writeFileSync(path, text)
    await assert.rejects(
      startEmulator({ listen: { host: '127.0.0.1', port: 0 }, logLevel: 'error', seedFile: path }),
      (err: Error) => err.message.includes(`${path}:4:`) && /3 of 20 keys/.test(err.message),
    )
  })

  it('a complete export carries no cut line and is what aio-statestore export writes, byte for byte', async () => {
    const { text, cut } = await exported({ maxKeys: KEYS, maxBytes: 64 * 2 ** 20 })
    assert.equal(cut, null)
    assert.ok(!text.includes('exportCut'))
    assert.equal(lines(text).length, KEYS)
    const path = join(dir, 'whole-cli.ndjson')
    const byCli = await cli(['export', 'cut/*', '-o', path, '--broker', source.brokerUrl])
    assert.equal(byCli.code, 0, byCli.stderr)
    assert.equal(text, readFileSync(path, 'utf8'))
  })

  it('an exportCut line that is not {written, total, reason} is a bad line, not a cut', async () => {
    const path = join(dir, 'bad-cut.ndjson')
    writeFileSync(path, '{"key":"a","value":"b"}\n{"exportCut":{"written":"many"}}\n')
    const r = await cli(['import', path, '--accept-cut', '--broker', target.brokerUrl])
    assert.equal(r.code, 2)
    assert.ok(r.stderr.includes(`${path}:2: an exportCut line is`), r.stderr)
  })
})

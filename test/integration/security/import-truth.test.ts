import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { main } from '../../../src/cli/main'
import { StateStoreClient } from '../../../src/client'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { Reply } from '../../../src/protocol'
import { Responder } from '../client/support/responder'
import { startMqttBroker, type OwnBroker } from '../../support/broker'

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
 * Import and seed change no data and misreport nothing: a latin-1 byte in "value" was stored as
 * U+FFFD and "valueBase64":"A" as an empty value, both with exit 0; a write whose answer was lost
 * with the broker was counted as failed although the store held it (a 50,000-key import with the
 * broker down 15 s reported 16 failed keys of which 12 were written); a 100,000-deep statestore.json
 * failed with "Maximum call stack size exceeded" and no file.
 */
describe('security: import and seed tell the truth', function () {
  this.timeout(30_000)
  let dir = ''
  let emulator: Emulator
  let reader: StateStoreClient

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'aio-import-truth-'))
    emulator = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, logLevel: 'error' })
    reader = new StateStoreClient({ brokerUrl: emulator.brokerUrl, clientId: 'import-truth-reader' })
    await reader.ready({ timeoutMs: 10_000 })
  })
  after(async () => {
    await reader?.close()
    await emulator?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  const file = (name: string, content: string | Buffer): string => {
    const path = join(dir, name)
    writeFileSync(path, content)
    return path
  }

  const refusals: Array<[string, string | Buffer, RegExp]> = [
    [
      'a latin-1 byte in "value"',
      Buffer.concat([
        Buffer.from('{"key":"t/ok","value":"1"}\n{"key":"t/latin1","value":"caf'),
        Buffer.from([0xe9]),
        Buffer.from('"}\n'),
      ]),
      /:2: .*not UTF-8/,
    ],
    [
      '"valueBase64":"A"',
      '{"key":"t/ok","value":"1"}\n{"key":"t/b64","valueBase64":"A"}\n',
      /:2: valueBase64 is not base64/,
    ],
    [
      'base64 with bits past its last byte',
      '{"key":"t/ok","value":"1"}\n{"key":"t/b64","valueBase64":"AB=="}\n',
      /:2: valueBase64 is not base64/,
    ],
    [
      'a lone surrogate escaped in "value"',
      '{"key":"t/ok","value":"1"}\n{"key":"t/sur","value":"\\ud800"}\n',
      /:2: value holds a lone UTF-16 surrogate/,
    ],
    [
      'a latin-1 byte in a statestore.json key',
      Buffer.concat([Buffer.from('[\n  {"t/ok": 1},\n  {"t/'), Buffer.from([0xe9]), Buffer.from('": 2}\n]\n')]),
      /:3: .*not UTF-8/,
    ],
  ]
  for (const [what, content, reason] of refusals) {
    it(`import refuses ${what} with file:line, before any write`, async () => {
      const path = file('bad.ndjson', content)
      const r = await cli(['import', path, '--broker', emulator.brokerUrl])
      assert.equal(r.code, 2, r.stderr)
      assert.ok(r.stderr.includes(path), r.stderr)
      assert.match(r.stderr, reason)
      assert.equal((await reader.get('t/ok')).value, null, 'nothing was written')
    })

    it(`--seed refuses ${what} with file:line`, async () => {
      const path = file('bad-seed', content)
      await assert.rejects(startEmulator({ inProcessOnly: true, seedFile: path, logLevel: 'error' }), (err: Error) => {
        assert.ok(err.message.includes(path), err.message)
        assert.match(err.message, reason)
        return true
      })
    })
  }

  it('a 100,000-deep statestore.json fails naming the file and the line, in --seed and import', async () => {
    const depth = 100_000
    const path = file('deep.json', `[\n  {"deep": ${'['.repeat(depth)}${']'.repeat(depth)}}\n]\n`)
    await assert.rejects(startEmulator({ inProcessOnly: true, seedFile: path, logLevel: 'error' }), (err: Error) => {
      assert.ok(err.message.includes(`${path}:2:`), err.message)
      assert.match(err.message, /nested deeper than 1000 levels/)
      return true
    })
    const r = await cli(['import', path, '--broker', emulator.brokerUrl])
    assert.equal(r.code, 2, r.stderr)
    assert.ok(r.stderr.includes(`${path}:2:`), r.stderr)
  })

  describe('a write whose answer was lost', () => {
    let broker: OwnBroker
    let responder: Responder
    const held = new Map<string, string>()

    before(async function () {
      broker = await startMqttBroker(this)
      // A store that applies t/lost-written but loses its answer, and loses t/lost-not-written whole (as a broker going down does).
      responder = await Responder.start(broker.url, (request) => {
        const [verb, key, value] = request.words
        if (verb === 'SET') {
          if (key !== 'lost/not-written') held.set(key!, value!)
          return key!.startsWith('lost/') ? null : { payload: Reply.ok }
        }
        if (verb === 'GET') return { payload: held.has(key!) ? Reply.value(Buffer.from(held.get(key!)!)) : Reply.nil }
        return { payload: Reply.error('unknown command') }
      })
    })
    after(async () => {
      await responder?.stop()
      await broker?.stop()
    })

    it('is read back and reported as written or not', async () => {
      const keys = ['a', 'lost/written', 'lost/not-written', 'b']
      const path = file('lost.ndjson', keys.map((k) => `${JSON.stringify({ key: k, value: `v-${k}` })}\n`).join(''))
      const r = await cli(['import', path, '--broker', broker.url, '--timeout', '1500'])
      assert.equal(r.code, 3, r.stderr)
      assert.equal(held.get('lost/written'), 'v-lost/written')
      assert.match(r.stderr, /3 key\(s\) from /)
      assert.match(r.stderr, /1 of them found written when read back/)
      assert.match(r.stderr, /1 key\(s\) could not be written, first "lost\/not-written": .*read back: not written/)
    })
  })
})

import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startEmulator, type Emulator, type EmulatorOptions } from '../../../src/emulator'
import { Keyspace } from '../../../src/emulator/core/keyspace'
import { HybridLogicalClock } from '../../../src/hlc'
import { Reply, Request } from '../../../src/protocol'
import { decodeExact } from '../../../src/resp'
import { RawClient } from '../emulator/raw-client'

/**
 * Bounds that count what they cost: `--max-bytes` counted key and value bytes but not the
 * bookkeeping of each key (2 M seeded keys of 7 counted bytes: 1.23 GB RSS); a 16 MiB key was
 * accepted; a seed record over the value or byte quota was reported as "refused by the key quota
 * (--max-keys)". Each refusal now names the bound that refused it; the -ERR text stays the
 * service's own, which the SDKs match exactly.
 */
describe('security: bounds count what they cost and name themselves', function () {
  this.timeout(30_000)

  it("counts each key's bookkeeping in the byte quota: small keys fill it at some hundred bytes a key", () => {
    const store = new Keyspace({ clock: new HybridLogicalClock(), maxBytes: 100_000 })
    let stored = 0
    while (store.set(Buffer.from(`k${String(stored).padStart(5, '0')}`), Buffer.from('v')).kind === 'applied') stored++
    // Six key bytes and one value byte: counted alone, 14,285 keys would fit. A key costs more than 100 bytes of heap.
    assert.ok(stored < 1000, `${stored} keys of 7 bytes held under a 100,000-byte quota`)
    assert.ok(stored > 0)
    store.close()
  })

  describe('through the service', () => {
    let dir = ''
    const running: Emulator[] = []
    before(() => {
      dir = mkdtempSync(join(tmpdir(), 'aio-bounds-'))
    })
    after(async () => {
      for (const e of running) await e.stop()
      rmSync(dir, { recursive: true, force: true })
    })

    async function start(
      options: EmulatorOptions = {},
    ): Promise<{ emulator: Emulator; raw: RawClient; lines: string[] }> {
      const lines: string[] = []
      const emulator = await startEmulator({
        listen: { host: '127.0.0.1', port: 0 },
        logLevel: 'info',
        logger: (_level, message) => lines.push(message),
        ...options,
      })
      running.push(emulator)
      const raw = await RawClient.connect(emulator.brokerUrl)
      after(() => raw.close())
      return { emulator, raw, lines }
    }

    const quotaError = { kind: 'error', value: 'ERR the quota has been exceeded' }

    it('every bound is in force by default, --max-keys too, and the start says which', async () => {
      const { lines } = await start()
      assert.ok(
        lines.includes(
          'bounds: --max-keys 1000000, --max-bytes 268435456, --max-value-bytes 66060288, --max-key-bytes 65535; memory profile medium, largest message 67108864 bytes',
        ),
        lines.join('\n'),
      )
    })

    it('refuses a 16 MiB key by default, naming --max-key-bytes in the log, and stores a key of 65,535 bytes', async () => {
      const { raw, lines } = await start()
      const huge = await raw.request(Request.set(Buffer.alloc(16 * 1024 * 1024, 'k'), 'v'), { timeoutMs: 20_000 })
      assert.deepEqual(decodeExact(huge.payload), quotaError)
      assert.ok(
        lines.some((l) => /QuotaExceeded .*the key is 16777216 bytes; --max-key-bytes allows 65535/.test(l)),
        lines.join('\n'),
      )
      assert.deepEqual((await raw.request(Request.set(Buffer.alloc(65_535, 'k'), 'v'))).payload, Reply.ok)
    })

    it('names --max-keys, --max-value-bytes and --max-bytes, each where it refused', async () => {
      const { raw, lines } = await start({ maxKeys: 2, maxValueBytes: 1000, maxBytes: 1300 })
      assert.deepEqual((await raw.request(Request.set('a', 'v'))).payload, Reply.ok)
      assert.deepEqual(decodeExact((await raw.request(Request.set('b', Buffer.alloc(1001)))).payload), quotaError)
      assert.deepEqual(
        decodeExact((await raw.request(Request.set('b', Buffer.alloc(1000)))).payload),
        quotaError,
        '1,002 bytes of keys and values and their bookkeeping pass 1,300',
      )
      assert.deepEqual((await raw.request(Request.set('b', 'v'))).payload, Reply.ok)
      assert.deepEqual(decodeExact((await raw.request(Request.set('c', 'v'))).payload), quotaError)
      const refusals = lines.filter((l) => l.includes('QuotaExceeded'))
      assert.equal(refusals.length, 3, lines.join('\n'))
      assert.match(refusals[0]!, /the value is 1001 bytes; --max-value-bytes allows 1000/)
      assert.match(refusals[1]!, /--max-bytes allows 1300/)
      assert.match(refusals[2]!, /the store holds 2 keys, as many as --max-keys allows/)
    })

    it('a GET, DEL or KEYNOTIFY of a key longer than any SET may store is refused before the rules match their patterns over it', async () => {
      // A rule with a leading star walks every byte of the key for each of its tokens: a 16 MiB GET key held the emulator for seconds.
      const rules = join(dir, 'authorization.json')
      writeFileSync(
        rules,
        JSON.stringify({
          rules: [
            {
              principals: { clientIds: ['*'] },
              stateStoreResources: [{ method: 'Read', keyType: 'Pattern', keys: ['*/config'] }],
            },
          ],
        }),
      )
      const { raw, lines } = await start({ authorizationFile: rules, maxKeyBytes: 1000 })
      const long = Buffer.alloc(1001, 'k')
      for (const request of [Request.get(long), Request.del(long), Request.keyNotify(long)]) {
        assert.deepEqual(decodeExact((await raw.request(request)).payload), quotaError)
      }
      assert.deepEqual(decodeExact((await raw.request(Request.get(Buffer.alloc(1000, 'k')))).payload), {
        kind: 'error',
        value: 'ERR not authorized',
      })
      const refusals = lines.filter((l) => l.includes('QuotaExceeded'))
      assert.equal(refusals.length, 3, lines.join('\n'))
      for (const line of refusals) assert.match(line, /the key is 1001 bytes; --max-key-bytes allows 1000/)
    })

    it('a seed refused by the value and byte quotas says so, not "the key quota"', async () => {
      const file = join(dir, 'seed.ndjson')
      writeFileSync(
        file,
        ['a', 'b', 'c'].map((k, i) => JSON.stringify({ key: k, value: 'x'.repeat(i === 0 ? 2000 : 500) })).join('\n'),
      )
      const { lines } = await start({ seedFile: file, maxValueBytes: 1000, maxBytes: 1000 })
      const warning = lines.find((l) => l.startsWith('seed:') && l.includes('refused'))
      assert.ok(warning, lines.join('\n'))
      assert.doesNotMatch(warning, /--max-keys/)
      assert.match(warning, /1 key\(s\) refused \(the value is 2000 bytes; --max-value-bytes allows 1000\)/)
      assert.match(
        warning,
        /1 key\(s\) refused \(the store would hold \d+ bytes with each key's bookkeeping; --max-bytes allows 1000\)/,
      )
    })
  })
})

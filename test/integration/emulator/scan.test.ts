import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { NotSupportedError, StateStoreClient } from '../../../src'
import { startEmulator, type Emulator, type EmulatorOptions } from '../../../src/emulator'
import { EMULATOR_REFUSAL_TEXT } from '../../../src/emulator/core/refusals'
import { Reply, Request } from '../../../src/protocol'
import { decodeExact } from '../../../src/resp'
import { mosquittoUrl } from '../../support/broker'
import { Responder } from '../client/support/responder'
import { RawClient } from './raw-client'
import { withEmulator } from '../../support/emulator-fixture'

/** One SCAN answer as a bare client reads it: the keys (latin1) and the token, or the error text. */
type Page = { keys: string[]; token: Buffer | null } | { error: string }

async function scan(raw: RawClient, pattern: string | Buffer, token: Buffer | null = null): Promise<Page> {
  const reply = await raw.request(Request.scan(pattern, token))
  const value = decodeExact(reply.payload)
  if (value.kind === 'error') return { error: value.value }
  assert.equal(value.kind, 'array', `a SCAN answer is an array, got ${value.kind}`)
  const items = value.value
  assert.ok(items.length === 1 || items.length === 2, `*1 or *2, got *${items.length}`)
  const [page, next] = items
  assert.equal(page!.kind, 'array')
  const keys = page!.value.map((k) => {
    assert.equal(k.kind, 'bulk')
    return k.value.toString('latin1')
  })
  if (next !== undefined) assert.equal(next.kind, 'bulk', 'the continuation token is a bulk string')
  return { keys, token: next ? next.value : null }
}

/** Follows the tokens to the end; every page, in order. */
async function scanAll(raw: RawClient, pattern: string): Promise<string[][]> {
  const pages: string[][] = []
  let token: Buffer | null = null
  do {
    const page = await scan(raw, pattern, token)
    assert.ok(!('error' in page), `SCAN ${pattern} refused: ${'error' in page ? page.error : ''}`)
    pages.push(page.keys)
    token = page.token
    assert.ok(pages.length < 1000, 'the scan ends')
  } while (token)
  return pages
}

const KEYS = Array.from({ length: 250 }, (_, i) => `scan/k${String(i).padStart(3, '0')}`)
const PAGE = 16

function suite(name: string, start: (ctx: Mocha.Context, options: EmulatorOptions) => Promise<Emulator>): void {
  describe(`SCAN through ${name}`, function () {
    this.timeout(30_000)
    let emulator: Emulator
    let raw: RawClient

    before(async function () {
      emulator = await start(this, { scanPageKeys: PAGE, logLevel: 'error' })
      raw = await RawClient.connect(emulator.brokerUrl)
      const writes = [...KEYS, 'other/a', 'other/b', 'scan', 'scan/', 'xscan/k001'].map((k) =>
        raw.request(Request.set(k, 'v')),
      )
      // A key that is not UTF-8 (scan/k10 and 0xff): scan/k* and scan/k10* match it.
      writes.push(raw.request(Request.set(Buffer.from([0x73, 0x63, 0x61, 0x6e, 0x2f, 0x6b, 0x31, 0x30, 0xff]), 'v')))
      for (const r of await Promise.all(writes)) assert.deepEqual(r.payload, Reply.ok)
    })
    after(async () => {
      await raw?.close()
      await emulator?.stop()
    })

    it('returns exactly the 250 matching keys, a page at a time, following the continuation tokens', async () => {
      const pages = await scanAll(raw, 'scan/k*')
      const keys = pages.flat()
      assert.ok(pages.length >= Math.ceil(250 / PAGE), `${pages.length} pages for 250 keys at ${PAGE} a page`)
      for (const page of pages) assert.ok(page.length <= PAGE, `a page of ${page.length} keys`)
      assert.equal(new Set(keys).size, keys.length, 'no key twice')
      assert.deepEqual([...keys].sort(), KEYS)
    })

    it('matches [0-4], ? and [!…] over the whole key', async () => {
      const cases: Array<[string, RegExp]> = [
        ['scan/k1[0-4]?', /^scan\/k1[0-4].$/],
        ['scan/k?0?', /^scan\/k.0.$/],
        ['scan/k2[!0-3]9', /^scan\/k2[^0-3]9$/],
        ['scan/k00[7]', /^scan\/k007$/],
        ['scan/k24', /^scan\/k24$/],
      ]
      for (const [pattern, oracle] of cases) {
        const got = (await scanAll(raw, pattern)).flat().sort()
        assert.deepEqual(
          got,
          KEYS.filter((k) => oracle.test(k)),
          pattern,
        )
      }
      assert.deepEqual((await scanAll(raw, 'scan/k1[0-4]?')).flat().length, 50)
      // `*` and `?` do not cross the end of the key, and the pattern is the whole key.
      assert.deepEqual((await scanAll(raw, 'scan')).flat(), ['scan'])
      assert.deepEqual((await scanAll(raw, '?can/k001')).flat(), ['scan/k001'])
    })

    it('never returns a key that is not UTF-8', async () => {
      const got = (await scanAll(raw, 'scan/k10*')).flat().sort()
      assert.deepEqual(
        got,
        KEYS.filter((k) => k.startsWith('scan/k10')),
      )
    })

    it('answers a retried token with the same page again, and refuses a token it does not know', async () => {
      const first = await scan(raw, 'scan/*')
      assert.ok(!('error' in first) && first.token)
      const second = await scan(raw, 'scan/*', first.token)
      const again = await scan(raw, 'scan/*', first.token)
      assert.deepEqual(again, second)
      const forged = Buffer.from(first.token)
      forged[0]! ^= 0xff
      assert.deepEqual(await scan(raw, 'scan/*', forged), { error: `ERR ${EMULATOR_REFUSAL_TEXT.ScanTokenUnknown}` })
      assert.deepEqual(await scan(raw, 'other/*', first.token), {
        error: `ERR ${EMULATOR_REFUSAL_TEXT.ScanTokenUnknown}`,
      })
    })

    it('refuses a bad pattern with a syntax error and keeps serving', async () => {
      assert.deepEqual(await scan(raw, 'scan/[0-4'), { error: 'ERR syntax error' })
      assert.deepEqual(await scan(raw, 'scan/[]'), { error: 'ERR syntax error' })
      const empty = decodeExact((await raw.request(Buffer.from('*2\r\n$4\r\nSCAN\r\n$0\r\n\r\n'))).payload)
      assert.deepEqual(empty, { kind: 'error', value: 'ERR syntax error' })
      assert.equal((await scanAll(raw, 'other/*')).flat().length, 2)
    })

    it('returns every key that exists for the whole scan while others come and go', async () => {
      const seen = new Set<string>()
      const deleted = new Set<string>()
      let token: Buffer | null = null
      let step = 0
      do {
        const page: Page = await scan(raw, 'scan/*', token)
        assert.ok(!('error' in page))
        for (const k of page.keys) seen.add(k)
        token = page.token
        // Between pages: delete a key not returned yet, and add one.
        const unseen = KEYS.filter((k) => !seen.has(k) && !deleted.has(k))
        if (unseen.length > 1) {
          const victim = unseen[unseen.length - 1]!
          assert.deepEqual((await raw.request(Request.del(victim))).payload, Reply.integer(1))
          deleted.add(victim)
        }
        await raw.request(Request.set(`scan/new${step++}`, 'v'))
      } while (token)
      assert.ok(deleted.size > 5, `${deleted.size} keys deleted during the scan`)
      for (const k of KEYS) if (!deleted.has(k)) assert.ok(seen.has(k), `${k} existed throughout and was returned`)
      for (const k of deleted) assert.ok(!seen.has(k), `${k} was returned after it was deleted`)
    })
  })
}

suite('the embedded aedes broker', (_ctx, options) =>
  startEmulator({ ...options, listen: { host: '127.0.0.1', port: 0 } }),
)
suite('mosquitto', async (ctx, options) => startEmulator({ ...options, brokerUrl: await mosquittoUrl(ctx) }))

describe('SCAN and authorization', function () {
  this.timeout(20_000)
  let dir: string
  let emulator: Emulator
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'scan-auth-'))
    const rules = join(dir, 'authorization.json')
    writeFileSync(
      rules,
      JSON.stringify([
        {
          principals: { clientIds: ['reader-*'] },
          stateStoreResources: [
            { method: 'Read', keys: ['public/*'] },
            { method: 'Write', keys: ['inbox/*'] },
          ],
        },
        { principals: { clientIds: ['admin'] }, stateStoreResources: [{ method: 'ReadWrite', keys: ['*'] }] },
      ]),
    )
    emulator = await startEmulator({
      listen: { host: '127.0.0.1', port: 0 },
      authorizationFile: rules,
      logLevel: 'error',
      scanPageKeys: 3,
    })
  })
  after(async () => {
    await emulator?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('returns only the keys the caller may Read, without refusing the SCAN', async () => {
    const admin = await RawClient.connect(emulator.brokerUrl, 'admin')
    const reader = await RawClient.connect(emulator.brokerUrl, 'reader-1')
    try {
      for (const k of ['public/a', 'public/b', 'public/c', 'public/d', 'secret/a', 'inbox/a'])
        assert.deepEqual((await admin.request(Request.set(k, 'v'))).payload, Reply.ok)
      assert.deepEqual((await scanAll(reader, '*')).flat().sort(), ['public/a', 'public/b', 'public/c', 'public/d'])
      // Write alone does not show a key.
      assert.deepEqual((await scanAll(reader, 'inbox/*')).flat(), [])
      assert.equal((await scanAll(admin, '*')).flat().length, 6)
    } finally {
      await admin.close()
      await reader.close()
    }
  })
})

describe('client.scan', function () {
  this.timeout(20_000)
  const fx = withEmulator({ clients: 'suite', emulator: { scanPageKeys: 7 } })
  const { clients } = fx

  it('gives the keys page by page, the token kept inside, and null at the end', async () => {
    const client = new StateStoreClient({ brokerUrl: fx.url, clientId: 'scanner' })
    clients.add(client)
    await client.ready({ timeoutMs: 5000 })
    const keys = Array.from({ length: 30 }, (_, i) => `dev/${i}`)
    for (const k of keys) await client.set(k, 'x')
    await client.set('other', 'x')
    const pager = client.scan('dev/*')
    const pages: string[][] = []
    for (let page = await pager.next(); page !== null; page = await pager.next()) pages.push(page)
    assert.equal(await pager.next(), null, 'stays done')
    assert.ok(pages.length >= 5)
    assert.deepEqual(pages.flat().sort(), [...keys].sort())
    const iterated: string[] = []
    for await (const page of client.scan('dev/1?')) iterated.push(...page)
    assert.deepEqual(iterated.sort(), keys.filter((k) => /^dev\/1.$/.test(k)).sort())
  })

  it('fails with NotSupportedError against an emulator told to answer as the released broker (scan: false)', async () => {
    const released = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, logLevel: 'error', scan: false })
    const client = new StateStoreClient({ brokerUrl: released.brokerUrl, clientId: 'scanner-released' })
    try {
      await client.ready({ timeoutMs: 5000 })
      await client.set('k', 'v')
      await assert.rejects(client.scan('*').next(), NotSupportedError)
      assert.equal((await client.get('k')).value?.toString(), 'v', 'everything else is served')
    } finally {
      await client.close()
      await released.stop()
    }
  })

  it('fails with NotSupportedError where the state store does not know SCAN', async function () {
    const url = await mosquittoUrl(this)
    // A state store as released: SCAN is an unknown command.
    const responder = await Responder.start(url, () => ({ payload: Reply.error('unknown command') }))
    const client = new StateStoreClient({ brokerUrl: url, clientId: 'scanner-old', requestTimeoutMs: 3000 })
    clients.add(client)
    try {
      await client.ready({ timeoutMs: 5000 })
      await assert.rejects(
        client.scan('*').next(),
        (err: unknown) => err instanceof NotSupportedError && err.kind === 'notSupported' && err.verb === 'SCAN',
      )
    } finally {
      await responder.stop()
    }
  })
})

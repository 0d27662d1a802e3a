// The sidebar's Import in real runtimes (Node-RED 4 and 5) with adminAuth: an export file sent as
// the request body is written into the store, checked whole first, within the export's limits and
// one import per store at a time.
import { strict as assert } from 'node:assert'
import { get } from 'node:http'
import { StateStoreClient } from '../../../src/client'
import { encodeKeyRecord, type KeyRecord } from '../../../src/formats/key-records'
import { AuthRuntime, RUNTIMES } from './runtime'
import { eventually } from '../../support/wait'

const FLOWS = [
  { id: 'tab1', type: 'tab', label: 'sidebar' },
  { id: 'cfg1', type: 'ss-config', name: 'local', embedded: true, clientId: 'sidebar-import-test' },
  { id: 'get1', type: 'ss-get', z: 'tab1', store: 'cfg1', key: 'x', wires: [[]] },
]

const file = (records: KeyRecord[]) => records.map(encodeKeyRecord).join('')
const record = (key: string, value: string | Buffer, more: Partial<KeyRecord> = {}): KeyRecord => ({
  key: Buffer.from(key),
  value: Buffer.isBuffer(value) ? value : Buffer.from(value),
  ...more,
})

async function withClient<T>(rt: AuthRuntime, token: string, use: (c: StateStoreClient) => Promise<T>): Promise<T> {
  const stores = (await rt.request('GET', '/aio-statestore/stores', token)).json as {
    stores: Array<{ id: string; broker: string; connection: { state: string } }>
  }
  const broker = stores.stores.find((s) => s.id === 'cfg1')!.broker
  const client = new StateStoreClient({
    brokerUrl: broker,
    clientId: `sidebar-import-${process.pid}-${Math.random().toString(36).slice(2, 8)}`,
  })
  try {
    await client.ready({ timeoutMs: 5000 })
    return await use(client)
  } finally {
    await client.close()
  }
}

/** A body sent in two parts: the first at once, the rest when `finish` is called. */
function heldBody(first: string): { body: ReadableStream<Uint8Array>; finish: (rest: string) => void } {
  let controller!: ReadableStreamDefaultController<Uint8Array>
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c
      c.enqueue(new TextEncoder().encode(first))
    },
  })
  return {
    body,
    finish: (rest) => {
      controller.enqueue(new TextEncoder().encode(rest))
      controller.close()
    },
  }
}

for (const [version, redJs] of Object.entries(RUNTIMES)) {
  describe(`sidebar import in ${version}`, function () {
    this.timeout(60000)
    let rt: AuthRuntime
    let admin: string
    let reader: string

    before(async () => {
      // A client outside the runtime reaches its embedded emulator only on a port asked for.
      rt = await AuthRuntime.start(
        redJs,
        FLOWS,
        { ...process.env, AIO_STATESTORE_EMBEDDED_PORT: '0' },
        { aioStateStore: { exportMaxKeys: 400 } },
      )
      admin = await rt.token('admin')
      reader = await rt.token('reader')
      await eventually(
        async () =>
          (
            (await rt.request('GET', '/aio-statestore/stores', reader)).json as {
              stores: Array<{ connection: { state: string } }>
            }
          ).stores.some((s) => s.connection.state === 'connected') || undefined,
        'store connected',
        15_000,
      )
    })
    after(async () => rt?.stop())

    it('writes every key of an export file, binary values, expiry and 300 keys in a stream', async () => {
      const binary = Buffer.from([0, 0xff, 0x80, 10])
      const records = [
        record('sidebar/import/text', 'héllo'),
        record('sidebar/import/bin', binary, { expiresAt: Date.now() + 600_000 }),
        record('sidebar/import/gone', 'old', { expiresAt: Date.now() - 1000 }),
        ...Array.from({ length: 300 }, (_, i) => record(`sidebar/import/many/${i}`, `v${i}`)),
      ]
      const done = await rt.upload('/aio-statestore/stores/cfg1/import', admin, file(records))
      assert.equal(done.status, 200, JSON.stringify(done.json))
      assert.deepEqual(done.json, { imported: 302, expired: 1, failed: 0, firstFailure: null })
      await withClient(rt, reader, async (c) => {
        assert.equal((await c.get('sidebar/import/text')).value?.toString(), 'héllo')
        assert.deepEqual((await c.get('sidebar/import/bin')).value, binary)
        assert.equal((await c.get('sidebar/import/gone')).value, null, 'an expired record is skipped')
        assert.equal((await c.get('sidebar/import/many/299')).value?.toString(), 'v299')
      })
    })

    it('refuses a bad file naming its line, and writes none of it', async () => {
      const good = file([record('sidebar/bad/1', 'a'), record('sidebar/bad/2', 'b')])
      const bad = await rt.upload(
        '/aio-statestore/stores/cfg1/import',
        admin,
        `${good}{"key": "sidebar/bad/3"}\n${file([record('sidebar/bad/4', 'd')])}`,
      )
      assert.equal(bad.status, 400)
      const body = bad.json as { code: string; line: number; detail: string }
      assert.equal(body.code, 'importBadLine')
      assert.equal(body.line, 3)
      assert.ok(body.detail.length > 0, 'the reason is given')
      await withClient(rt, reader, async (c) =>
        assert.equal((await c.get('sidebar/bad/1')).value, null, 'nothing of a bad file is written'),
      )
    })

    it('refuses a file over the key limit (exportMaxKeys) before writing any key', async () => {
      const tooMany = Array.from({ length: 401 }, (_, i) => record(`sidebar/over/${i}`, 'x'))
      const over = await rt.upload('/aio-statestore/stores/cfg1/import', admin, file(tooMany))
      assert.equal(over.status, 413)
      assert.deepEqual(over.json, { code: 'importTooLarge' })
      await withClient(rt, reader, async (c) => assert.equal((await c.get('sidebar/over/0')).value, null))
    })

    it('an export the key cap cut off arrives ending in its exportCut line, and importing it back is refused as importCut', async () => {
      await withClient(rt, reader, async (c) => {
        for (let i = 0; i < 450; i += 50)
          await Promise.all(Array.from({ length: 50 }, (_, j) => c.set(`sidebar/cut/${i + j}`, 'x')))
      })
      // What a saved download holds: the bytes that came before the connection was cut.
      const got: Buffer[] = []
      await new Promise<void>((resolve, reject) => {
        const req = get(
          `${rt.url}/aio-statestore/stores/cfg1/export?pattern=sidebar/cut/*`,
          { headers: { Authorization: `Bearer ${reader}` } },
          (res) => {
            res.on('data', (d: Buffer) => got.push(d))
            res.on('error', () => {})
            res.on('close', () => resolve())
          },
        )
        req.on('error', reject)
      })
      const lines = Buffer.concat(got).toString('utf8').split('\n').filter(Boolean)
      assert.equal(lines.length, 401)
      assert.deepEqual(JSON.parse(lines[400]!), { exportCut: { written: 400, total: 450, reason: 'keys' } })
      const back = await rt.upload('/aio-statestore/stores/cfg1/import', admin, `${lines.join('\n')}\n`)
      assert.equal(back.status, 400)
      assert.deepEqual(back.json, { code: 'importCut', line: 401, written: 400, total: 450 })
    })

    it('refuses a read-only user and anyone not logged in', async () => {
      const body = file([record('sidebar/ro', 'x')])
      const ro = await rt.upload('/aio-statestore/stores/cfg1/import', reader, body)
      assert.ok([401, 403].includes(ro.status), `a reader's import answered ${ro.status}`)
      assert.equal((await rt.upload('/aio-statestore/stores/cfg1/import', null, body)).status, 401)
      assert.equal((await rt.upload('/aio-statestore/stores/nope/import', admin, body)).status, 404)
      await withClient(rt, reader, async (c) => assert.equal((await c.get('sidebar/ro')).value, null))
    })

    it('takes one import per store at a time: a second while the first is read is answered 429', async () => {
      const held = heldBody(file([record('sidebar/one/1', 'a')]))
      const first = rt.upload('/aio-statestore/stores/cfg1/import', admin, held.body)
      const second = await eventually(
        async () => {
          const r = await rt.upload('/aio-statestore/stores/cfg1/import', admin, file([record('sidebar/one/2', 'b')]))
          return r.status === 429 ? r : undefined
        },
        'the second import refused while the first runs',
        15_000,
      )
      assert.deepEqual(second.json, { code: 'importBusy' })
      held.finish(file([record('sidebar/one/3', 'c')]))
      const done = await first
      assert.equal(done.status, 200, JSON.stringify(done.json))
      assert.equal((done.json as { imported: number }).imported, 2)
    })
  })
}

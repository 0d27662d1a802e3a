// The sidebar's runtime half in real runtimes (Node-RED 4 and 5) with adminAuth: what each user
// may see and do over the admin API, and the live updates over the editor's websocket.
import { strict as assert } from 'node:assert'
import { StateStoreClient } from '../../../src/client'
import { parseKeyRecords } from '../../../src/formats/key-records'
import { AuthRuntime, RUNTIMES, SidebarComms } from './runtime'
import { eventually } from '../../support/wait'

const FLOWS = [
  { id: 'tab1', type: 'tab', label: 'sidebar' },
  { id: 'cfg1', type: 'ss-config', name: 'local', embedded: true, clientId: 'sidebar-test' },
  { id: 'watch1', type: 'ss-watch', z: 'tab1', store: 'cfg1', keys: 'sidebar/watched', decode: 'auto', wires: [[]] },
]

interface Store {
  id: string
  browsable: boolean
  broker: string
  connection: { state: string }
  watches: Array<{ key: string; value: { preview: string } | null; notifications: number }>
}

for (const [version, redJs] of Object.entries(RUNTIMES)) {
  describe(`sidebar admin API in ${version}`, function () {
    this.timeout(60000)
    let rt: AuthRuntime
    let admin: string
    let reader: string

    before(async () => {
      // A client outside the runtime reaches its embedded emulator only on a port asked for.
      rt = await AuthRuntime.start(redJs, FLOWS, { ...process.env, AIO_STATESTORE_EMBEDDED_PORT: '0' })
      admin = await rt.token('admin')
      reader = await rt.token('reader')
    })
    after(async () => rt?.stop())

    const stores = async (token: string) =>
      ((await rt.request('GET', '/aio-statestore/stores', token)).json as { stores: Store[] }).stores

    it('refuses anyone not logged in', async () => {
      assert.equal((await rt.request('GET', '/aio-statestore/stores', null)).status, 401)
      assert.equal(
        (await rt.request('PUT', '/aio-statestore/stores/cfg1/key', null, { key: 'k', value: 'v' })).status,
        401,
      )
    })

    it('shows the connected store and its watch to a reader', async () => {
      const store = await eventually(
        async () => (await stores(reader)).find((s) => s.id === 'cfg1' && s.connection.state === 'connected'),
        'store connected',
        15_000,
      )
      assert.equal(store.browsable, true, 'the embedded emulator has a key browser')
      assert.deepEqual(
        store.watches.map((w) => w.key),
        ['sidebar/watched'],
      )
    })

    it('lets the admin set, inspect, browse and delete a key; the watch sees the value', async () => {
      const set = await rt.request('PUT', '/aio-statestore/stores/cfg1/key', admin, {
        key: 'sidebar/watched',
        value: '<b>21</b>',
      })
      assert.equal(set.status, 200, JSON.stringify(set.json))
      assert.equal((set.json as { applied: boolean }).applied, true)
      const got = await rt.request(
        'GET',
        `/aio-statestore/stores/cfg1/key?key=${encodeURIComponent('sidebar/watched')}`,
        reader,
      )
      const body = got.json as {
        exists: boolean
        value: { preview: string; kind: string }
        version: string
        expiresAt: null
        fencingToken: null
        persisted: boolean
        notPersistedBecause: string | null
      }
      assert.equal(body.exists, true)
      assert.equal(body.value.preview, '<b>21</b>')
      assert.equal(body.value.kind, 'text')
      assert.equal(body.version, (set.json as { version: string }).version)
      assert.equal(body.expiresAt, null)
      assert.equal(body.persisted, false)
      assert.equal(body.notPersistedBecause, 'noFile', 'the embedded emulator has no persistence file')
      await eventually(
        async () =>
          (await stores(reader)).find((s) => s.id === 'cfg1')!.watches[0]!.value?.preview === '<b>21</b>'
            ? true
            : undefined,
        'watch shows the value',
        15_000,
      )
      const page = (await rt.request('GET', '/aio-statestore/stores/cfg1/keys?pattern=sidebar/*', reader)).json as {
        source: string
        keys: Array<{ key: string }>
      }
      assert.equal(page.source, 'scan', 'the embedded emulator answers SCAN: the browser lists through the state store')
      assert.deepEqual(
        page.keys.map((k) => k.key),
        ['sidebar/watched'],
      )
      const del = await rt.request(
        'DELETE',
        `/aio-statestore/stores/cfg1/key?key=${encodeURIComponent('sidebar/watched')}`,
        admin,
      )
      assert.deepEqual(del.json, { deleted: true })
      assert.deepEqual(
        (await rt.request('GET', '/aio-statestore/stores/cfg1/key?key=sidebar%2Fwatched', reader)).json,
        { exists: false },
      )
    })

    it("leaves the context store's index and lock keys out of the key browser unless the pattern has a #", async () => {
      for (const key of ['ctx/global/counter', 'ctx/#keys/0a', 'ctx/#keys/delta', 'ctx/#lock', 'ctx/notes#1']) {
        assert.equal(
          (await rt.request('PUT', '/aio-statestore/stores/cfg1/key', admin, { key, value: '1' })).status,
          200,
        )
      }
      type Page = { keys: Array<{ key: string }>; hidden: number }
      const plain = (
        await rt.request('GET', `/aio-statestore/stores/cfg1/keys?pattern=${encodeURIComponent('ctx/*')}`, reader)
      ).json as Page
      assert.deepEqual(plain.keys.map((k) => k.key).sort(), ['ctx/global/counter', 'ctx/notes#1'])
      assert.equal(plain.hidden, 3)
      const asked = (
        await rt.request('GET', `/aio-statestore/stores/cfg1/keys?pattern=${encodeURIComponent('ctx/#*')}`, reader)
      ).json as Page
      assert.deepEqual(asked.keys.map((k) => k.key).sort(), ['ctx/#keys/0a', 'ctx/#keys/delta', 'ctx/#lock'])
      assert.equal(asked.hidden, 0)
    })

    it('refuses set and delete to a read-only user, and leaves the key alone', async () => {
      await rt.request('PUT', '/aio-statestore/stores/cfg1/key', admin, { key: 'sidebar/kept', value: 'v1' })
      const set = await rt.request('PUT', '/aio-statestore/stores/cfg1/key', reader, {
        key: 'sidebar/kept',
        value: 'v2',
      })
      const del = await rt.request('DELETE', '/aio-statestore/stores/cfg1/key?key=sidebar%2Fkept', reader)
      assert.ok([401, 403].includes(set.status), `set answered ${set.status}`)
      assert.ok([401, 403].includes(del.status), `delete answered ${del.status}`)
      const kept = (await rt.request('GET', '/aio-statestore/stores/cfg1/key?key=sidebar%2Fkept', reader)).json as {
        value: { preview: string }
      }
      assert.equal(kept.value.preview, 'v1')
    })

    it('exports the keys the browser lists as an import file, binary values and expiry included', async () => {
      const client = new StateStoreClient({
        brokerUrl: (await stores(reader)).find((s) => s.id === 'cfg1')!.broker,
        clientId: `sidebar-export-${process.pid}`,
      })
      const binary = Buffer.from([0, 0xff, 0x80, 10])
      try {
        await client.ready({ timeoutMs: 5000 })
        await client.set('sidebar/export/text', 'héllo')
        await client.set('sidebar/export/bin', binary, { expiryMs: 600_000 })
      } finally {
        await client.close()
      }
      const exported = await rt.request('GET', '/aio-statestore/stores/cfg1/export?pattern=sidebar/export/*', reader)
      assert.equal(exported.status, 200, JSON.stringify(exported.json))
      const records = parseKeyRecords(String(exported.json))
      assert.deepEqual(records.map((r) => r.key.toString()).sort(), ['sidebar/export/bin', 'sidebar/export/text'])
      const bin = records.find((r) => r.key.toString() === 'sidebar/export/bin')!
      assert.deepEqual(bin.value, binary)
      assert.ok(bin.expiresAt! > Date.now(), 'the embedded emulator tells the expiry')
      assert.equal(records.find((r) => r.key.toString() === 'sidebar/export/text')!.value.toString(), 'héllo')
    })

    it('answers bad input with a code and an unknown store with 404', async () => {
      const noKey = await rt.request('GET', '/aio-statestore/stores/cfg1/key', reader)
      assert.equal(noKey.status, 400)
      assert.deepEqual(noKey.json, { code: 'noKey' })
      assert.equal((await rt.request('GET', '/aio-statestore/stores/nope/key?key=x', reader)).status, 404)
      assert.deepEqual((await rt.request('PUT', '/aio-statestore/stores/cfg1/key', admin, { key: 'x' })).json, {
        code: 'noValue',
      })
    })

    it('pushes updates only while a viewer is live, coalesced per key', async () => {
      const comms = await SidebarComms.open(rt.url, reader)
      const client = new StateStoreClient({
        brokerUrl: (await stores(reader)).find((s) => s.id === 'cfg1')!.broker,
        clientId: `sidebar-outside-${process.pid}`,
      })
      try {
        await client.ready({ timeoutMs: 10000 })
        // Not live: a change is not pushed.
        await client.set('sidebar/watched', 'unseen')
        await eventually(
          async () =>
            (await stores(reader)).find((s) => s.id === 'cfg1')!.watches[0]!.value?.preview === 'unseen'
              ? true
              : undefined,
          'runtime saw the change',
          15_000,
        )
        assert.equal(comms.updates.filter((u) => u.watches).length, 0, 'no watch update while nobody looks')

        assert.equal(
          (await rt.request('POST', '/aio-statestore/live', reader, { viewer: 'test', open: true })).status,
          200,
        )
        const sets = 300
        await Promise.all(Array.from({ length: sets }, (_, i) => client.set('sidebar/watched', `burst ${i}`)))
        const last = await eventually(
          () => {
            const w = comms.updates.flatMap((u) => (u.watches as Store['watches'] | undefined) ?? [])
            return w.some((x) => x.value?.preview === `burst ${sets - 1}`) ? w : undefined
          },
          'the last value pushed',
          15_000,
        )
        assert.ok(last.length < sets / 10, `${last.length} watch updates for ${sets} changes`)

        assert.equal(
          (await rt.request('POST', '/aio-statestore/live', reader, { viewer: 'test', open: false })).status,
          200,
        )
        const before = comms.updates.length
        await client.set('sidebar/watched', 'after close')
        await eventually(
          async () =>
            (await stores(reader)).find((s) => s.id === 'cfg1')!.watches[0]!.value?.preview === 'after close'
              ? true
              : undefined,
          'runtime saw the change',
          15_000,
        )
        await new Promise((r) => setTimeout(r, 600))
        assert.equal(comms.updates.length, before, 'nothing pushed after the viewer closed')
      } finally {
        comms.close()
        await client.close()
      }
    })

    it('never logs a value', () => {
      assert.ok(!rt.log.includes('<b>21</b>'), 'the value set through the sidebar is not in the log')
      assert.ok(!rt.log.includes('burst '), 'watched values are not in the log')
    })
  })
}

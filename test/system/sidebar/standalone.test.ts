// The sidebar's key browser for a standalone emulator: Node-RED's config node points at mosquitto,
// where the emulator CLI serves. With SCAN the browser lists through the state store itself; without
// it (`--no-scan`, as the released broker) it falls back to the admin channel when the emulator has
// `--admin`, and says it is not available otherwise. The inspector's extra fields need `--admin`.
import { strict as assert } from 'node:assert'
import { StateStoreClient } from '../../../src/client'
import { EmulatorProcess } from '../emulator/cli-process'
import { Mosquitto, requireMosquitto } from '../../support/mosquitto'
import { AuthRuntime, RUNTIMES } from './runtime'
import { eventually } from '../../support/wait'

interface Store {
  id: string
  browsable: boolean
  connection: { state: string }
}

describe('sidebar key browser for a standalone emulator (--admin)', function () {
  this.timeout(60_000)
  let withAdmin: Mosquitto
  let without: Mosquitto
  let withScan: Mosquitto
  const emulators: EmulatorProcess[] = []
  let rt: AuthRuntime
  let reader: string
  let writer: StateStoreClient
  let scanWriter: StateStoreClient

  before(async function () {
    requireMosquitto(this)
    ;[withAdmin, without, withScan] = await Promise.all([Mosquitto.start(), Mosquitto.start(), Mosquitto.start()])
    emulators.push(
      ...(await Promise.all([
        EmulatorProcess.start(['--broker', withAdmin.url, '--admin', '--no-scan']),
        EmulatorProcess.start(['--broker', without.url, '--no-scan']),
        EmulatorProcess.start(['--broker', withScan.url]),
      ])),
    )
    scanWriter = new StateStoreClient({ brokerUrl: withScan.url, clientId: 'sidebar-standalone-scan-writer' })
    await scanWriter.ready({ timeoutMs: 10_000 })
    await Promise.all(
      Array.from({ length: 130 }, (_, i) => scanWriter.set(`scan/${String(i).padStart(3, '0')}`, 'x'.repeat(i))),
    )
    writer = new StateStoreClient({ brokerUrl: withAdmin.url, clientId: 'sidebar-standalone-writer' })
    await writer.ready({ timeoutMs: 10_000 })
    await Promise.all(
      Array.from({ length: 120 }, (_, i) => writer.set(`remote/${String(i).padStart(3, '0')}`, `v${i}`)),
    )
    await writer.set('remote/expiring', 'secret-remote-value', { expiryMs: 600_000 })
    rt = await AuthRuntime.start(RUNTIMES['Node-RED 5'], [
      { id: 'tab1', type: 'tab', label: 'standalone' },
      { id: 'cfgAdmin', type: 'ss-config', name: 'admin', broker: withAdmin.url, clientId: 'sidebar-standalone-admin' },
      { id: 'cfgPlain', type: 'ss-config', name: 'plain', broker: without.url, clientId: 'sidebar-standalone-plain' },
      { id: 'cfgScan', type: 'ss-config', name: 'scan', broker: withScan.url, clientId: 'sidebar-standalone-scan' },
      { id: 'get1', type: 'ss-get', z: 'tab1', store: 'cfgAdmin', wires: [[]] },
      { id: 'get2', type: 'ss-get', z: 'tab1', store: 'cfgPlain', wires: [[]] },
      { id: 'get3', type: 'ss-get', z: 'tab1', store: 'cfgScan', wires: [[]] },
    ])
    reader = await rt.token('reader')
  })
  after(async () => {
    await rt?.stop()
    await writer?.close()
    await scanWriter?.close()
    await Promise.all(emulators.map((e) => e.kill('SIGTERM')))
    await Promise.all([withAdmin?.stop(), without?.stop(), withScan?.stop()])
  })

  const stores = async () =>
    ((await rt.request('GET', '/aio-statestore/stores', reader)).json as { stores: Store[] }).stores

  it('browses where the store answers SCAN or the emulator has --admin, and only there', async () => {
    const all = await eventually(
      async () => {
        const s = await stores()
        return s.length === 3 && s.every((x) => x.connection.state === 'connected') ? s : undefined
      },
      'the three stores connected',
      15_000,
    )
    assert.equal(all.find((s) => s.id === 'cfgScan')!.browsable, true)
    assert.equal(all.find((s) => s.id === 'cfgAdmin')!.browsable, true)
    assert.equal(all.find((s) => s.id === 'cfgPlain')!.browsable, false)
    const refused = await rt.request('GET', '/aio-statestore/stores/cfgPlain/keys', reader)
    assert.equal(refused.status, 404)
    assert.deepEqual(refused.json, { code: 'noBrowser' })
  })

  it('lists keys with SCAN where the store answers it, page by page, each with its size and version', async () => {
    type Page = {
      source: string
      keys: Array<{ key: string; size: number; version: string | null }>
      matching: number | null
      next: string | null
    }
    const seen: string[] = []
    let next: string | null = null
    let pages = 0
    do {
      const res = await rt.request(
        'GET',
        `/aio-statestore/stores/cfgScan/keys?pattern=scan/1*&limit=12${next ? `&after=${next}` : ''}`,
        reader,
      )
      assert.equal(res.status, 200, JSON.stringify(res.json))
      const page = res.json as Page
      assert.equal(page.source, 'scan')
      assert.equal(page.matching, null, 'SCAN does not count')
      assert.ok(page.keys.length <= 12)
      for (const k of page.keys) {
        assert.equal(k.size, Number(k.key.slice(5)), `the size of ${k.key}`)
        assert.match(String(k.version), /^\d{15}:\d{5}:/)
      }
      seen.push(...page.keys.map((k) => k.key))
      next = page.next
      pages++
    } while (next && pages < 20)
    assert.deepEqual(
      seen.sort(),
      Array.from({ length: 30 }, (_, i) => `scan/${100 + i}`),
    )
    assert.equal(pages, 3, 'the last page says it is the last')
    // The editor reads a page again after a Set or Delete: the same cursor gives the same keys, still there.
    const first = (await rt.request('GET', '/aio-statestore/stores/cfgScan/keys?pattern=scan/1*&limit=12', reader))
      .json as Page
    const second = (
      await rt.request(
        'GET',
        `/aio-statestore/stores/cfgScan/keys?pattern=scan/1*&limit=12&after=${first.next}`,
        reader,
      )
    ).json as Page
    await scanWriter.del(second.keys[0]!.key)
    const reread = (
      await rt.request(
        'GET',
        `/aio-statestore/stores/cfgScan/keys?pattern=scan/1*&limit=12&after=${first.next}`,
        reader,
      )
    ).json as Page
    assert.deepEqual(
      reread.keys.map((k) => k.key),
      second.keys.slice(1).map((k) => k.key),
    )
    assert.equal(reread.next, second.next)
  })

  it("lists, filters and pages the standalone emulator's keys through the admin channel where the store has no SCAN", async () => {
    const first = await rt.request('GET', '/aio-statestore/stores/cfgAdmin/keys?pattern=remote/0*&limit=50', reader)
    assert.equal(first.status, 200, JSON.stringify(first.json))
    const page = first.json as {
      source: string
      keys: Array<{ key: string; size: number }>
      matching: number
      total: number
      next: string | null
    }
    assert.equal(page.source, 'admin')
    assert.equal(page.matching, 100)
    assert.equal(page.total, 121)
    assert.equal(page.keys.length, 50)
    assert.equal(page.keys[0]!.key, 'remote/000')
    assert.ok(page.next)
    const rest = (
      await rt.request(
        'GET',
        `/aio-statestore/stores/cfgAdmin/keys?pattern=remote/0*&limit=50&after=${page.next}`,
        reader,
      )
    ).json as typeof page
    assert.equal(rest.keys.length, 50)
    assert.equal(rest.keys[49]!.key, 'remote/099')
    assert.equal(rest.next, null)
  })

  it('says why the inspector has no expiry, persistence or access lines where no admin channel answers, naming the client id', async () => {
    await scanWriter.set('scan/inspected', 'v')
    const got = await rt.request(
      'GET',
      `/aio-statestore/stores/cfgScan/key?key=${encodeURIComponent('scan/inspected')}`,
      reader,
    )
    const body = got.json as { exists: boolean; persisted?: boolean; noDetails?: { clientId: string } }
    assert.equal(body.exists, true)
    assert.equal(body.persisted, undefined)
    assert.deepEqual(body.noDetails, { clientId: 'sidebar-standalone-scan' })
  })

  it('shows the expiry in the key inspector, from the admin channel, and logs no value', async () => {
    const got = await rt.request(
      'GET',
      `/aio-statestore/stores/cfgAdmin/key?key=${encodeURIComponent('remote/expiring')}`,
      reader,
    )
    const body = got.json as {
      exists: boolean
      value: { preview: string }
      expiresAt: number | null
      persisted: boolean
      notPersistedBecause: string | null
    }
    assert.equal(body.exists, true)
    assert.equal(body.value.preview, 'secret-remote-value')
    assert.ok(body.expiresAt !== null && body.expiresAt > Date.now(), `expiresAt ${body.expiresAt}`)
    assert.equal(body.persisted, false)
    assert.equal(
      body.notPersistedBecause,
      'noFile',
      "an emulator without --persist keeps no key: the store's setting, not the key's",
    )
    assert.ok(!rt.log.includes('secret-remote-value'))
    assert.ok(!emulators[0]!.stderr.includes('secret-remote-value'))
  })
})

// The sidebar's key browser for a standalone emulator: Node-RED's config node points at mosquitto,
// where the emulator CLI serves; with `--admin` the browser and the inspector's extra fields work
// over MQTT, without it the browser says it is not available (as for any other broker).
import { strict as assert } from 'node:assert'
import { StateStoreClient } from '../../src/client'
import { EmulatorProcess } from '../emulator/cli-process'
import { requireMosquitto } from '../reliability/support'
import { Mosquitto } from '../support/mosquitto'
import { AuthRuntime, RUNTIMES, eventually } from './runtime'

interface Store {
  id: string
  browsable: boolean
  connection: { state: string }
}

describe('sidebar key browser for a standalone emulator (--admin)', function () {
  this.timeout(60_000)
  let withAdmin: Mosquitto
  let without: Mosquitto
  const emulators: EmulatorProcess[] = []
  let rt: AuthRuntime
  let reader: string
  let writer: StateStoreClient

  before(async function () {
    requireMosquitto(this)
    ;[withAdmin, without] = await Promise.all([Mosquitto.start(), Mosquitto.start()])
    emulators.push(...(await Promise.all([EmulatorProcess.start(['--broker', withAdmin.url, '--admin']), EmulatorProcess.start(['--broker', without.url])])))
    writer = new StateStoreClient({ brokerUrl: withAdmin.url, clientId: 'sidebar-standalone-writer' })
    await writer.ready({ timeoutMs: 10_000 })
    await Promise.all(Array.from({ length: 120 }, (_, i) => writer.set(`remote/${String(i).padStart(3, '0')}`, `v${i}`)))
    await writer.set('remote/expiring', 'secret-remote-value', { expiryMs: 600_000 })
    rt = await AuthRuntime.start(RUNTIMES['Node-RED 5'], [
      { id: 'tab1', type: 'tab', label: 'standalone' },
      { id: 'cfgAdmin', type: 'ss-config', name: 'admin', broker: withAdmin.url, clientId: 'sidebar-standalone-admin' },
      { id: 'cfgPlain', type: 'ss-config', name: 'plain', broker: without.url, clientId: 'sidebar-standalone-plain' },
      { id: 'get1', type: 'ss-get', z: 'tab1', store: 'cfgAdmin', wires: [[]] },
      { id: 'get2', type: 'ss-get', z: 'tab1', store: 'cfgPlain', wires: [[]] },
    ])
    reader = await rt.token('reader')
  })
  after(async () => {
    await rt?.stop()
    await writer?.close()
    await Promise.all(emulators.map((e) => e.kill('SIGTERM')))
    await Promise.all([withAdmin?.stop(), without?.stop()])
  })

  const stores = async () => ((await rt.request('GET', '/aio-statestore/stores', reader)).json as { stores: Store[] }).stores

  it('finds the admin channel on the broker of the emulator started with --admin, and only there', async () => {
    const all = await eventually(async () => {
      const s = await stores()
      return s.length === 2 && s.every((x) => x.connection.state === 'connected') ? s : undefined
    }, 'both stores connected')
    assert.equal(all.find((s) => s.id === 'cfgAdmin')!.browsable, true)
    assert.equal(all.find((s) => s.id === 'cfgPlain')!.browsable, false)
    const refused = await rt.request('GET', '/aio-statestore/stores/cfgPlain/keys', reader)
    assert.equal(refused.status, 404)
    assert.deepEqual(refused.json, { code: 'noBrowser' })
  })

  it('lists, filters and pages the standalone emulator\'s keys', async () => {
    const first = await rt.request('GET', '/aio-statestore/stores/cfgAdmin/keys?pattern=remote/0*&limit=50', reader)
    assert.equal(first.status, 200, JSON.stringify(first.json))
    const page = first.json as { keys: Array<{ key: string; size: number }>; matching: number; total: number; next: string | null }
    assert.equal(page.matching, 100)
    assert.equal(page.total, 121)
    assert.equal(page.keys.length, 50)
    assert.equal(page.keys[0]!.key, 'remote/000')
    assert.ok(page.next)
    const rest = (await rt.request('GET', `/aio-statestore/stores/cfgAdmin/keys?pattern=remote/0*&limit=50&after=${page.next}`, reader)).json as typeof page
    assert.equal(rest.keys.length, 50)
    assert.equal(rest.keys[49]!.key, 'remote/099')
    assert.equal(rest.next, null)
  })

  it('shows the expiry in the key inspector, from the admin channel, and logs no value', async () => {
    const got = await rt.request('GET', `/aio-statestore/stores/cfgAdmin/key?key=${encodeURIComponent('remote/expiring')}`, reader)
    const body = got.json as { exists: boolean; value: { preview: string }; expiresAt: number | null; persisted: boolean }
    assert.equal(body.exists, true)
    assert.equal(body.value.preview, 'secret-remote-value')
    assert.ok(body.expiresAt !== null && body.expiresAt > Date.now(), `expiresAt ${body.expiresAt}`)
    assert.equal(body.persisted, false)
    assert.ok(!rt.log.includes('secret-remote-value'))
    assert.ok(!emulators[0]!.stderr.includes('secret-remote-value'))
  })
})

/**
 * `export --admin` from an emulator without a persistence file, as a developer moves keys from a
 * quick local emulator to one that keeps them: a key set with `--persist` keeps `persist`.
 */
import assert from 'node:assert/strict'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { parseKeyRecords } from '../../../src/formats/key-records'
import { FROM_SOURCE, runCli } from './run'

describe('aio-statestore export --admin: persist travels without a persistence file', function () {
  this.timeout(60_000)
  let source: Emulator
  before(async () => {
    source = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, logLevel: 'error', adminOverMqtt: true })
  })
  after(() => source?.stop())

  it('a key set with --persist is exported with persist: true, one set without it without', async () => {
    const broker = ['--broker', source.brokerUrl]
    assert.equal((await runCli(FROM_SOURCE, ['set', 'recipe/a', 'A', '--persist', ...broker])).code, 0)
    assert.equal((await runCli(FROM_SOURCE, ['set', 'recipe/b', 'B', ...broker])).code, 0)
    const exported = await runCli(FROM_SOURCE, ['export', '--admin', ...broker])
    assert.equal(exported.code, 0, exported.stderr)
    const records = parseKeyRecords(exported.stdout.toString('utf8'))
    assert.equal(records.find((r) => r.key.toString() === 'recipe/a')?.persist, true)
    assert.equal(records.find((r) => r.key.toString() === 'recipe/b')?.persist, undefined)
    // The sidebar's inspector still says why the key does not outlive a restart here.
    assert.deepEqual(
      {
        persistedBy: source.admin?.inspect(Buffer.from('recipe/a'))?.persistedBy,
        because: source.admin?.inspect(Buffer.from('recipe/a'))?.notPersistedBecause,
      },
      { persistedBy: null, because: 'noFile' },
    )
  })
})

// The CLI as a user types it on Node.js 20 (the README's floor; the system `node` here): the built
// bin, export and import of 300 keys, nothing on stderr but what the command says (Node.js 20 warned
// "MaxListenersExceededWarning … 11 abort listeners", 24 does not); and a mistyped flag before the
// command is called a flag, not a command.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { StateStoreClient } from '../../../src/client'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { runCli, withoutAioEnv, type CliCommand } from './run'

const ROOT = join(__dirname, '..', '..', '..')

/** A Node.js 20: this one when it is, else the system's. */
function node20(): string {
  if (process.versions.node.startsWith('20.')) return process.execPath
  for (const candidate of ['/usr/bin/node', '/usr/local/bin/node'])
    if (existsSync(candidate) && execFileSync(candidate, ['--version'], { encoding: 'utf8' }).startsWith('v20.'))
      return candidate
  throw new Error('no Node.js 20 on this machine (the README promises the CLI runs there): install Debian’s nodejs')
}

describe('cli: on Node.js 20, as typed', function () {
  this.timeout(120_000)
  let emulator: Emulator
  let work = ''
  let bin: CliCommand

  before(async () => {
    bin = { file: node20(), args: [join(ROOT, 'dist', 'src', 'cli', 'main.js')] }
    emulator = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, logLevel: 'error' })
    work = mkdtempSync(join(tmpdir(), 'aio-ss-cli20-'))
    const client = new StateStoreClient({ brokerUrl: emulator.brokerUrl, clientId: 'cli20-seed' })
    try {
      await Promise.all(
        Array.from({ length: 300 }, (_, i) => client.set(`node20/${String(i).padStart(3, '0')}`, `value ${i}`)),
      )
    } finally {
      await client.close()
    }
  })

  after(async () => {
    await emulator?.stop()
    if (work) rmSync(work, { recursive: true, force: true })
  })

  it('exports and imports 300 keys with no warning', async () => {
    const exported = await runCli(bin, ['export', 'node20/*', '--broker', emulator.brokerUrl], { env: withoutAioEnv() })
    assert.equal(exported.code, 0, exported.stderr)
    assert.equal(exported.stdout.toString().trim().split('\n').length, 300)
    assert.doesNotMatch(exported.stderr, /Warning|warning/, exported.stderr)
    const file = join(work, 'keys.ndjson')
    writeFileSync(file, exported.stdout)
    const imported = await runCli(bin, ['import', file, '--broker', emulator.brokerUrl], { env: withoutAioEnv() })
    assert.equal(imported.code, 0, imported.stderr)
    assert.doesNotMatch(imported.stderr, /Warning|warning/, imported.stderr)
  })

  it('calls a mistyped flag a flag, and names the flags it knows', async () => {
    const ran = await runCli(bin, ['--brokr', emulator.brokerUrl, 'get', 'node20/000'], { env: withoutAioEnv() })
    assert.equal(ran.code, 2)
    assert.match(ran.stderr, /unknown flag "--brokr"/)
    assert.match(ran.stderr, /--broker/)
    assert.doesNotMatch(ran.stderr, /unknown command/)
  })
})

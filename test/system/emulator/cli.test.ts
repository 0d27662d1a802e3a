import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { freePort } from '../../../dev/ports'
import { Reply, Request } from '../../../src/protocol'
import { EmulatorProcess } from './cli-process'
import { RawClient } from '../../integration/emulator/raw-client'

describe('aio-statestore-emulator (command line)', function () {
  this.timeout(20_000)
  const running: EmulatorProcess[] = []
  after(async () => {
    await Promise.all(running.map((p) => p.kill('SIGKILL')))
  })

  it('documents every option in --help', async () => {
    const p = EmulatorProcess.spawn(['--help'])
    const { code } = await p.exit()
    assert.equal(code, 0)
    for (const flag of [
      '--broker',
      '--listen',
      '--persist',
      '--max-keys',
      '--node-id',
      '--auth',
      '--log-level',
      '--user',
      '--sat-token',
      '--username',
      '--password',
      '--admin',
      '--help',
    ]) {
      assert.ok(p.stdout.includes(flag), `--help mentions ${flag}`)
    }
  })

  it('refuses unknown options and bad values with exit code 2', async () => {
    const cases = [
      ['--bogus'],
      ['--listen', 'nope'],
      ['--log-level', 'loud'],
      ['--broker', 'mqtt://x', '--listen', '1'],
    ]
    await Promise.all(
      cases.map(async (args) => {
        const p = EmulatorProcess.spawn(args)
        const { code } = await p.exit()
        assert.equal(code, 2, args.join(' '))
        assert.match(p.stderr, /--help/)
      }),
    )
  })

  it('listens on host:port, prints one ready line with the URL, logs refusals, and stops cleanly on SIGINT', async () => {
    const port = await freePort()
    const p = await EmulatorProcess.start(['--listen', `127.0.0.1:${port}`, '--node-id', 'cli-node', '--max-keys', '1'])
    running.push(p)
    assert.equal(p.url, `mqtt://127.0.0.1:${port}`)
    assert.equal(p.stdout.split('\n').filter((l) => l.includes('ready')).length, 1)
    const c = await RawClient.connect(p.url)
    assert.ok((await c.request(Request.set('a', 'v'))).payload.equals(Reply.ok))
    assert.ok((await c.request(Request.set('b', 'v'))).payload.toString().startsWith('-ERR the quota'))
    await c.close()
    const { code } = await p.kill('SIGINT')
    assert.equal(code, 0)
    assert.match(p.stderr, /refused SET from .*QuotaExceeded/)
  })

  it('exits 1 with the reason when the broker it should use cannot be reached', async () => {
    const p = EmulatorProcess.spawn(['--broker', `mqtt://127.0.0.1:${await freePort()}`])
    const { code } = await p.exit()
    assert.equal(code, 1)
    assert.match(p.stderr, /cannot start: .*ECONNREFUSED/)
  })

  it('is the package bin, with a node shebang', () => {
    const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', '..', 'package.json'), 'utf8')) as {
      bin: Record<string, string>
    }
    assert.equal(pkg.bin['aio-statestore-emulator'], 'dist/src/emulator/cli/main.js')
    assert.match(
      readFileSync(join(__dirname, '..', '..', '..', 'src', 'emulator', 'cli', 'main.ts'), 'utf8'),
      /^#!\/usr\/bin\/env node\n/,
    )
  })
})

import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { main } from '../../../src/cli/main'
import { startEmulator } from '../../../src/emulator'
import { shownUrl } from '../../../src/diagnostics/log'
import { EmulatorProcess } from '../emulator/cli-process'

const SECRET = 'pa55-W0rd-never-shown'

/**
 * A `--users-file` line `name:` made a passwordless account without a warning; a scheme-less
 * `--broker user:pass@host` was echoed with its password (it parses as a URL of scheme `user:`,
 * which has no user info to cut).
 */
describe('security: empty passwords refused, none echoed', function () {
  this.timeout(30_000)
  let dir = ''
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'security-accounts-'))
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('cuts user info from text with no scheme too', () => {
    assert.equal(shownUrl(`alice:${SECRET}@host:1883`), 'host:1883')
    assert.equal(shownUrl(`alice:${SECRET}@10.0.0.1`), '10.0.0.1')
    assert.equal(shownUrl(`ftp:alice:${SECRET}@host`), 'host')
    assert.equal(shownUrl(`alice:p@ss@${SECRET}@host/x`), 'host/x')
    assert.equal(shownUrl(`mqtt://alice:p@ss@${SECRET}@bad host`), 'mqtt://bad host')
    assert.equal(shownUrl('host:1883'), 'host:1883')
  })

  it('the CLI: a scheme-less --broker user:pass@host is refused without its password', async () => {
    const stdin = new PassThrough()
    stdin.end()
    const stdout = new PassThrough().resume()
    const stderr = new PassThrough()
    let err = ''
    stderr.on('data', (d: Buffer) => (err += d.toString()))
    const code = await main(
      ['get', 'k', '--broker', `alice:${SECRET}@127.0.0.1:1`, '--timeout', '2000'],
      { stdin, stdout, stderr },
      new AbortController().signal,
    )
    assert.notEqual(code, 0)
    assert.match(err, /must start with mqtt:\/\//)
    assert.ok(!err.includes(SECRET), err)
  })

  it("the emulator's options: a scheme-less brokerUrl is refused without its password, an empty password too", async () => {
    await assert.rejects(
      startEmulator({ brokerUrl: `alice:${SECRET}@127.0.0.1:1`, logLevel: 'error' }),
      (err: Error) => {
        assert.match(err.message, /brokerUrl must start with mqtt:\/\//)
        assert.ok(!err.message.includes(SECRET), err.message)
        return true
      },
    )
    await assert.rejects(
      startEmulator({ inProcessOnly: true, brokerAuth: { users: { alice: SECRET, bob: '' } }, logLevel: 'error' }),
      /the password of user "bob" is empty/,
    )
  })

  it('the emulator CLI: a --users-file line "name:" stops the start naming its line; --broker user:pass@host shows no password', async () => {
    const usersFile = join(dir, 'users')
    writeFileSync(usersFile, `# who may connect\nalice:${SECRET}\n\nbob:\ncarol:${SECRET}\n`)
    const empty = EmulatorProcess.spawn(['--listen', '127.0.0.1:0', '--users-file', usersFile])
    assert.notEqual((await empty.exit()).code, 0)
    assert.match(empty.stderr, new RegExp(`--users-file ${usersFile}: line 4: the password of "bob" is empty`))
    assert.ok(!empty.stderr.includes(SECRET), empty.stderr)

    const schemeless = EmulatorProcess.spawn(['--broker', `alice:${SECRET}@127.0.0.1:1`])
    assert.notEqual((await schemeless.exit()).code, 0)
    assert.match(schemeless.stderr, /must start with mqtt:\/\//)
    assert.ok(!schemeless.stderr.includes(SECRET), schemeless.stderr)
  })
})

import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startBroker, startEmulator, type EmbeddedBroker } from '../../../src/emulator'
import { StateStoreClient } from '../../../src/client'
import { shownUrl } from '../../../src/diagnostics/log'
import { contextStore } from '../context/support'
import { EmulatorProcess } from '../emulator/cli-process'
import { until, eventually } from '../../support/wait'
import { AuthRuntime, RUNTIMES } from '../sidebar/runtime'

const SECRET = 's3cret-pw'

/**
 * Passwords in URLs were printed (the emulator's ready line, the CLI's errors, the context store's
 * "waiting for its broker mqtt://user:pw@…") and shown to read-only sidebar users; `--password`
 * and `--user name:pw` showed in `ps`. User info is now cut from every URL shown, and passwords
 * come from files or the environment (the flags still work, with a warning).
 */
describe('security: secrets stay out of logs, ready lines and the sidebar', function () {
  this.timeout(60_000)
  let dir: string
  let broker: EmbeddedBroker
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'security-secrets-'))
    broker = await startBroker({ port: 0, auth: { users: { alice: SECRET } } })
  })
  after(async () => {
    await broker?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('cuts user info from URLs and from text that only looks like one', () => {
    assert.equal(shownUrl(`mqtt://alice:${SECRET}@host:1883`), 'mqtt://host:1883')
    assert.equal(shownUrl('mqtts://alice@host'), 'mqtts://host')
    assert.equal(shownUrl('mqtt://host:1883'), 'mqtt://host:1883')
    assert.equal(shownUrl(`mqtt://alice:${SECRET}@bad host`), 'mqtt://bad host')
  })

  it('the emulator CLI warns of a password in a --broker URL, as of --password: ps shows both', async () => {
    const withUrl = await EmulatorProcess.start(['--broker', `mqtt://alice:${SECRET}@127.0.0.1:${broker.port}`])
    await withUrl.kill('SIGTERM')
    assert.match(
      withUrl.stderr,
      /warning: --broker with a password in its URL puts a password where every user of this machine sees it \(ps\)/,
    )
    assert.ok(!withUrl.stderr.includes(SECRET), withUrl.stderr)
  })

  it('the emulator CLI: its ready line has no password; --password-file and --users-file work; --password and --user warn', async () => {
    const passwordFile = join(dir, 'password')
    writeFileSync(passwordFile, `${SECRET}\n`)
    const withUrl = await EmulatorProcess.start([
      '--broker',
      `mqtt://alice:${SECRET}@127.0.0.1:${broker.port}`,
      '--log-level',
      'info',
    ])
    try {
      assert.match(withUrl.stdout, new RegExp(`ready on mqtt://127\\.0\\.0\\.1:${broker.port}`))
      assert.ok(
        !withUrl.stdout.includes(SECRET) && !withUrl.stderr.includes(SECRET),
        `${withUrl.stdout}${withUrl.stderr}`,
      )
    } finally {
      await withUrl.kill('SIGTERM')
    }
    const fromFile = await EmulatorProcess.start([
      '--broker',
      `mqtt://127.0.0.1:${broker.port}`,
      '--username',
      'alice',
      '--password-file',
      passwordFile,
    ])
    await fromFile.kill('SIGTERM')
    assert.equal(fromFile.stderr.includes('warning'), false)
    const onArgv = await EmulatorProcess.start([
      '--broker',
      `mqtt://127.0.0.1:${broker.port}`,
      '--username',
      'alice',
      '--password',
      SECRET,
    ])
    await onArgv.kill('SIGTERM')
    assert.match(
      onArgv.stderr,
      /warning: --password puts a password where every user of this machine sees it \(ps\); use --password-file/,
    )

    const usersFile = join(dir, 'users')
    writeFileSync(usersFile, `# who may connect\nbob:${SECRET}\n`)
    const embedded = await EmulatorProcess.start([
      '--listen',
      '127.0.0.1:0',
      '--users-file',
      usersFile,
      '--user',
      `carol:${SECRET}`,
    ])
    try {
      assert.match(embedded.stderr, /warning: --user puts a password/)
      for (const username of ['bob', 'carol']) {
        const c = new StateStoreClient({
          brokerUrl: embedded.url,
          clientId: `secrets-${username}`,
          username,
          password: SECRET,
        })
        try {
          await c.ready({ timeoutMs: 5000 })
        } finally {
          await c.close()
        }
      }
    } finally {
      await embedded.kill('SIGTERM')
    }
    const bad = EmulatorProcess.spawn(['--listen', '127.0.0.1:0', '--user', `nocolon${SECRET}`])
    assert.equal((await bad.kill('SIGCONT')).code, 2)
    assert.ok(!bad.stderr.includes(SECRET), bad.stderr)
  })

  it("the context store's waiting line names its broker without the password", async () => {
    const store = contextStore({
      broker: `mqtt://alice:${SECRET}@127.0.0.1:1`,
      prefix: 'secrets/',
      requestTimeout: 200,
    })
    void store.open().catch(() => {})
    try {
      await until(() => store.logs.some((l) => l.message.includes('waiting for its broker')), 'the waiting line')
      const lines = store.logs.map((l) => l.message).join('\n')
      assert.match(lines, /waiting for its broker mqtt:\/\/127\.0\.0\.1:1/)
      assert.ok(!lines.includes(SECRET), lines)
    } finally {
      await store.close()
    }
  })

  it('the sidebar shows a read-only user the broker without its user info', async () => {
    const emulator = await startEmulator({
      listen: { host: '127.0.0.1', port: 0 },
      brokerAuth: { users: { alice: SECRET } },
      logLevel: 'error',
    })
    const port = new URL(emulator.brokerUrl).port
    const flows = [
      { id: 'tab1', type: 'tab', label: 'secrets' },
      {
        id: 'cfg1',
        type: 'ss-config',
        name: 'remote',
        broker: `mqtt://alice:${SECRET}@127.0.0.1:${port}`,
        clientId: 'secrets-sidebar',
      },
      {
        id: 'watch1',
        type: 'ss-watch',
        z: 'tab1',
        store: 'cfg1',
        keys: 'secrets/watched',
        decode: 'auto',
        wires: [[]],
      },
    ]
    const rt = await AuthRuntime.start(RUNTIMES['Node-RED 5'], flows).catch(async (err) => {
      await emulator.stop()
      throw err
    })
    try {
      const reader = await rt.token('reader')
      const store = await eventually(
        async () =>
          (
            (await rt.request('GET', '/aio-statestore/stores', reader)).json as {
              stores: Array<{ id: string; broker: string }>
            }
          ).stores.find((s) => s.id === 'cfg1'),
        'the store',
        15_000,
      )
      assert.equal(store.broker, `mqtt://127.0.0.1:${port}`)
    } finally {
      await rt.stop()
      await emulator.stop()
    }
  })
})

/**
 * Authentication. mosquitto with a password file made by mosquitto_passwd (anonymous refused): the
 * emulator CLI connects with a user name and a password from its environment, clients and nodes with
 * theirs; a wrong or missing password is refused and reported as such. The emulator's embedded
 * broker with K8S-SAT: a token file accepted, a wrong token refused, and a token rotated while the
 * broker was away is read again and accepted on the reconnect (client and ss-config).
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { StateStoreClient, type ConnectionStatus } from '../../../src/client'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { freePort } from '../../../dev/ports'
import { Mosquitto, requireMosquitto } from '../../support/mosquitto'
import { ALL, helper, lastStatus, nextMessage, onTab, statuses } from '../../integration/nodes/support'
import { EmulatorCli } from '../../support/emulator-cli'
import { until } from '../../support/wait'
import { passwordFile } from './support'

const CLIENT_PASSWORD = 'al1ce-pa55word'
const SERVICE_PASSWORD = 'serv1ce-pa55word'

function refusal(c: StateStoreClient): Promise<ConnectionStatus> {
  return new Promise((resolve) => {
    const check = (s: ConnectionStatus) => {
      if (s.state === 'connected' || (s.state === 'disconnected' && s.reason)) {
        c.off('status', check)
        resolve(s)
      }
    }
    check(c.status)
    c.on('status', check)
  })
}

describe('security: username and password (mosquitto password_file)', function () {
  this.timeout(30_000)
  let dir: string
  let broker: Mosquitto
  let cli: EmulatorCli | null = null
  const clients: StateStoreClient[] = []

  before(async function () {
    requireMosquitto(this)
    dir = mkdtempSync(join(tmpdir(), 'security-auth-'))
    const file = passwordFile(dir, { alice: CLIENT_PASSWORD, service: SERVICE_PASSWORD })
    const port = await freePort()
    broker = await Mosquitto.start({
      port,
      extraConfig: [`listener ${port} 127.0.0.1`, 'allow_anonymous false', `password_file ${file}`],
    })
  })
  after(async () => {
    await helper.unload()
    await Promise.all(clients.map((c) => c.close()))
    await cli?.kill('SIGTERM')
    await broker?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  function client(options: Partial<ConstructorParameters<typeof StateStoreClient>[0]>, id: string): StateStoreClient {
    const c = new StateStoreClient({
      brokerUrl: broker.url,
      clientId: `${id}-${process.pid}`,
      reconnectMinMs: 200,
      reconnectMaxMs: 1000,
      ...options,
    })
    clients.push(c)
    return c
  }

  it('the emulator CLI refuses to start with a wrong password, without printing it', async () => {
    const wrong = 'not-the-service-password'
    await assert.rejects(
      (async () => {
        const run = await EmulatorCli.start(
          ['--broker', broker.url, '--username', 'service', '--log-level', 'debug'],
          5000,
          {
            AIO_STATESTORE_BROKER_PASSWORD: wrong,
          },
        )
        await run.kill()
      })(),
      (err: Error) => {
        assert.match(err.message, /exited \(1\)/)
        assert.match(err.message, /cannot start/)
        assert.ok(!err.message.includes(wrong), 'the password is not in its output')
        return true
      },
    )
  })

  it('serves clients that give the right password and refuses the others with authFailed', async () => {
    cli = await EmulatorCli.start(['--broker', broker.url, '--username', 'service', '--log-level', 'debug'], 10_000, {
      AIO_STATESTORE_BROKER_PASSWORD: SERVICE_PASSWORD,
    })
    const alice = client({ username: 'alice', password: CLIENT_PASSWORD }, 'alice')
    await alice.ready({ timeoutMs: 5000 })
    assert.equal((await alice.set('auth/k', 'v')).applied, true)

    for (const [what, options] of [
      ['a wrong password', { username: 'alice', password: 'guess' }],
      ['an unknown user', { username: 'mallory', password: CLIENT_PASSWORD }],
      ['no credentials', {}],
    ] as const) {
      const c = client(options, `refused-${what.replace(/ /g, '-')}`)
      const s = await refusal(c)
      assert.equal(s.state, 'disconnected', what)
      assert.equal(s.problem, 'authFailed', `${what}: ${JSON.stringify(s)}`)
      assert.match(s.reason ?? '', /not authorized|user name or password/i, what)
      await assert.rejects(c.get('auth/k', { timeoutMs: 200 }), { name: 'TimeoutError' })
    }
    const output = cli.stdout + cli.stderr
    for (const secret of [SERVICE_PASSWORD, CLIENT_PASSWORD])
      assert.ok(!output.includes(secret), 'no password in the emulator output')
  })

  it('ss-config: the node status says not authorized (mosquitto refuses a wrong password with 0x87); the right password connects', async () => {
    await helper.load(
      ALL,
      [
        { id: 'tab', type: 'tab', label: 'auth' },
        { id: 'cfgBad', type: 'ss-config', broker: broker.url, requestTimeout: '1000' },
        { id: 'cfgGood', type: 'ss-config', broker: broker.url, requestTimeout: '3000' },
        onTab({ id: 'bad', type: 'ss-get', store: 'cfgBad', key: 'auth/k', keyType: 'str', wires: [['badOut']] }),
        onTab({ id: 'badOut', type: 'helper' }),
        onTab({ id: 'good', type: 'ss-get', store: 'cfgGood', key: 'auth/k', keyType: 'str', wires: [['goodOut']] }),
        onTab({ id: 'goodOut', type: 'helper' }),
        onTab({ id: 'catcher', type: 'catch', scope: null, uncaught: false, wires: [['caught']] }),
        onTab({ id: 'caught', type: 'helper' }),
      ],
      { cfgBad: { username: 'alice', password: 'wrong' }, cfgGood: { username: 'alice', password: CLIENT_PASSWORD } },
    )
    const bad = helper.getNode('bad')
    await until(
      () => lastStatus(bad).text === 'node-red-contrib-aio-statestore/ss-config:common.status.notAuthorized',
      `a notAuthorized status: ${JSON.stringify(lastStatus(bad))}`,
    )
    assert.equal(lastStatus(bad).fill, 'red')
    assert.ok(!statuses(bad).some((s) => s.fill === 'green'))
    const caught = nextMessage(helper.getNode('caught'))
    bad.receive({ payload: 'x' })
    assert.equal(((await caught).error as { code: string }).code, 'NotAuthenticated')

    const good = helper.getNode('good')
    await until(() => lastStatus(good).fill === 'green', 'the right password to connect')
    const read = nextMessage(helper.getNode('goodOut'))
    good.receive({})
    assert.equal((await read).payload, 'v')
  })
})

describe('security: K8S-SAT with the embedded broker', function () {
  this.timeout(30_000)
  let dir: string
  let port: number
  let emulator: Emulator | null = null
  const clients: StateStoreClient[] = []

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'security-sat-'))
    port = await freePort()
  })
  after(async () => {
    await helper.unload()
    await Promise.all(clients.map((c) => c.close()))
    await emulator?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  const start = async (tokens: string[]) => {
    emulator = await startEmulator({
      listen: { host: '127.0.0.1', port },
      brokerAuth: { satTokens: tokens },
      logLevel: 'error',
    })
  }

  it('accepts the configured token, refuses another, and picks up a rotated token file on reconnect (client and ss-config)', async () => {
    await start(['token-one'])
    const tokenFile = join(dir, 'token')
    const wrongFile = join(dir, 'wrong')
    writeFileSync(tokenFile, 'token-one\n')
    writeFileSync(wrongFile, 'not-a-token\n')

    const c = new StateStoreClient({
      brokerUrl: emulator!.brokerUrl,
      clientId: `sat-${process.pid}`,
      satTokenFile: tokenFile,
      reconnectMinMs: 100,
      reconnectMaxMs: 300,
    })
    const refused = new StateStoreClient({
      brokerUrl: emulator!.brokerUrl,
      clientId: `sat-refused-${process.pid}`,
      satTokenFile: wrongFile,
      reconnectMinMs: 100,
      reconnectMaxMs: 300,
    })
    clients.push(c, refused)
    await c.ready({ timeoutMs: 5000 })
    assert.equal((await c.set('sat/k', 'one')).applied, true)
    const s = await refusal(refused)
    assert.equal(s.problem, 'authFailed', JSON.stringify(s))

    await helper.load(
      ALL,
      [
        { id: 'tab', type: 'tab', label: 'sat' },
        { id: 'cfg', type: 'ss-config', broker: emulator!.brokerUrl, requestTimeout: '3000' },
        onTab({ id: 'get', type: 'ss-get', store: 'cfg', key: 'sat/k', keyType: 'str', wires: [['out']] }),
        onTab({ id: 'out', type: 'helper' }),
      ],
      { cfg: { satTokenFile: tokenFile } },
    )
    const node = helper.getNode('get')
    await until(() => lastStatus(node).fill === 'green', 'ss-config to connect with the token file')

    // The broker goes away; the token is rotated; the broker comes back accepting only the new one.
    await emulator!.stop()
    await until(() => c.status.state !== 'connected' && lastStatus(node).fill !== 'green', 'the loss to be seen')
    writeFileSync(tokenFile, 'token-two\n')
    await start(['token-two'])
    await c.ready({ timeoutMs: 10_000 })
    assert.equal((await c.set('sat/k', 'two')).applied, true)
    await until(() => lastStatus(node).fill === 'green', 'ss-config to reconnect with the rotated token')
    const read = nextMessage(helper.getNode('out'))
    node.receive({})
    assert.equal((await read).payload, 'two')
  })
})

/**
 * Credentials stay out of flows and logs. A flow is deployed the way the editor deploys it (the
 * config nodes carrying their credentials inline), with right and wrong passwords and SAT tokens
 * so that connections succeed and fail. Then the flow the runtime exports holds none of them, and
 * nothing logged meanwhile does: the Node-RED log, every node's log/warn/error, node status texts,
 * the Catch msgs, the emulator's debug log, and whatever reached stdout and stderr.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { ALL, helper, lastStatus, nextMessage, onTab, type TestNode } from '../../integration/nodes/support'
import { ROOT } from '../../support/emulator-cli'
import { until } from '../../support/wait'

const SECRETS = {
  password: 'Pa55-w0rd-that-must-not-leak',
  wrongPassword: 'Wr0ng-pa55-that-must-not-leak-either',
  token: 'eyJhbGciOiJSUzI1NiJ9.sat-token-that-must-not-leak',
  wrongToken: 'eyJhbGciOiJSUzI1NiJ9.rejected-token-that-must-not-leak',
}

interface RuntimeNodes {
  setFlows(config: unknown[], type: string): Promise<unknown>
  getFlows(): { flows: unknown[] }
  getCredentials(id: string): Record<string, unknown> | undefined
}
type Spied = { getCalls(): Array<{ args: unknown[] }> }

describe('security: credentials never appear in flows or logs', function () {
  this.timeout(30_000)
  let dir: string
  let emulator: Emulator
  const emulatorLog: string[] = []
  let output = ''
  const writes: Array<[NodeJS.WriteStream, NodeJS.WriteStream['write']]> = []

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'security-creds-'))
    emulator = await startEmulator({
      listen: { host: '127.0.0.1', port: 0 },
      brokerAuth: { users: { alice: SECRETS.password }, satTokens: [SECRETS.token] },
      logLevel: 'debug',
      logger: (level, message) => emulatorLog.push(`${level} ${message}`),
    })
    // Everything written to stdout and stderr from here on is inspected (and still shown).
    for (const stream of [process.stdout, process.stderr]) {
      const original = stream.write
      writes.push([stream, original])
      stream.write = function (this: NodeJS.WriteStream, chunk: unknown, ...rest: unknown[]) {
        output += typeof chunk === 'string' ? chunk : Buffer.isBuffer(chunk) ? chunk.toString() : String(chunk)
        return (original as (...a: unknown[]) => boolean).call(this, chunk, ...rest)
      }
    }
  })
  after(async () => {
    for (const [stream, original] of writes) stream.write = original
    await helper.unload()
    await emulator?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('keeps passwords and tokens out of the exported flow, the runtime log, node messages and statuses', async () => {
    const tokenFile = join(dir, 'token')
    const wrongTokenFile = join(dir, 'wrong-token')
    writeFileSync(tokenFile, SECRETS.token)
    writeFileSync(wrongTokenFile, SECRETS.wrongToken)
    const configs: Array<[string, Record<string, string>]> = [
      ['cfgPassword', { username: 'alice', password: SECRETS.password }],
      ['cfgWrongPassword', { username: 'alice', password: SECRETS.wrongPassword }],
      ['cfgToken', { satTokenFile: tokenFile }],
      ['cfgWrongToken', { satTokenFile: wrongTokenFile }],
    ]
    const flow = (withCredentials: boolean) => [
      { id: 'tab', type: 'tab', label: 'credentials' },
      ...configs.map(([id, credentials]) => ({
        id,
        type: 'ss-config',
        broker: emulator.brokerUrl,
        requestTimeout: '800',
        ...(withCredentials ? { credentials } : {}),
      })),
      ...configs.map(([id]) =>
        onTab({ id: `get-${id}`, type: 'ss-get', store: id, key: 'creds/k', keyType: 'str', wires: [['out']] }),
      ),
      onTab({ id: 'out', type: 'helper' }),
      onTab({ id: 'catcher', type: 'catch', scope: null, uncaught: false, wires: [['caught']] }),
      onTab({ id: 'caught', type: 'helper' }),
    ]
    await helper.load(ALL, flow(false), Object.fromEntries(configs))
    const runtime = (helper as unknown as { _redNodes: RuntimeNodes })._redNodes
    // A deploy from the editor: credentials inline in the config nodes, as the editor sends them.
    await runtime.setFlows(flow(true), 'full')
    await until(() => configs.every(([id]) => helper.getNode(`get-${id}`) !== null), 'the redeployed nodes to start')

    const node = (id: string) => helper.getNode(`get-${id}`)
    await until(
      () => lastStatus(node('cfgPassword')).fill === 'green' && lastStatus(node('cfgToken')).fill === 'green',
      'the good credentials to connect',
    )
    // mosquitto refuses a wrong password with 0x87, which the status calls not authorized.
    await until(
      () =>
        /authFailed|notAuthorized/.test(String(lastStatus(node('cfgWrongPassword')).text)) &&
        /authFailed|notAuthorized/.test(String(lastStatus(node('cfgWrongToken')).text)),
      'the wrong ones to be refused',
    )
    const caught: Array<Record<string, unknown>> = []
    for (const [id] of configs) {
      const reply = nextMessage(helper.getNode(id.startsWith('cfgWrong') ? 'caught' : 'out'), 3000)
      node(id).receive({ payload: 'probe' })
      const msg = await reply
      if (id.startsWith('cfgWrong')) caught.push(msg)
    }

    // The exported flow: no credentials, only the settings.
    const exported = JSON.stringify(runtime.getFlows().flows)
    for (const [id] of configs) {
      const entry = (runtime.getFlows().flows as Array<Record<string, unknown>>).find((n) => n.id === id)!
      assert.equal(entry.credentials, undefined, `${id} exports no credentials`)
      assert.ok(runtime.getCredentials(id), `${id}'s credentials are kept apart by the runtime`)
    }
    // The editor's export copies node defaults, never credentials: none of them is a default (the built file).
    const html = readFileSync(join(ROOT, 'dist', 'nodes', 'ss-config.html'), 'utf8') // as the build writes it from nodes/config/schemas.ts
    const defaults = /defaults:\s*\{([\s\S]*?)\n\s{4}\},\n\s{4}credentials:/.exec(html)?.[1] ?? ''
    assert.ok(defaults.length > 0, 'ss-config.html declares its defaults and credentials')
    for (const name of ['username', 'password', 'satTokenFile'])
      assert.ok(!new RegExp(`\\b${name}\\s*:`).test(defaults), `${name} is a credential, not a default`)

    // Everything logged or shown.
    const spied = helper.getNode('out') as TestNode & { log: Spied; warn: Spied; error: Spied; debug: Spied }
    const nodeCalls = [spied.log, spied.warn, spied.error, spied.debug, spied.status].flatMap((s) =>
      s.getCalls().map((c) => c.args),
    )
    const runtimeLog = (helper as unknown as { log(): Spied })
      .log()
      .getCalls()
      .map((c) => c.args)
    const seen = [
      exported,
      JSON.stringify(nodeCalls, replacer),
      JSON.stringify(runtimeLog, replacer),
      JSON.stringify(caught, replacer),
      emulatorLog.join('\n'),
      output,
    ]
    assert.ok(nodeCalls.length > 0 && emulatorLog.length > 0, 'there was something to inspect')
    for (const [name, secret] of Object.entries(SECRETS)) {
      for (const [i, text] of seen.entries())
        assert.ok(
          !text.includes(secret),
          `the ${name} appears in ${['the exported flow', 'node log/warn/error/status', 'the runtime log', 'Catch msgs', 'the emulator log', 'stdout/stderr'][i]}`,
        )
    }
  })
})

/** Errors serialise to {} by default; their messages and causes are what could leak. */
function replacer(_key: string, value: unknown): unknown {
  if (value instanceof Error)
    return { name: value.name, message: value.message, stack: value.stack, cause: value.cause }
  if (typeof value === 'bigint' || typeof value === 'symbol' || typeof value === 'function') return String(value)
  return value
}

/**
 * What the CLI says when the store refuses a command, as a user in a shell meets it: a key that a
 * lock's fencing token protects (the line it prints is run as printed and works), and a key the
 * broker's policy refuses (named in the line).
 */
import assert from 'node:assert/strict'
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { spawn } from 'node:child_process'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { FROM_SOURCE, runCli, withoutAioEnv } from './run'

/** Runs a shell line with `aio-statestore` on the PATH (from source), connected by the SDKs' environment. */
function shell(line: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('sh', ['-c', line], { env, stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.once('close', (code) => resolve({ code, stderr }))
  })
}

describe('aio-statestore: refusals say what to do and name the key', function () {
  this.timeout(60_000)
  let emulator: Emulator
  let dir: string
  let env: NodeJS.ProcessEnv
  before(async () => {
    emulator = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, logLevel: 'error' })
    dir = mkdtempSync(join(tmpdir(), 'cli-hints-'))
    const bin = join(dir, 'aio-statestore')
    writeFileSync(
      bin,
      `#!/bin/sh\nexec ${[FROM_SOURCE.file, ...FROM_SOURCE.args].map((w) => `'${w}'`).join(' ')} "$@"\n`,
    )
    chmodSync(bin, 0o755)
    const url = new URL(emulator.brokerUrl)
    env = withoutAioEnv({
      PATH: `${dir}:${process.env.PATH ?? ''}`,
      AIO_BROKER_HOSTNAME: url.hostname,
      AIO_BROKER_TCP_PORT: url.port,
      AIO_MQTT_USE_TLS: 'false',
    })
  })
  after(async () => {
    await emulator?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('a fenced key: del fails with the command that works, and that command, run as printed, deletes it', async () => {
    const fenced = await shell(
      `aio-statestore lock tickets-lock -- sh -c 'aio-statestore set "tickets/count" 7 --fencing-token "$AIO_STATESTORE_FENCING_TOKEN"'`,
      env,
    )
    assert.equal(fenced.code, 0, fenced.stderr)
    const refused = await runCli(FROM_SOURCE, ['del', 'tickets/count'], { env })
    assert.equal(refused.code, 3)
    assert.match(refused.stderr, /a fencing token is required/)
    const printed = /^\s+(aio-statestore lock tickets\/count\.lock -- .+)$/m.exec(refused.stderr)
    assert.ok(printed, `a command to run: ${refused.stderr}`)
    const ran = await shell(printed[1]!, env)
    assert.equal(ran.code, 0, ran.stderr)
    assert.equal((await runCli(FROM_SOURCE, ['get', 'tickets/count'], { env })).code, 1, 'deleted')
  })

  it('a key the policy refuses is named in the error', async () => {
    const auth = join(dir, 'auth.yaml')
    writeFileSync(
      auth,
      `kind: BrokerAuthorization\napiVersion: mqttbroker.iotoperations.azure.com/v1\nmetadata: { name: p }\nspec:\n  authorizationPolicies:\n    rules:\n      - principals: { clientIds: [w] }\n        brokerResources: [{ method: Connect }, { method: Subscribe, topics: ["clients/{principal.clientId}/#"] }]\n        stateStoreResources:\n          - { method: ReadWrite, keys: ["mine/*"] }\n`,
    )
    const guarded = await startEmulator({
      listen: { host: '127.0.0.1', port: 0 },
      authorizationFile: auth,
      logLevel: 'silent',
    })
    try {
      const r = await runCli(FROM_SOURCE, ['set', 'theirs/x', 'v', '--broker', guarded.brokerUrl], {
        env: withoutAioEnv({ AIO_MQTT_CLIENT_ID: 'w' }),
      })
      assert.equal(r.code, 3)
      assert.match(r.stderr, /not authorized for the key "theirs\/x"/)
    } finally {
      await guarded.stop()
    }
  })
})

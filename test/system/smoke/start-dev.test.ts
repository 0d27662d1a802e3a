// `npm start -- --dev DIR` (scripts/start.mjs with scripts/start-dev-layout.mjs): the editor in the AIO
// SDKs' dev layout. The seeded config node, whose broker is ${AIO_STATESTORE_URL}, connects over the
// TLS + SAT listener with DIR/.env's CA and token; the CLI with only DIR/.env exported reaches the
// same store; Ctrl-C (SIGTERM) stops it all.
import { strict as assert } from 'node:assert'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { nodeBinary, repoRoot } from './node-red'
import { FROM_SOURCE, runCli, withoutAioEnv } from '../cli/run'
import { readDotEnv } from '../../support/dev-env'
import { scaled } from '../../support/deadline'

describe("npm start -- --dev DIR: the editor in the SDKs' dev layout", function () {
  this.timeout(60_000)
  let dir = ''
  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('connects the seeded flows over TLS + SAT, and the CLI with .env reaches the same store', async () => {
    dir = mkdtempSync(join(tmpdir(), 'aio-ss-start-dev-'))
    const env = {
      ...withoutAioEnv(),
      PORT: '0',
      MQTT_PORT: '0',
      MQTT_X509_PORT: '0',
      MQTT_SAT_PORT: '0',
      NODE_RED_USER_DIR: join(dir, 'user'),
      EMULATOR_LOG_LEVEL: 'warn',
    }
    const child = spawn(nodeBinary(), [join(repoRoot, 'scripts', 'start.mjs'), '--dev', join(dir, 'dev')], {
      cwd: repoRoot,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout.on('data', (d: Buffer) => (output += d))
    child.stderr.on('data', (d: Buffer) => (output += d))
    const exit = new Promise<number | null>((r) => child.once('exit', (code) => r(code)))
    try {
      const deadline = Date.now() + scaled(45_000)
      while (!(/editor ready at/.test(output) && /connected to the state store as/.test(output))) {
        if (child.exitCode !== null || Date.now() > deadline) assert.fail(`not ready and connected:\n${output}`)
        await new Promise((r) => setTimeout(r, 100))
      }
      const editor = /editor ready at (http:\S+)/.exec(output)![1]!
      const sat = /TLS \+ SAT at mqtts:\/\/127\.0\.0\.1:(\d+)/.exec(output)![1]!
      const resolved = (await (
        await fetch(`${editor}/ss-config/broker?value=${encodeURIComponent('${AIO_STATESTORE_URL}')}`)
      ).json()) as { resolved: string }
      assert.equal(
        resolved.resolved,
        `mqtts://localhost:${sat}`,
        "the seeded config nodes' broker is the TLS + SAT listener",
      )
      const view = (await (await fetch(`${editor}/ss-config/environment`)).json()) as Record<string, string>
      assert.equal(view.satTokenFile, join(dir, 'dev', '.session', 'token.txt'))
      const dotEnv = readDotEnv(join(dir, 'dev', '.env'))
      assert.equal(dotEnv.AIO_BROKER_TCP_PORT, sat)
      assert.equal((await runCli(FROM_SOURCE, ['set', 'start-dev/k', 'v'], { env: withoutAioEnv(dotEnv) })).code, 0)
    } finally {
      child.kill('SIGTERM')
      assert.equal(await exit, 0, output)
    }
  })
})

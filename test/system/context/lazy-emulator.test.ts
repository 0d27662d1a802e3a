/**
 * A context store loads the emulator's module graph (aedes among it) only when it embeds one: a
 * store on a broker of its own opens without it. Each case runs in a fresh process, whose module
 * cache holds only what opening the store loaded.
 */
import { strict as assert } from 'node:assert'
import { execFile } from 'node:child_process'
import { resolve } from 'node:path'
import { promisify } from 'node:util'

const ROOT = resolve(__dirname, '..', '..', '..')

/** The emulator's modules loaded in a fresh process once a store with `config` has opened and closed. */
async function emulatorModulesLoadedBy(config: Record<string, unknown>): Promise<string[]> {
  const script = `
    const context = require('./src/context/index.ts')
    const store = context(${JSON.stringify(config)})
    store.open().then(() => store.close()).then(async () => {
      const loaded = Object.keys(require.cache).filter((f) => f.includes('/src/emulator/')).map((f) => f.slice(f.indexOf('/src/emulator/') + 1))
      if (loaded.length > 0) await require('./src/emulator/embedded.ts').stopEmbedded()
      process.stdout.write('\\nloaded: ' + JSON.stringify(loaded) + '\\n')
      process.exit(0)
    })`
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '-e', script], { cwd: ROOT })
  // The store logs to stdout too (its load summary): the answer is the line marked for it.
  const line = stdout.split('\n').find((l) => l.startsWith('loaded: '))
  assert.ok(line, `the child's answer in its output:\n${stdout}`)
  return JSON.parse(line.slice('loaded: '.length)) as string[]
}

describe('context store: the emulator is loaded only to embed one', function () {
  // A fresh process compiles TypeScript from scratch: on a busy machine that takes a while.
  this.timeout(300_000)

  it('a store on its own broker opens without loading any emulator module', async () => {
    // Nothing listens on port 9: the store opens, waits its request timeout for the broker, and closes.
    assert.deepEqual(await emulatorModulesLoadedBy({ broker: 'mqtt://127.0.0.1:9', requestTimeout: 50 }), [])
  })

  it('a store that embeds an emulator loads it (the check sees the modules it looks for)', async () => {
    const loaded = await emulatorModulesLoadedBy({ embedded: true, requestTimeout: 5000 })
    assert.ok(
      loaded.includes('src/emulator/embedded.ts') && loaded.includes('src/emulator/broker/broker.ts'),
      loaded.join(', '),
    )
  })
})

/**
 * A flood of msgs through *set key* (default settings, persisted keys) while the emulator process is
 * killed with kill -9 and started again on its file ~3 s later, its broker (mosquitto) staying up.
 * Every msg made while the service was away waits for it within its timeout and is written; a msg
 * whose request the killed process took with it fails to Catch once its timeout is over, saying in
 * `msg.error.cause.written` whether it was written, and the store agrees with every answer.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { StateStoreClient } from '../../../src/client'
import { scaled } from '../../support/deadline'
import { EmulatorCli } from '../../support/emulator-cli'
import { Mosquitto, requireMosquitto } from '../../support/mosquitto'
import { sleep, until } from '../../support/wait'
import { ALL, TAB, helper, onTab, redModule } from '../../integration/nodes/support'

const FUNCTION = redModule('@node-red/nodes/core/function/10-function.js')
const FLOOD = 6000
/** msgs per 20 ms tick of the Function node's interval: 2,500 msgs/s, more than a busy emulator syncing its file takes, so requests are out when it dies. */
const PER_TICK = 50

describe('nodes: a flood into set key with the emulator killed (kill -9) and back after ~3 s', function () {
  let broker: Mosquitto
  let dir: string
  let cli: EmulatorCli | null = null

  before(async function () {
    requireMosquitto(this)
    broker = await Mosquitto.start()
    dir = mkdtempSync(join(tmpdir(), 'outage-flood-'))
  })
  after(async () => {
    await helper.unload()
    await cli?.kill()
    await broker?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('writes every msg whose wait did not outlast its timeout; each failed msg says whether it was written, as the store does', async function () {
    const args = ['--broker', broker.url, '--persist', join(dir, 'store.aof'), '--log-level', 'warn']
    cli = await EmulatorCli.start(args)
    const prefix = `flood-${process.pid}`
    const func = [
      'let i = 0;',
      'const timer = setInterval(() => {',
      `  for (let k = 0; k < ${PER_TICK} && i < ${FLOOD}; k++, i++) node.send({ topic: '${prefix}/' + i, payload: 'value-' + i });`,
      `  if (i >= ${FLOOD}) clearInterval(timer);`,
      '}, 20);',
      'return null;',
    ].join('\n')
    await helper.load(
      [...ALL, FUNCTION],
      [
        TAB,
        { id: 'cfg', type: 'ss-config', name: 'store', broker: broker.url },
        onTab({ id: 'flood', type: 'function', func, outputs: 1, wires: [['set']] }),
        onTab({ id: 'set', type: 'ss-set', store: 'cfg', persist: true, wires: [['written']] }),
        onTab({ id: 'written', type: 'helper' }),
        onTab({ id: 'catcher', type: 'catch', scope: null, uncaught: false, wires: [['caught']] }),
        onTab({ id: 'caught', type: 'helper' }),
      ],
    )
    const written = new Set<string>()
    const failed = new Map<string, { code: string; written: unknown }>()
    helper.getNode('written').on('input', (msg: Record<string, unknown>) => written.add(String(msg.topic)))
    helper.getNode('caught').on('input', (msg: Record<string, unknown>) => {
      const error = msg.error as { code: string; cause?: { written?: unknown } }
      failed.set(String(msg.topic), { code: error.code, written: error.cause?.written })
    })
    helper.getNode('flood').receive({})

    await until(() => written.size >= 300, 'the first msgs written', 60_000)
    await cli.kill('SIGKILL')
    const killedAt = written.size
    await sleep(3000)
    cli = await EmulatorCli.start(args)
    await until(() => written.size + failed.size === FLOOD, `all ${FLOOD} msgs out of set key or at Catch`, 120_000, 50)

    const reader = new StateStoreClient({ brokerUrl: broker.url, clientId: `${prefix}-reader` })
    try {
      await reader.ready({ timeoutMs: scaled(5000) })
      const held = new Map<string, string | null>()
      for (let i = 0; i < FLOOD; i++) {
        const key = `${prefix}/${i}`
        held.set(key, (await reader.get(key)).value?.toString() ?? null)
      }
      const wrong: string[] = []
      for (const key of written)
        if (held.get(key) !== `value-${key.split('/')[1]}`)
          wrong.push(`${key} out of set key, the store holds ${held.get(key)}`)
      for (const [key, f] of failed) {
        const holds = held.get(key) === `value-${key.split('/')[1]}`
        if (f.written !== true && f.written !== false)
          wrong.push(`${key} failed ${f.code} without saying whether it was written (${String(f.written)})`)
        else if (f.written !== holds)
          wrong.push(`${key} failed ${f.code} saying written ${f.written}, the store ${holds ? 'holds' : 'lacks'} it`)
      }
      assert.deepEqual(wrong.slice(0, 10), [], `${wrong.length} msg(s) whose outcome the store contradicts`)
      // What fails is only what the killed process took with it: no wait for the service outlasted its timeout.
      const codes = [...new Set([...failed.values()].map((f) => f.code))]
      assert.ok(
        codes.every((c) => c === 'Timeout'),
        `only requests taken down with the process time out: ${codes.join(', ')}`,
      )
      assert.ok(written.size > killedAt, 'msgs made while the service was away were written once it was back')
      const answers = [...failed.values()].map((f) => String(f.written))
      console.log(
        `      (${written.size} written, ${failed.size} failed: ${answers.filter((w) => w === 'true').length} of them written, ${answers.filter((w) => w === 'false').length} not)`,
      )
    } finally {
      await reader.close()
    }
  })
})

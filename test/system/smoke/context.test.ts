// The context store as users get it: the packed package installed into a Node-RED 5 and a Node-RED
// 4 user directory, `contextStorage` in settings.js requiring `node-red-contrib-aio-statestore/context`,
// both runtimes on one emulator. Function and Change nodes use the store; everything is observed
// through the admin API and the editor's websocket, as a user would see it.
import { strict as assert } from 'node:assert'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { StateStoreClient } from '../../../src/client'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { freePort } from '../../../dev/ports'
import { eventually } from '../../support/wait'
import { TcpRelay } from '../../support/relay'
import { readIndex } from '../context/support'
import { debugValue, installIntoUserDir, NodeRedProcess, pack, RED_JS, writeSettings, type Comms } from './node-red'

const STORE = 'statestore'
const PREFIX = 'smoke/context/'

interface Runtime {
  name: string
  red: NodeRedProcess
  comms: Comms
}

type ContextListing = Record<string, Record<string, { msg: string; format: string }>>

function settingsFile(userDir: string, brokerUrl: string): string {
  const file = join(userDir, 'settings.js')
  // In the user directory, so `require` resolves the installed package exactly as a user's settings.js does.
  writeSettings(
    file,
    `  contextStorage: {
    default: { module: 'memory' },
    ${STORE}: { module: require('node-red-contrib-aio-statestore/context'), config: { broker: ${JSON.stringify(brokerUrl)}, prefix: ${JSON.stringify(PREFIX)}, requestTimeout: 5000 } },
  },
`,
  )
  return file
}

/** The flows of one runtime: a counter and a burst (Function nodes), a Change node reading, a probe that watches a key with sync gets. */
function flows(name: string): unknown[] {
  const tab = `tab-${name}`
  const id = (s: string) => `${name}-${s}`
  const fn = (s: string, func: string, extra: Record<string, unknown> = {}) => ({
    id: id(s),
    type: 'function',
    z: tab,
    name: s,
    func,
    outputs: 1,
    initialize: '',
    finalize: '',
    libs: [],
    wires: [[id('out')]],
    ...extra,
  })
  const inject = (s: string, target: string, payload = '') => ({
    id: id(s),
    type: 'inject',
    z: tab,
    name: s,
    props: [{ p: 'payload' }],
    payload,
    payloadType: 'str',
    repeat: '',
    once: false,
    wires: [[id(target)]],
  })
  return [
    { id: tab, type: 'tab', label: `runtime ${name}` },
    inject('count', 'add-one'),
    fn(
      'add-one',
      `const n = (global.get('counter', '${STORE}') || 0) + 1\nglobal.set('counter', n, '${STORE}')\nflow.set('mine', n, '${STORE}')\nmsg.payload = n\nreturn msg`,
    ),
    inject('burst', 'thousand'),
    fn(
      'thousand',
      `for (let i = 0; i < 1000; i++) global.set(i % 2 ? 'only-${name}-' + i : 'both-' + i, { i, by: '${name}' }, '${STORE}')\nmsg.payload = 'burst'\nreturn msg`,
    ),
    inject('probe', 'stamp'),
    fn('stamp', `global.set('probe', { t: Date.now() }, '${STORE}')\nreturn null`),
    inject('drop', 'delete'),
    fn('delete', `global.set('doomed', undefined, '${STORE}')\nreturn null`),
    inject('doom', 'create'),
    fn('create', `global.set('doomed', 'here', '${STORE}')\nreturn null`),
    // A sync global.get polled every millisecond: when the probe's value changes, how long after it was set.
    fn('watcher', 'return msg', {
      initialize: `let last = null\ncontext.set('timer', setInterval(() => {\n  const v = global.get('probe', '${STORE}')\n  if (v && v.t !== last) { last = v.t; node.send({ payload: { delay: Date.now() - v.t } }) }\n}, 1))`,
      finalize: `clearInterval(context.get('timer'))`,
    }),
    inject('read', 'change'),
    {
      id: id('change'),
      type: 'change',
      z: tab,
      name: 'read',
      rules: [{ t: 'set', p: 'payload', pt: 'msg', to: `#:(${STORE})::counter`, tot: 'global' }],
      wires: [[id('out')]],
    },
    {
      id: id('out'),
      type: 'debug',
      z: tab,
      name: 'out',
      active: true,
      tosidebar: true,
      console: false,
      complete: 'payload',
      targetType: 'msg',
      wires: [],
    },
  ]
}

describe('smoke: the context store in real Node-RED 5 and 4 runtimes sharing one emulator', function () {
  this.timeout(60_000)
  let work = ''
  let emulator: Emulator | null = null
  const runtimes: Runtime[] = []

  before(async function () {
    this.timeout(240_000)
    work = mkdtempSync(join(tmpdir(), 'aio-ss-context-'))
    const tarball = await pack(work)
    emulator = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, logLevel: 'warn' })
    const majors = [
      { name: 'nr5', redJs: RED_JS[5] },
      { name: 'nr4', redJs: RED_JS[4] },
    ]
    await Promise.all(majors.map(({ name }) => installIntoUserDir(join(work, name), tarball)))
    for (const { name, redJs } of majors) {
      const userDir = join(work, name)
      const red = new NodeRedProcess(redJs, userDir, await freePort(), settingsFile(userDir, emulator.brokerUrl))
      await red.start(60_000)
      const comms = await red.comms()
      await red.deploy(flows(name), comms)
      runtimes.push({ name, red, comms })
    }
  })

  after(async function () {
    this.timeout(30_000)
    for (const r of runtimes.splice(0)) {
      r.comms.close()
      await r.red.stop()
    }
    await emulator?.stop()
    if (work) rmSync(work, { recursive: true, force: true })
  })

  const [nr5, nr4] = [() => runtimes[0]!, () => runtimes[1]!]
  const outputs = (r: Runtime) =>
    r.comms.debug.filter((m) => m.id === `${r.name}-out` && m.level === undefined).map(debugValue)
  const global = (r: Runtime) => r.red.getJson<ContextListing>('/context/global').then((c) => c[STORE] ?? {})

  it('loads the store in both runtimes from settings.js, with no warning or error', async function () {
    for (const r of runtimes) {
      assert.match(
        r.red.log,
        /Context store\s*: 'statestore' \[module=node-red-contrib-aio-statestore\/context\]/,
        r.red.log,
      )
      const problems = r.red.log
        .split('\n')
        .filter((l) => /\[(warn|error)\]/.test(l) && !/Encrypted credentials not found|Projects disabled/.test(l))
      assert.deepEqual(problems, [], r.red.log)
    }
  })

  it('Function nodes in both count on one global counter; a Change node reads it; the Context Data API lists it', async function () {
    await nr5().red.inject('nr5-count')
    await eventually(async () => (outputs(nr5()).includes(1) ? true : undefined), 'nr5 to count', 20_000)
    await eventually(
      async () => ((await global(nr4())).counter?.msg === '1' ? true : undefined),
      'nr4 to see the counter',
      20_000,
    )
    await nr4().red.inject('nr4-count')
    await eventually(async () => (outputs(nr4()).includes(2) ? true : undefined), 'nr4 to count on', 20_000)
    await eventually(
      async () => ((await global(nr5())).counter?.msg === '2' ? true : undefined),
      'nr5 to see 2',
      20_000,
    )
    await nr5().red.inject('nr5-read')
    await eventually(
      async () => (outputs(nr5()).filter((v) => v === 2).length >= 1 ? true : undefined),
      'the Change node to read 2',
      20_000,
    )
    const flow = await nr5().red.getJson<ContextListing>('/context/flow/tab-nr5')
    assert.equal(flow[STORE]?.mine?.msg, '1')
  })

  it('a global.set in one runtime reaches a synchronous global.get in the other (delay measured, not asserted)', async function () {
    const delays: number[] = []
    for (let probe = 0; probe < 20; probe++) {
      const from = outputs(nr4()).length
      await fetch(`${nr5().red.url}/inject/nr5-probe`, { method: 'POST' })
      const seen = await eventually(
        async () => {
          const fresh = outputs(nr4())
            .slice(from)
            .find((v) => typeof v === 'object' && v !== null && 'delay' in v) as { delay: number } | undefined
          return fresh
        },
        'the probe in nr4',
        20_000,
      )
      delays.push(seen.delay)
      await new Promise((r) => setTimeout(r, 20))
    }
    delays.sort((a, b) => a - b)
    console.log(
      `      (global.set in Node-RED 5 → sync global.get in Node-RED 4: median ${delays[10]} ms, max ${delays[19]} ms over 20 probes; 1 ms polling)`,
    )
  })

  it('keys agree in both after 1,000 concurrent sets from each; the index lists them too', async function () {
    await Promise.all([nr5().red.inject('nr5-burst'), nr4().red.inject('nr4-burst')])
    const expected = 500 + 500 + 500
    const [a, b] = await eventually(
      async () => {
        const [a, b] = await Promise.all([global(nr5()), global(nr4())])
        const count = (c: Record<string, unknown>) => Object.keys(c).filter((k) => /^(both|only)-/.test(k)).length
        return count(a) === expected && count(b) === expected ? [a, b] : undefined
      },
      'both to list every key',
      40_000,
    )
    assert.deepEqual(Object.keys(a).sort(), Object.keys(b).sort())
    const client = new StateStoreClient({ brokerUrl: emulator!.brokerUrl, clientId: 'smoke-context-reader' })
    try {
      const index = await eventually(
        async () => {
          const listed = (await readIndex(client, PREFIX)).global ?? []
          return listed.length === Object.keys(a).length ? listed : undefined
        },
        'the index',
        20_000,
      )
      assert.deepEqual(index.sort(), Object.keys(a).sort())
    } finally {
      await client.close()
    }
    for (const key of Object.keys(a).filter((k) => k.startsWith('both-'))) assert.equal(a[key]!.msg, b[key]!.msg, key)
  })

  it('a deletion in one runtime disappears from the other’s cache', async function () {
    await nr4().red.inject('nr4-doom')
    await eventually(async () => ((await global(nr5())).doomed ? true : undefined), 'nr5 to see the key', 20_000)
    await nr4().red.inject('nr4-drop')
    await eventually(async () => ((await global(nr5())).doomed ? undefined : true), 'nr5 to drop it', 20_000)
  })

  it('a restart keeps the values (Node-RED 5 stopped and started again)', async function () {
    const before = await global(nr5())
    const r = nr5()
    r.comms.close()
    await r.red.stop()
    await r.red.start(60_000)
    r.comms = await r.red.comms()
    const after = await global(r)
    assert.equal(after.counter?.msg, before.counter?.msg)
    assert.deepEqual(Object.keys(after).sort(), Object.keys(before).sort())
  })

  it('Node-RED 5 started while its broker is down: it starts, context use fails clearly, then the store loads and nothing stored was overwritten', async function () {
    const r = nr5()
    const before = await global(r)
    assert.ok(before.counter, 'a counter is stored')
    const relay = await TcpRelay.start(emulator!.brokerUrl)
    try {
      relay.refusing = true
      r.comms.close()
      await r.red.stop()
      const logFrom = r.red.log.length
      settingsFile(r.red.userDir, relay.url)
      await r.red.start(60_000)
      r.comms = await r.red.comms()
      const log = () => r.red.log.slice(logFrom)
      assert.match(log(), /waiting for its broker mqtt:\/\/127\.0\.0\.1:\d+/)
      // a Function node's synchronous global.get throws a clear error instead of reading undefined (and counting from 1)
      await r.red.inject('nr5-count')
      await eventually(
        async () =>
          /\[error\] \[function:add-one\].*not loaded yet: waiting for its broker/.test(log()) ? true : undefined,
        'the Function node to report the error',
        20_000,
      )
      relay.refusing = false
      await eventually(
        async () => (/connected to mqtt:\/\/127\.0\.0\.1:\d+; the context is loaded/.test(log()) ? true : undefined),
        'the store to load',
        30_000,
      )
      const after = await global(r)
      assert.equal(after.counter?.msg, before.counter?.msg, 'the stored counter is untouched')
      assert.deepEqual(Object.keys(after).sort(), Object.keys(before).sort())
      // and the flows use it from now on
      await r.red.inject('nr5-count')
      const next = String(Number(before.counter.msg) + 1)
      await eventually(
        async () => ((await global(r)).counter?.msg === next ? true : undefined),
        'the counter to go on',
        20_000,
      )
    } finally {
      await r.red.stop() // after() closes the comms
      await relay.stop()
    }
  })
})

import assert from 'node:assert/strict'
import { mkdtempSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { spawnSync } from 'node:child_process'
import { freePort } from '../../../dev/ports'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { Comms, debugValue, nodeBinary, NodeRedProcess, RED_JS, repoRoot, writeSettings } from '../smoke/node-red'

const PASSWORDS = { global: 'global-store-password-1', tabA: 'tab-a-store-password-2' }

/**
 * Walks everything reachable by reading properties (own and inherited, getters included, nothing
 * called) from the values a Function node gets: the store, a lock, a read's result and a caught
 * error. It reports the paths where a password or a broker (an object with `publish` and
 * `subscribe`, as aedes and an MQTT client have) turns up.
 */
const WALK = `
const store = aio.stateStore('global store');
const roots = { store, lock: await store.lock('walk/lock'), got: await store.get('walk/k') };
try { aio.stateStore('nothing by this name'); } catch (err) { roots.error = err; }
const secrets = ${JSON.stringify(Object.values(PASSWORDS))};
const seen = new Set();
const found = [];
const queue = [[roots, 'roots']];
while (queue.length > 0 && seen.size < 50000) {
  const [value, path] = queue.shift();
  if (typeof value === 'string') { if (secrets.some((s) => value.includes(s))) found.push(path); continue; }
  if (value === null || (typeof value !== 'object' && typeof value !== 'function') || seen.has(value)) continue;
  seen.add(value);
  let isBroker = false;
  try { isBroker = typeof value.publish === 'function' && typeof value.subscribe === 'function'; } catch {}
  if (isBroker) found.push(path + ' (a broker or MQTT client)');
  let names = [];
  try { names = Reflect.ownKeys(value); } catch {}
  for (const name of names) {
    let child;
    try { child = value[name]; } catch { continue; }
    queue.push([child, path + '.' + String(name)]);
  }
  let proto = null;
  try { proto = Object.getPrototypeOf(value); } catch {}
  queue.push([proto, path + '.__proto__']);
}
return { payload: { found: found.slice(0, 20), walked: seen.size } };
`

/** The names on a bare Node.js's global object, in the Node.js the runtime runs on. */
function nodeGlobals(): string[] {
  const listed = spawnSync(
    nodeBinary(),
    ['-e', 'console.log(JSON.stringify(Reflect.ownKeys(globalThis).map(String)))'],
    { encoding: 'utf8' },
  )
  return JSON.parse(listed.stdout) as string[]
}

/**
 * The same walk, deeper: from the package's exports too, through Map and Set entries, and through
 * every other realm's Function constructor a function of ours leads to (`f.constructor('return
 * globalThis')()`, the host's global object). It reports where tab A's connection (its config
 * node's id), its password or a broker turns up. Node.js's `process` is not walked: it leads to
 * every loaded module, Node-RED's included, which is Node-RED's Function node's own boundary.
 */
const ESCAPE = `
const NODE_GLOBALS = ${JSON.stringify(nodeGlobals())};
const store = aio.stateStore('global store');
const roots = { aio, store, lock: await store.lock('walk/lock'), got: await store.get('walk/k') };
try { aio.stateStore('nothing by this name'); } catch (err) { roots.error = err; }
const secrets = ${JSON.stringify(Object.values(PASSWORDS))};
const seen = new Set();
const found = [];
const globals = new Set();
const queue = [[roots, 'roots']];
for (let next = 0; next < queue.length && seen.size < 50000; next++) {
  const [value, path] = queue[next];
  if (typeof value === 'string') { if (secrets.some((s) => value.includes(s))) found.push(path); continue; }
  if (value === null || (typeof value !== 'object' && typeof value !== 'function') || seen.has(value)) continue;
  seen.add(value);
  let probe = {};
  try { probe = { id: value.id, scope: value.scope, publish: value.publish, subscribe: value.subscribe, versions: value.versions, binding: value.binding }; } catch {}
  if (typeof probe.binding === 'function' && probe.versions) continue;
  if (probe.id === 'cfg-a' || probe.scope === 'tab-a') found.push(path + ' (the connection of tab A)');
  if (typeof probe.publish === 'function' && typeof probe.subscribe === 'function') found.push(path + ' (a broker or MQTT client)');
  if (typeof value === 'function' && value !== Function) {
    let isConstructor = false;
    try { isConstructor = value.constructor === value; } catch {}
    if (isConstructor) {
      try { const g = value('return globalThis')(); globals.add(g); queue.push([g, path + '("return globalThis")()']); } catch {}
    }
  }
  try { if (value instanceof Map || Object.prototype.toString.call(value) === '[object Map]') for (const [k, v] of Map.prototype.entries.call(value)) { queue.push([k, path + '.key']); queue.push([v, path + '.get(' + String(k) + ')']); } } catch {}
  try { if (Object.prototype.toString.call(value) === '[object Set]') for (const v of Set.prototype.values.call(value)) queue.push([v, path + '.has']); } catch {}
  let names = [];
  try { names = Reflect.ownKeys(value); } catch {}
  for (const name of names) {
    let child;
    // Node.js's own globals are not walked: some are lazy, and reading them from a vm context aborts the process (DOMException).
    if (globals.has(value) && NODE_GLOBALS.includes(String(name))) continue;
    try { child = value[name]; } catch { continue; }
    // A getter read off its prototype may give a rejected promise: handled, so it cannot stop the runtime.
    try { if (Object.prototype.toString.call(child) === '[object Promise]') Promise.prototype.catch.call(child, () => {}); } catch {}
    queue.push([child, path + '.' + String(name)]);
  }
  let proto = null;
  try { proto = Object.getPrototypeOf(value); } catch {}
  queue.push([proto, path + '.__proto__']);
}
return { payload: { found: found.slice(0, 20), walked: seen.size, realms: globals.size } };
`

const LOOKUPS = `
const out = {};
for (const name of msg.names) {
  try { aio.stateStore(name); out[name] = 'found'; } catch (err) { out[name] = { code: err.code, message: err.message }; }
}
return { payload: out };
`

const DEAD = `
try { await aio.stateStore('dead store').get('k'); return { payload: 'read' }; } catch (err) { return { payload: { code: err.code, kind: err.kind } }; }
`

/**
 * `aio.stateStore(name)` in a Function node reached a config node scoped to another tab, its error
 * for an unknown name listed every config node, and a property walk from its result reached the
 * config nodes' passwords and the broker. Its errors said `notConnected` where the nodes say
 * `NotConnected`. In a real runtime with the package in the user directory, as users install it.
 */
describe('security: a Function node gets the store and nothing more', function () {
  this.timeout(90_000)
  let work = ''
  let emulator: Emulator
  let red: NodeRedProcess
  let comms: Comms

  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'aio-ss-facade-'))
    const userDir = join(work, 'user')
    mkdirSync(join(userDir, 'node_modules'), { recursive: true })
    symlinkSync(repoRoot, join(userDir, 'node_modules', 'node-red-contrib-aio-statestore'), 'dir')
    writeFileSync(
      join(userDir, 'package.json'),
      JSON.stringify({
        name: 'node-red-project',
        private: true,
        dependencies: { 'node-red-contrib-aio-statestore': '*' },
      }),
    )
    emulator = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, logLevel: 'error' })
    writeSettings(join(work, 'settings.js'))
    red = new NodeRedProcess(RED_JS[5], userDir, await freePort(), join(work, 'settings.js'))
    await red.start(30_000)
    comms = await red.comms()
    await red.deploy(flows(emulator.brokerUrl), comms)
  })

  after(async () => {
    comms?.close()
    await red?.stop()
    await emulator?.stop()
    if (work) rmSync(work, { recursive: true, force: true })
  })

  async function run(inject: string, out: string): Promise<unknown> {
    const seen = comms.debug.length
    await red.inject(inject)
    return debugValue(
      await comms.waitFor((d) => d.slice(seen).find((m) => m.id === out), 30_000, `the output of ${inject}`),
    )
  }

  it('a walk over the store, a lock, a result and an error finds no password and no broker', async () => {
    const { found, walked } = (await run('go-walk', 'dbg-b')) as { found: string[]; walked: number }
    assert.deepEqual(found, [])
    assert.ok(walked > 10, `the walk went somewhere (${walked} objects)`)
  })

  it("from tab B, nothing reachable through the package, even by a Function constructor's global, leads to tab A's connection", async () => {
    const { found, walked, realms } = (await run('go-escape', 'dbg-b')) as {
      found: string[]
      walked: number
      realms: number
    }
    assert.deepEqual(found, [])
    assert.ok(realms > 0, 'the walk reached the host realm through a constructor')
    assert.ok(walked > 100, `the walk went somewhere (${walked} objects)`)
  })

  it('a Function node on another tab does not see a tab-scoped config node, and an unknown name’s error lists none', async () => {
    const onB = (await run('go-lookups-b', 'dbg-b')) as Record<string, { code: string; message: string } | string>
    assert.equal(onB['global store'], 'found')
    for (const name of ['tab A store', 'cfg-a', 'nothing by this name']) {
      const refusal = onB[name] as { code: string; message: string }
      assert.equal(refusal.code, 'InvalidArgument', name)
      for (const listed of ['tab A store', 'global store', 'dead store', 'cfg-a', 'cfg-g']) {
        if (listed !== name)
          assert.ok(!refusal.message.includes(listed), `the refusal of ${name} names ${listed}: ${refusal.message}`)
      }
    }
    const onA = (await run('go-lookups-a', 'dbg-a')) as Record<string, unknown>
    assert.equal(onA['tab A store'], 'found', 'its own tab’s config node')
    assert.equal(onA['global store'], 'found')
  })

  it('a store with no connection fails with NotConnected, as the nodes spell it', async () => {
    assert.deepEqual(await run('go-dead', 'dbg-b'), { code: 'NotConnected', kind: 'connection' })
  })
})

function flows(broker: string): unknown[] {
  const libs = [{ var: 'aio', module: 'node-red-contrib-aio-statestore' }]
  const fn = (id: string, z: string, func: string, out: string) => ({
    id,
    type: 'function',
    z,
    x: 300,
    y: 100,
    func,
    outputs: 1,
    libs,
    wires: [[out]],
  })
  const inject = (id: string, z: string, to: string, names?: string[]) => ({
    id,
    type: 'inject',
    z,
    x: 100,
    y: 100,
    props: names ? [{ p: 'names', v: JSON.stringify(names), vt: 'json' }] : [],
    wires: [[to]],
  })
  const debug = (id: string, z: string) => ({
    id,
    type: 'debug',
    z,
    x: 500,
    y: 100,
    active: true,
    tosidebar: true,
    complete: 'payload',
    wires: [],
  })
  const names = ['global store', 'tab A store', 'cfg-a', 'nothing by this name']
  return [
    { id: 'tab-a', type: 'tab', label: 'A' },
    { id: 'tab-b', type: 'tab', label: 'B' },
    {
      id: 'cfg-g',
      type: 'ss-config',
      name: 'global store',
      broker,
      clientId: 'facade-global',
      credentials: { username: 'u', password: PASSWORDS.global },
    },
    {
      id: 'cfg-a',
      type: 'ss-config',
      z: 'tab-a',
      name: 'tab A store',
      broker,
      clientId: 'facade-tab-a',
      credentials: { username: 'u', password: PASSWORDS.tabA },
    },
    {
      id: 'cfg-dead',
      type: 'ss-config',
      name: 'dead store',
      broker: 'mqtt://127.0.0.1:1',
      clientId: 'facade-dead',
      connectionWait: '200',
    },
    inject('go-walk', 'tab-b', 'fn-walk'),
    fn('fn-walk', 'tab-b', WALK, 'dbg-b'),
    inject('go-escape', 'tab-b', 'fn-escape'),
    fn('fn-escape', 'tab-b', ESCAPE, 'dbg-b'),
    inject('go-lookups-b', 'tab-b', 'fn-lookups-b', names),
    fn('fn-lookups-b', 'tab-b', LOOKUPS, 'dbg-b'),
    inject('go-lookups-a', 'tab-a', 'fn-lookups-a', names),
    fn('fn-lookups-a', 'tab-a', LOOKUPS, 'dbg-a'),
    inject('go-dead', 'tab-b', 'fn-dead'),
    fn('fn-dead', 'tab-b', DEAD, 'dbg-b'),
    debug('dbg-a', 'tab-a'),
    debug('dbg-b', 'tab-b'),
  ]
}

// Highly available Node-RED, rehearsed: the HA overlay's two pods as two Node-RED 5 runtimes with the
// overlay's settings (settings-ha.js over the base's), environment and Secret files, against the
// emulator. The first is elected and runs a flow that handles numbered msgs, taking the next number
// from the state store and recording each msg under its own key (only if absent); the second stands
// by with no flows of its own and refuses editor changes. The active one is killed with `kill -9`;
// the standby is elected, loads the flows from the state store and goes on from the number the
// store holds. An observer counts the notifications of every msg's key: each handled exactly once,
// none lost, none by the standby while the active lived; the take-over time is printed. Then the
// killed pod comes back as the standby, and a graceful stop (SIGTERM) of the active hands over at once.
import assert from 'node:assert/strict'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { RED_JS, startNodeRed, type NodeRedChild } from '../../../dev/node-red'
import { freePort } from '../../../dev/ports'
import { StateStoreClient } from '../../../src'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { renderHa, type K8sObject } from '../../support/deploy-kit'
import { until } from '../../support/wait'
import { childEnvWithoutAio, repoRoot } from '../smoke/node-red'

// eslint-disable-next-line @typescript-eslint/no-require-imports
const bcrypt = require('bcryptjs') as { hashSync(password: string, rounds: number): string }

const ITEMS = 300
const TAB = 'ha00000000000001'
const STORE = 'ha00000000000002'
const flows = [
  { id: TAB, type: 'tab', label: 'numbered msgs' },
  { id: STORE, type: 'ss-config', name: 'blank: the pod environment', broker: '', clientId: '' },
  {
    id: 'ha00000000000010',
    type: 'inject',
    z: TAB,
    name: 'tick',
    props: [{ p: 'payload' }],
    payload: '',
    payloadType: 'date',
    repeat: '0.25',
    once: true,
    onceDelay: '0.1',
    topic: '',
    wires: [['ha00000000000011']],
  },
  {
    id: 'ha00000000000011',
    type: 'change',
    z: TAB,
    rules: [{ t: 'set', p: 'topic', pt: 'msg', to: 'flows/ha/next', tot: 'str' }],
    wires: [['ha00000000000012']],
  },
  { id: 'ha00000000000012', type: 'ss-get', z: TAB, store: STORE, wires: [['ha00000000000013']] },
  {
    id: 'ha00000000000013',
    type: 'function',
    z: TAB,
    name: 'the next msg',
    func: "const n = msg.found === false || msg.payload == null ? 0 : Number(msg.payload)\nmsg.n = n\nmsg.topic = 'flows/ha/item/' + n\nmsg.payload = env.get('AIO_MQTT_CLIENT_ID')\nreturn msg",
    outputs: 1,
    wires: [['ha00000000000014']],
  },
  // Handled = its key written, once: a msg the dead active had recorded is not recorded again.
  {
    id: 'ha00000000000014',
    type: 'ss-set',
    z: TAB,
    store: STORE,
    condition: 'NX',
    notApplied: 'same',
    wires: [['ha00000000000015']],
  },
  {
    id: 'ha00000000000015',
    type: 'function',
    z: TAB,
    name: 'advance',
    func: "msg.topic = 'flows/ha/next'\nmsg.payload = String(msg.n + 1)\nreturn msg",
    outputs: 1,
    wires: [['ha00000000000016']],
  },
  { id: 'ha00000000000016', type: 'ss-set', z: TAB, store: STORE, wires: [[]] },
]

/** What the editor deploys to the active one while the other stands by. */
const DEPLOYED = { id: 'ha00000000000099', type: 'comment', z: TAB, name: 'deployed while the other stood by' }

interface Seen {
  by: string
  at: number
}

describe('deploy/overlays/ha: two Node-RED runtimes, one active, one standby; kill -9 the active', function () {
  this.timeout(300_000)
  let root = ''
  let emulator: Emulator | null = null
  let observer: StateStoreClient | null = null
  const runtimes: Array<NodeRedChild | null> = [null, null]
  /** The election's key: every change, as observed. */
  const leaderChanges: Array<{ operation: string; by: string | null; at: number }> = []
  /** Each msg's key: every time it was written. */
  const seen = new Map<number, Seen[]>()

  /** A path of a pod, under the temporary root. */
  const mapped = (pod: string, podPath: string) => join(root, pod, podPath)

  async function startPod(index: number, userFlows: unknown[] | null): Promise<NodeRedChild> {
    const pod = `node-red-${index}`
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed YAML, walked freely; a wrong path fails the test
    const sts = renderHa().find((o) => o.kind === 'StatefulSet') as K8sObject & { spec: any }
    const container = sts.spec.template.spec.containers[0]
    const mountOf = (volume: string) =>
      container.volumeMounts.find((m: { name: string }) => m.name === volume).mountPath as string
    const settingsMap = renderHa().find((o) => o.kind === 'ConfigMap') as K8sObject & { data: Record<string, string> }
    mkdirSync(mapped(pod, mountOf('settings')), { recursive: true })
    for (const [key, text] of Object.entries(settingsMap.data))
      writeFileSync(join(mapped(pod, mountOf('settings')), key), text)
    mkdirSync(mapped(pod, mountOf('secrets')), { recursive: true })
    writeFileSync(join(mapped(pod, mountOf('secrets')), 'adminPasswordHash'), bcrypt.hashSync('ha-admin', 4))
    writeFileSync(join(mapped(pod, mountOf('secrets')), 'credentialSecret'), 'ha-secret')
    // /data: the package where the image puts it (found from /data here), and flows only if given.
    const data = mapped(pod, mountOf('data'))
    mkdirSync(join(data, 'node_modules'), { recursive: true })
    // A pod restarted keeps its /data.
    if (!existsSync(join(data, 'node_modules', 'node-red-contrib-aio-statestore')))
      symlinkSync(repoRoot, join(data, 'node_modules', 'node-red-contrib-aio-statestore'), 'dir')
    if (userFlows) writeFileSync(join(data, 'flows.json'), JSON.stringify(userFlows))

    // The pod's environment (the overlay's, paths mapped), the emulator as the broker, and the
    // official image's NODE_PATH (the node_modules Node-RED is installed in: here, the repository's).
    const env: NodeJS.ProcessEnv = { ...childEnvWithoutAio(), NODE_PATH: join(repoRoot, 'node_modules') }
    for (const e of container.env as Array<{ name: string; value?: string }>)
      if (e.value !== undefined) env[e.name] = e.value.startsWith('/') ? mapped(pod, e.value) : e.value
    Object.assign(env, {
      AIO_MQTT_CLIENT_ID: pod,
      AIO_BROKER_HOSTNAME: '127.0.0.1',
      AIO_BROKER_TCP_PORT: new URL(emulator!.brokerUrl).port,
      AIO_MQTT_USE_TLS: 'false',
    })
    delete env.AIO_SAT_FILE
    delete env.AIO_TLS_CA_FILE
    const settingsArg = container.args[container.args.indexOf('--settings') + 1] as string
    const settingsFile = join(root, pod, 'loopback-settings.js')
    writeFileSync(
      settingsFile,
      `module.exports = { ...require(${JSON.stringify(mapped(pod, settingsArg))}), uiHost: '127.0.0.1' }\n`,
    )
    const probe = container.readinessProbe.httpGet.path as string
    termMs = env.NODE_RED_HA_TERM_MS ?? '?'
    return startNodeRed({
      redJs: RED_JS[5],
      userDir: data,
      port: await freePort(),
      settingsFile,
      env,
      timeoutMs: 120_000,
      // Listening: the active answers its readiness probe with 200, the standby with 503.
      ready: async (url) => [200, 503].includes((await fetch(`${url}${probe}`)).status),
    })
  }

  /** The overlay's NODE_RED_HA_TERM_MS. */
  let termMs = ''
  const handledBy = (pod: string) => [...seen.values()].filter((s) => s[0]!.by === pod).length
  const active = async (i: number) => (await fetch(`${runtimes[i]!.url}/ha/active`)).status

  before(async () => {
    root = mkdtempSync(join(tmpdir(), 'aio-ss-ha-'))
    emulator = await startEmulator({ listen: { host: '127.0.0.1', port: 0 } })
    observer = new StateStoreClient({ brokerUrl: emulator.brokerUrl, clientId: 'ha-observer' })
    await observer.ready({ timeoutMs: 30_000 })
    await observer.observe('nodered/ha/leader', (note) => {
      if (!note.reconciled)
        leaderChanges.push({ operation: note.operation, by: note.value?.toString() ?? null, at: performance.now() })
    })
    for (let n = 0; n < ITEMS; n++) {
      await observer.observe(`flows/ha/item/${n}`, (note) => {
        if (note.reconciled || note.operation !== 'SET') return
        const list = seen.get(n) ?? []
        list.push({ by: note.value?.toString() ?? '?', at: performance.now() })
        seen.set(n, list)
      })
    }
    runtimes[0] = await startPod(0, flows)
    await until(async () => (await active(0)) === 200, 'node-red-0 elected', 60_000, 100)
    runtimes[1] = await startPod(1, null)
  })

  after(async () => {
    for (const r of runtimes) await r?.stop()
    await observer?.close()
    await emulator?.stop()
    if (root) rmSync(root, { recursive: true, force: true })
  })

  it('one runs the flows, the other stands by (not ready, running nothing, refusing a deploy); the editor deploys to the active one', async () => {
    await until(() => handledBy('node-red-0') >= 10, 'node-red-0 handling msgs', 60_000, 50).catch(
      async (err: Error) => {
        throw new Error(
          `${err.message} next=${(await observer!.get('flows/ha/next')).value} item0=${(await observer!.get('flows/ha/item/0')).value} seen=${seen.size}\n${runtimes[0]!.log.slice(-1500)}`,
        )
      },
    )
    assert.equal(await active(1), 503)
    assert.equal(handledBy('node-red-1'), 0)
    const deploy = await fetch(`${runtimes[1]!.url}/flows`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: '[]',
    })
    assert.equal(deploy.status, 503, 'the standby refuses editor changes')
    assert.ok(!existsSync(mapped('node-red-1', '/data/flows.json')), 'the standby has loaded no flows')

    // A deploy through the active's editor, after the standby started: the flows it must take over.
    const login = await fetch(`${runtimes[0]!.url}/auth/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        client_id: 'node-red-admin',
        grant_type: 'password',
        scope: '*',
        username: 'admin',
        password: 'ha-admin',
      }),
    })
    const { access_token } = (await login.json()) as { access_token: string }
    const deployed = await fetch(`${runtimes[0]!.url}/flows`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Authorization: `Bearer ${access_token}`,
        'Node-RED-Deployment-Type': 'nodes',
      },
      body: JSON.stringify([...flows, DEPLOYED]),
    })
    assert.equal(deployed.status, 204, await deployed.text())
  })

  it('kill -9 the active: the standby takes over with the flows from the state store, and every msg is handled once, none lost', async () => {
    const killedAt = performance.now()
    await runtimes[0]!.kill()
    runtimes[0] = null
    const before = handledBy('node-red-0')
    await until(() => handledBy('node-red-1') >= 10, 'node-red-1 handling msgs', 120_000, 50)
    assert.equal(await active(1), 200, 'node-red-1 is now the active one (ready)')
    const first = Math.min(...[...seen.values()].filter((s) => s[0]!.by === 'node-red-1').map((s) => s[0]!.at))
    console.log(
      `      take-over: ${((first - killedAt) / 1000).toFixed(1)} s from kill -9 to the first msg handled by the standby (the overlay's term: ${termMs} ms)`,
    )
    assert.ok(first > killedAt, 'the standby handled nothing while the active lived')

    const { value } = await observer!.get('flows/ha/next')
    const next = Number(value?.toString())
    assert.ok(next >= before + 10)
    const counts = Array.from({ length: next }, (_, n) => seen.get(n)?.length ?? 0)
    assert.deepEqual(
      counts.map((c, n) => [n, c]).filter(([, c]) => c !== 1),
      [],
      'msgs handled other than once ([number, times])',
    )
    // The standby went on from the number the state store held.
    const byA = counts.map((_, n) => seen.get(n)![0]!.by).lastIndexOf('node-red-0')
    assert.equal(seen.get(byA + 1)![0]!.by, 'node-red-1')
    const saved = JSON.parse(readFileSync(mapped('node-red-1', '/data/flows.json'), 'utf8')) as Array<{ id: string }>
    assert.deepEqual(
      saved.map((n) => n.id),
      [...flows, DEPLOYED].map((n) => n.id),
      "the flows the active last deployed came to the standby's /data from the state store",
    )
  })

  it('a graceful stop of the active (SIGTERM) hands over at once: it resigns, and the restarted pod, now the standby, is elected', async () => {
    // node-red-0 comes back, as Kubernetes restarts it: the standby now.
    runtimes[0] = await startPod(0, null)
    assert.equal(await active(0), 503)
    const before = handledBy('node-red-0')
    const stoppedAt = performance.now()
    await runtimes[1]!.stop()
    runtimes[1] = null
    await until(() => handledBy('node-red-0') >= before + 5, 'node-red-0 handling msgs again', 120_000, 50)
    const resigned = leaderChanges.find((c) => c.at > stoppedAt && c.operation === 'DELETE')
    assert.ok(
      resigned,
      `the stopped active gave up the position: ${JSON.stringify(leaderChanges.filter((c) => c.at > stoppedAt))}`,
    )
    const first = Math.min(
      ...[...seen.values()].filter((s) => s[0]!.by === 'node-red-0' && s[0]!.at > stoppedAt).map((s) => s[0]!.at),
    )
    console.log(
      `      hand-over on SIGTERM: ${((first - stoppedAt) / 1000).toFixed(1)} s from the stop to the first msg handled by the other`,
    )
    const { value } = await observer!.get('flows/ha/next')
    const counts = Array.from({ length: Number(value?.toString()) }, (_, n) => seen.get(n)?.length ?? 0)
    assert.deepEqual(
      counts.map((c, n) => [n, c]).filter(([, c]) => c !== 1),
      [],
      'msgs handled other than once ([number, times])',
    )
  })
})

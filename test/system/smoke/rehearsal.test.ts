// A rehearsal of the cluster: Node-RED 5 started with exactly the environment and files deploy/base
// gives its pod (the settings ConfigMap, the Secret's files, the projected token, the trust bundle,
// /data; their paths mapped under a temporary root, the broker's service name and port mapped to the
// emulator's), against the emulator in the cluster's layout: TLS + SAT, the ServiceAccount's
// aio-broker-auth/ attribute, the kit's authorization rules merged into the policy in force, and an
// X.509 listener with the kit's x509-authentication entry. The flows connect and work, the shipped
// examples as imported too; a certificate client with the x509 overlay's environment is one of the
// rules' clients; no secret is in Node-RED's environment; a rotated token file keeps them working; a
// policy update that disconnects every client, in the middle of a burst of writes, is ridden
// through: every write answered once, none lost, none applied twice.
import { strict as assert } from 'node:assert'
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { mergeExamples, readExamples } from '../../../dev/flows'
import { RED_JS, startNodeRed, type NodeRedChild } from '../../../dev/node-red'
import { freePort } from '../../../dev/ports'
import { environmentAuth, environmentTls, readAioEnvironment, StateStoreClient } from '../../../src'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { prepareDevLayout } from '../../../src/emulator/dev-layout'
import { readAuthenticationFile } from '../../../src/emulator/resource-file'
import { DEPLOY, renderBase, renderOverlay, yamlDocuments, type K8sObject } from '../../support/deploy-kit'
import { until } from '../../support/wait'
import { childEnvWithoutAio, repoRoot } from './node-red'
import { scaled } from '../../support/deadline'

// eslint-disable-next-line @typescript-eslint/no-require-imports
const bcrypt = require('bcryptjs') as { hashSync(password: string, rounds: number): string }

const POD = 'node-red-0'
const SECRETS = { adminPasswordHash: bcrypt.hashSync('rehearsal-admin', 4), credentialSecret: 'rehearsal-secret' }
const WRITES = 40
const TAB = 'e1a0b0c0d0e0f001'
const STORE = 'e1a0b0c0d0e0f002'

const flows = [
  { id: TAB, type: 'tab', label: 'rehearsal' },
  { id: STORE, type: 'ss-config', name: 'blank: the pod environment', broker: '', clientId: '' },
  {
    id: 'e1a0b0c0d0e0f010',
    type: 'http in',
    z: TAB,
    url: '/write/:n',
    method: 'post',
    x: 100,
    y: 100,
    wires: [['e1a0b0c0d0e0f011']],
  },
  {
    id: 'e1a0b0c0d0e0f011',
    type: 'function',
    z: TAB,
    func: "msg.topic = 'flows/rehearsal/' + msg.req.params.n\nmsg.payload = 'value ' + msg.req.params.n\nreturn msg",
    outputs: 1,
    x: 250,
    y: 100,
    wires: [['e1a0b0c0d0e0f012']],
  },
  { id: 'e1a0b0c0d0e0f012', type: 'ss-set', z: TAB, store: STORE, x: 400, y: 100, wires: [['e1a0b0c0d0e0f030']] },
  {
    id: 'e1a0b0c0d0e0f020',
    type: 'http in',
    z: TAB,
    url: '/read/:n',
    method: 'get',
    x: 100,
    y: 200,
    wires: [['e1a0b0c0d0e0f021']],
  },
  {
    id: 'e1a0b0c0d0e0f021',
    type: 'function',
    z: TAB,
    func: "msg.topic = 'flows/rehearsal/' + msg.req.params.n\nreturn msg",
    outputs: 1,
    x: 250,
    y: 200,
    wires: [['e1a0b0c0d0e0f022']],
  },
  { id: 'e1a0b0c0d0e0f022', type: 'ss-get', z: TAB, store: STORE, x: 400, y: 200, wires: [['e1a0b0c0d0e0f030']] },
  { id: 'e1a0b0c0d0e0f030', type: 'http response', z: TAB, x: 600, y: 150, wires: [] },
  // A write or read that fails answers 500 with the error: nothing is lost silently.
  {
    id: 'e1a0b0c0d0e0f040',
    type: 'catch',
    z: TAB,
    scope: null,
    uncaught: false,
    x: 100,
    y: 300,
    wires: [['e1a0b0c0d0e0f041']],
  },
  {
    id: 'e1a0b0c0d0e0f041',
    type: 'function',
    z: TAB,
    func: 'msg.statusCode = 500\nmsg.payload = String(msg.error && msg.error.message)\nreturn msg',
    outputs: 1,
    x: 250,
    y: 300,
    wires: [['e1a0b0c0d0e0f030']],
  },
  // What a flow reads of the environment by the names the secrets once had: env.get and $env().
  {
    id: 'e1a0b0c0d0e0f060',
    type: 'http in',
    z: TAB,
    url: '/env',
    method: 'get',
    x: 100,
    y: 500,
    wires: [['e1a0b0c0d0e0f061']],
  },
  {
    id: 'e1a0b0c0d0e0f061',
    type: 'function',
    z: TAB,
    func: "msg.payload = { secret: env.get('NODE_RED_CREDENTIAL_SECRET'), hash: env.get('NODE_RED_ADMIN_PASSWORD_HASH') }\nreturn msg",
    outputs: 1,
    x: 250,
    y: 500,
    wires: [['e1a0b0c0d0e0f062']],
  },
  {
    id: 'e1a0b0c0d0e0f062',
    type: 'change',
    z: TAB,
    rules: [
      {
        t: 'set',
        p: 'payload.jsonata',
        pt: 'msg',
        to: "$env('NODE_RED_CREDENTIAL_SECRET') & '|' & $env('NODE_RED_ADMIN_PASSWORD_HASH')",
        tot: 'jsonata',
      },
    ],
    x: 400,
    y: 500,
    wires: [['e1a0b0c0d0e0f030']],
  },
  {
    id: 'e1a0b0c0d0e0f050',
    type: 'http in',
    z: TAB,
    url: '/context',
    method: 'post',
    x: 100,
    y: 400,
    wires: [['e1a0b0c0d0e0f051']],
  },
  {
    id: 'e1a0b0c0d0e0f051',
    type: 'function',
    z: TAB,
    func: "global.set('rehearsal', msg.payload, 'statestore', (err) => {\n  if (err) return node.error(err, msg)\n  global.get('rehearsal', 'statestore', (e, v) => { msg.payload = String(v); node.send(msg) })\n})\nreturn",
    outputs: 1,
    x: 250,
    y: 400,
    wires: [['e1a0b0c0d0e0f030']],
  },
]

describe("smoke: a rehearsal of the cluster with deploy/ (TLS + SAT, the kit's rules)", function () {
  this.timeout(120_000)
  let root = ''
  let emulator: Emulator | null = null
  let red: NodeRedChild | null = null
  const emulatorLog: string[] = []
  let tokenFile = ''
  /** Waiters for a line of Node-RED's output, told at every chunk. */
  const outputWaiters = new Set<() => void>()
  const logShows = (text: string) =>
    new Promise<void>((resolve) => {
      const check = () => {
        if (!red!.log.includes(text)) return
        outputWaiters.delete(check)
        resolve()
      }
      outputWaiters.add(check)
      check()
    })

  /** A path of the pod, under the temporary root. */
  const mapped = (podPath: string) => join(root, podPath)
  let dev: ReturnType<typeof prepareDevLayout>

  /** A client certificate with this subject (CN), signed by the cluster's CA: its files. */
  function clientCertificate(cn: string): { cert: string; key: string } {
    const dir = join(root, 'certs', cn)
    mkdirSync(dir, { recursive: true })
    const openssl = (...args: string[]) => {
      const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' })
      assert.equal(r.status, 0, r.stderr)
    }
    openssl(
      'req',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      'tls.key',
      '-out',
      'tls.csr',
      '-subj',
      `/CN=${cn}`,
    )
    openssl(
      'x509',
      '-req',
      '-in',
      'tls.csr',
      '-CA',
      dev.caFile,
      '-CAkey',
      join(dev.dir, '.broker', 'ca.key'),
      '-CAcreateserial',
      '-out',
      'tls.crt',
      '-days',
      '2',
    )
    return { cert: join(dir, 'tls.crt'), key: join(dir, 'tls.key') }
  }

  before(async () => {
    root = mkdtempSync(join(tmpdir(), 'aio-ss-rehearsal-'))
    const objects = renderBase()
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed YAML, walked freely; a wrong path fails the test
    const sts = objects.find((o) => o.kind === 'StatefulSet') as K8sObject & { spec: any }
    const pod = sts.spec.template.spec
    const container = pod.containers[0]
    const mountOf = (volume: string) =>
      container.volumeMounts.find((m: { name: string }) => m.name === volume).mountPath as string
    const volume = (name: string) => pod.volumes.find((v: { name: string }) => v.name === name)

    // The cluster's side: a CA and a broker certificate (the dev layout's), the trust bundle, a token.
    dev = prepareDevLayout(join(root, 'cluster'))
    const trustBundle = mapped(join(mountOf('aio-ca-trust-bundle'), 'ca.crt'))
    mkdirSync(dirname(trustBundle), { recursive: true })
    writeFileSync(trustBundle, readFileSync(dev.caFile))
    const sat = volume('mqtt-client-token').projected.sources[0].serviceAccountToken
    tokenFile = mapped(join(mountOf('mqtt-client-token'), sat.path))
    mkdirSync(dirname(tokenFile), { recursive: true })
    writeFileSync(tokenFile, 'first-token')
    // The settings ConfigMap where the pod mounts it.
    const settingsMap = objects.find(
      (o) => o.kind === 'ConfigMap' && o.metadata.name === volume('settings').configMap.name,
    ) as K8sObject & {
      data: Record<string, string>
    }
    for (const [key, text] of Object.entries(settingsMap.data)) {
      mkdirSync(mapped(mountOf('settings')), { recursive: true })
      writeFileSync(join(mapped(mountOf('settings')), key), text)
    }
    // /data, with the package where the image installs it (beside Node-RED: here, found from /data).
    const data = mapped(mountOf('data'))
    mkdirSync(join(data, 'node_modules'), { recursive: true })
    symlinkSync(repoRoot, join(data, 'node_modules', 'node-red-contrib-aio-statestore'), 'dir')
    // The rehearsal's flows, and the shipped examples as Import → Examples brings them (blank broker).
    writeFileSync(
      join(data, 'flows.json'),
      JSON.stringify([...flows, ...mergeExamples(readExamples(join(repoRoot, 'examples')))]),
    )

    // The policy in force: another workload's rule, with the kit's rules merged in.
    const [kitRules] = yamlDocuments(join(DEPLOY, 'authorization', 'rules.yaml')) as Array<{ rules: unknown[] }>
    const policyFile = join(root, 'policy.json')
    const otherRule = {
      principals: { clientIds: ['some-other-workload'] },
      brokerResources: [{ method: 'Connect' }],
      stateStoreResources: [{ method: 'Read', keyType: 'Pattern', keys: ['other/*'] }],
    }
    writeFileSync(policyFile, JSON.stringify({ rules: [otherRule, ...kitRules!.rules] }))
    const identity = readAuthenticationFile(join(DEPLOY, 'base', 'serviceaccount.yaml'))
    emulator = await startEmulator({
      listen: { host: '127.0.0.1', port: 0 },
      logLevel: 'info',
      // Every decision line is counted below (applied exactly once), so none is folded into a count.
      logBurst: Infinity,
      logger: (level, message) => emulatorLog.push(`${level} ${message}`),
      authorizationFile: policyFile,
      tlsListeners: [
        {
          port: 0,
          certFile: dev.brokerCertFile,
          keyFile: dev.brokerKeyFile,
          authentication: {
            method: 'sat',
            tokenFiles: [{ file: tokenFile, attributes: identity.serviceAccountAttributes }],
          },
        },
        // A listener with X.509 authentication, the kit's x509-authentication.yaml entry merged in.
        {
          port: 0,
          certFile: dev.brokerCertFile,
          keyFile: dev.brokerKeyFile,
          clientCaFile: dev.caFile,
          authentication: {
            method: 'x509',
            attributes: readAuthenticationFile(join(DEPLOY, 'authorization', 'x509-authentication.yaml')).x509,
          },
        },
      ],
    })

    // The Secret node-red-secrets where the pod mounts it, as files.
    assert.equal(volume('secrets').secret.secretName, 'node-red-secrets')
    mkdirSync(mapped(mountOf('secrets')), { recursive: true })
    for (const [key, value] of Object.entries(SECRETS))
      writeFileSync(join(mapped(mountOf('secrets')), key), `${value}\n`)

    // The pod's environment: the manifest's, with its paths, the service name and port mapped.
    const env = childEnvWithoutAio()
    for (const e of container.env as Array<{
      name: string
      value?: string
      valueFrom?: { fieldRef?: { fieldPath: string } }
    }>) {
      if (e.valueFrom?.fieldRef)
        env[e.name] =
          e.valueFrom.fieldRef.fieldPath === 'metadata.name' ? POD : assert.fail(e.valueFrom.fieldRef.fieldPath)
      else if (e.value !== undefined) env[e.name] = e.value.startsWith('/') ? mapped(e.value) : e.value
      else assert.fail(`${e.name}: a kind of env entry the rehearsal does not know`)
    }
    assert.equal(env.AIO_BROKER_HOSTNAME, 'aio-broker')
    env.AIO_BROKER_HOSTNAME = 'localhost'
    env.AIO_BROKER_TCP_PORT = new URL(emulator.tlsUrls[0]!).port

    // The container's arguments, mapped; Node-RED listens on loopback only here.
    const settingsArg = container.args[container.args.indexOf('--settings') + 1] as string
    const settingsFile = join(root, 'loopback-settings.js')
    writeFileSync(
      settingsFile,
      `module.exports = { ...require(${JSON.stringify(mapped(settingsArg))}), uiHost: '127.0.0.1' }\n`,
    )
    red = await startNodeRed({
      redJs: RED_JS[5],
      userDir: data,
      port: await freePort(),
      settingsFile,
      env,
      timeoutMs: scaled(60_000),
      onOutput: () => setImmediate(() => outputWaiters.forEach((w) => w())),
      ready: async (url, log) => (await fetch(`${url}/auth/login`)).ok && log.includes('connected to the state store'),
    })
  })

  after(async () => {
    await red?.stop()
    await emulator?.stop()
    if (root) rmSync(root, { recursive: true, force: true })
  })

  const write = (n: number) =>
    fetch(`${red!.url}/write/${n}`, { method: 'POST' }).then(async (r) => ({ status: r.status, body: await r.text() }))
  const read = (n: number) =>
    fetch(`${red!.url}/read/${n}`).then(async (r) => ({ status: r.status, body: await r.text() }))
  const setsBy = (clientId: string) =>
    emulatorLog.filter((l) => l.startsWith('info allowed SET from') && l.includes(JSON.stringify(clientId))).length

  it("connects as the pod (client id from its name, the ServiceAccount's attribute matched by the kit's rules); flows and context work", async () => {
    assert.match(red!.log, new RegExp(`connected to the state store as ${POD}\\b`))
    assert.deepEqual(await write(0), { status: 200, body: 'value 0' })
    assert.deepEqual(await read(0), { status: 200, body: 'value 0' })
    const ctx = await fetch(`${red!.url}/context`, {
      method: 'POST',
      headers: { 'Content-Type': 'text/plain' },
      body: 'kept in the store',
    })
    assert.equal(await ctx.text(), 'kept in the store')
    assert.ok(
      emulatorLog.some((l) => l.includes(`${POD}-context`)),
      'the context store connected with a client id of its own',
    )
    // A context store's start reads and registers hundreds of keys: at info the emulator logs none of
    // those allowed reads, only its writes and any refusal.
    const contextInfo = emulatorLog.filter((l) => l.startsWith('info ') && l.includes(`"${POD}-context"`))
    assert.ok(
      contextInfo.length <= 10 && !contextInfo.some((l) => /^info allowed (GET|KEYNOTIFY)/.test(l)),
      `the context store's start kept the info log short (${contextInfo.length} lines):\n${contextInfo.slice(0, 5).join('\n')}`,
    )
    assert.ok(
      emulatorLog.some((l) => new RegExp(`allowed SET from client "${POD}" by rules\\[1\\]`).test(l)),
      `the kit's rule (second in the merged policy) allowed it:\n${emulatorLog
        .filter((l) => l.includes('allowed'))
        .slice(0, 3)
        .join('\n')}`,
    )
  })

  it("the shipped examples, imported as they are, connect with the pod environment and work under the kit's rules", async () => {
    const examples = mergeExamples(readExamples(join(repoRoot, 'examples')))
    const config = examples.filter((n) => n.type === 'ss-config')
    assert.equal(config.length, 1, 'one config node for all (identical in every example)')
    assert.equal(config[0]!.broker, '', 'blank: the environment decides')
    // The examples' config node is this runtime's second: its client id is the pod's, suffixed.
    const clientId = `${POD}-${config[0]!.id}`
    await logShows(`connected to the state store as ${clientId}`)
    // Their inject-once buttons fire at deploy, as after an import: their keys are written.
    await until(
      () => emulatorLog.some((l) => l.startsWith('info allowed SET from') && l.includes(JSON.stringify(clientId))),
      `a SET of the examples by ${clientId}`,
      30_000,
    )
    assert.deepEqual(
      emulatorLog.filter((l) => l.includes(JSON.stringify(clientId)) && /refused|denied|not authorized/.test(l)),
      [],
    )
  })

  it("X.509: a certificate client with the x509 overlay's environment is one of the kit's rules' clients; another subject is refused", async () => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed YAML, walked freely; a wrong path fails the test
    const sts = renderOverlay('x509').find((o) => o.kind === 'StatefulSet') as K8sObject & { spec: any }
    const env: NodeJS.ProcessEnv = {}
    for (const e of sts.spec.template.spec.containers[0].env as Array<{ name: string; value?: string }>)
      if (e.name.startsWith('AIO_') && e.value !== undefined)
        env[e.name] = e.value.startsWith('/') ? mapped(e.value) : e.value
    env.AIO_BROKER_HOSTNAME = 'localhost'
    env.AIO_BROKER_TCP_PORT = new URL(emulator!.tlsUrls[1]!).port
    const connect = async (cn: string, clientId: string) => {
      // The Secret node-red-client-cert where the overlay mounts it.
      const { cert, key } = clientCertificate(cn)
      mkdirSync(dirname(env.AIO_TLS_CERT_FILE!), { recursive: true })
      writeFileSync(env.AIO_TLS_CERT_FILE!, readFileSync(cert))
      writeFileSync(env.AIO_TLS_KEY_FILE!, readFileSync(key))
      const aio = readAioEnvironment({ ...env, AIO_MQTT_CLIENT_ID: clientId })
      const tls = environmentTls(aio)
      return new StateStoreClient({
        brokerUrl: aio.brokerUrl!,
        clientId: aio.clientId!,
        ...environmentAuth(aio),
        ...(tls ? { tls } : {}),
      })
    }
    const client = await connect('node-red', 'node-red-x509')
    try {
      await client.ready({ timeoutMs: 30_000 })
      await client.set('flows/rehearsal/x509', 'by certificate')
      assert.equal((await client.get('flows/rehearsal/x509')).value?.toString(), 'by certificate')
      assert.ok(emulatorLog.some((l) => /allowed SET from client "node-red-x509" by rules\[1\]/.test(l)))
    } finally {
      await client.close()
    }
    const stranger = await connect('someone-else', 'stranger-x509')
    try {
      await assert.rejects(stranger.ready({ timeoutMs: 3000 }))
      assert.ok(emulatorLog.some((l) => l.includes('client "stranger-x509" refused at CONNECT')))
    } finally {
      await stranger.close()
    }
  })

  it("the secrets reach settings.js as files: the login takes the hash, and neither is in Node-RED's environment, for any flow to read", async () => {
    const login = (password: string) =>
      fetch(`${red!.url}/auth/token`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({
          client_id: 'node-red-admin',
          grant_type: 'password',
          scope: '*',
          username: 'admin',
          password,
        }),
      })
    assert.equal((await login('rehearsal-admin')).status, 200)
    assert.equal((await login('rehearsal-guess')).status, 403)
    const environ = readFileSync(`/proc/${red!.pid}/environ`, 'utf8')
    for (const [key, value] of Object.entries(SECRETS))
      assert.ok(!environ.includes(value), `${key} is in the environment`)
    const read = await fetch(`${red!.url}/env`)
    assert.deepEqual(await read.json(), { jsonata: '|' })
  })

  it('a rotated token file keeps them working', async () => {
    // The kubelet swaps the file's content atomically; from now on only the new token is accepted.
    writeFileSync(`${tokenFile}.new`, 'second-token')
    renameSync(`${tokenFile}.new`, tokenFile)
    await logShows('the service account token changed')
    assert.deepEqual(await write(1), { status: 200, body: 'value 1' })
    assert.deepEqual(await read(1), { status: 200, body: 'value 1' })
  })

  it('a policy update that disconnects every client, amid a burst of writes: each answered once, none lost, none applied twice', async () => {
    const before = setsBy(POD)
    // The update comes once a quarter of the writes are answered, with the rest in flight.
    let answered = 0
    // Set in a callback: declared wide, so the check below does not narrow it to null (then never).
    let update = null as Promise<number> | null
    const writes = await Promise.all(
      Array.from({ length: WRITES }, (_, i) =>
        write(100 + i).then((r) => {
          if (++answered === WRITES / 4) update = emulator!.updateAuthorization()
          return r
        }),
      ),
    )
    assert.ok(update, 'the update ran')
    assert.ok((await update) > 0, 'the update disconnected the clients')
    assert.deepEqual(
      writes.map((r) => r.status),
      writes.map(() => 200),
      `${writes.filter((r) => r.status !== 200).map((r) => r.body)[0]}\n${red!.log
        .split('\n')
        .filter((l) => /state store|token/.test(l))
        .slice(-8)
        .join('\n')}`,
    )
    for (let n = 100; n < 100 + WRITES; n++) assert.deepEqual(await read(n), { status: 200, body: `value ${n}` })
    assert.equal(setsBy(POD) - before, WRITES, 'each write applied exactly once')
  })
})

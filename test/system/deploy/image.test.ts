// deploy/image/Dockerfile, built without Docker: its instructions are read and carried out in a
// scratch folder laid out as the official image's file system (Node-RED in /usr/src/node-red, /data,
// /tmp), against a fresh `npm pack` of this repository copied into the build context, with npm
// fetching from a registry on loopback that serves only what this repository has installed (no
// network). Then Node-RED starts from there as the image's entry point starts it, with the kit's
// settings.js and the Secret's files: the login takes the admin hash, the nodes and the context store
// load from the package the recipe installed, and a flow with a blank config node works.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, dirname, isAbsolute, join } from 'node:path'
import { RED_JS, startNodeRed, type NodeRedChild } from '../../../dev/node-red'
import { freePort } from '../../../dev/ports'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { startLocalRegistry, type LocalRegistry } from '../../support/local-registry'
import { DEPLOY, expandDockerVariables, readDockerfile, renderBase, type K8sObject } from '../../support/deploy-kit'
import { childEnvWithoutAio, npmRun, repoRoot, treeCopy } from '../smoke/node-red'

// eslint-disable-next-line @typescript-eslint/no-require-imports
const bcrypt = require('bcryptjs') as { hashSync(password: string, rounds: number): string }

const PACKAGE = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { name: string; version: string }
const NODE_RED = JSON.parse(readFileSync(join(repoRoot, 'node_modules', 'node-red', 'package.json'), 'utf8')) as {
  version: string
}
const IMAGE_APP = '/usr/src/node-red'

function sh(command: string, cwd: string, env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', command], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (out += d))
    child.once('error', reject)
    child.once('close', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`RUN ${command} exited ${code}\n${out}`)),
    )
  })
}

describe('deploy/image: the recipe builds from a fresh npm pack, offline, and Node-RED starts from the result', function () {
  this.timeout(600_000)
  let root = ''
  let registry: LocalRegistry | null = null
  let emulator: Emulator | null = null
  let red: NodeRedChild | null = null
  const steps: string[] = []
  let from = ''
  /** A path of the image, under the scratch root. */
  const mapped = (imagePath: string) => join(root, imagePath)

  before(async () => {
    root = mkdtempSync(join(tmpdir(), 'aio-ss-image-'))
    const context = join(root, '.context')
    mkdirSync(context)
    for (const f of readdirSync(join(DEPLOY, 'image')))
      if (!f.endsWith('.tgz')) copyFileSync(join(DEPLOY, 'image', f), join(context, f))
    // The first of the doc's two commands: npm pack into the build context (prepack builds dist/
    // afresh), in a copy of the tree, so that the specs running beside keep the working tree's dist/.
    const copy = treeCopy()
    try {
      await npmRun(['pack', '--pack-destination', context], copy, 300_000)
    } finally {
      rmSync(copy, { recursive: true, force: true })
    }

    // What FROM gives: the official image's Node-RED app folder (Node-RED installed, as the
    // image's package.json lists it), /data and /tmp.
    const app = mapped(IMAGE_APP)
    mkdirSync(join(app, 'node_modules'), { recursive: true })
    mkdirSync(mapped('/data'))
    mkdirSync(mapped('/tmp'))
    writeFileSync(
      join(app, 'package.json'),
      JSON.stringify({
        name: 'node-red-docker',
        version: NODE_RED.version,
        private: true,
        dependencies: { 'node-red': NODE_RED.version },
      }),
    )
    symlinkSync(join(repoRoot, 'node_modules', 'node-red'), join(app, 'node_modules', 'node-red'), 'dir')

    registry = await startLocalRegistry(join(repoRoot, 'node_modules'))
    const vars: Record<string, string> = {}
    let workdir = '/'
    const env = {
      ...childEnvWithoutAio(),
      npm_config_registry: registry.url,
      npm_config_cache: join(root, '.npm-cache'),
      npm_config_update_notifier: 'false',
    }
    // Absolute paths of the image inside a RUN's text, under the scratch root.
    const mapRun = (text: string) =>
      text.replace(/(^|[\s=])\/(usr|data|tmp|etc)\//g, (_, pre: string, top: string) => `${pre}${mapped(`/${top}`)}/`)
    for (const { keyword, text } of readDockerfile(join(context, 'Dockerfile'))) {
      steps.push(`${keyword} ${text}`)
      if (keyword === 'FROM') from = text
      else if (keyword === 'ARG') {
        const [name, value] = text.split('=') as [string, string | undefined]
        vars[name] = value ?? ''
      } else if (keyword === 'WORKDIR') {
        workdir = expandDockerVariables(text, vars)
        mkdirSync(mapped(workdir), { recursive: true })
      } else if (keyword === 'COPY') {
        const words = expandDockerVariables(text, vars)
          .split(/\s+/)
          .filter((w) => !w.startsWith('--'))
        const dest = words.pop()!
        const into = mapped(isAbsolute(dest) ? dest : join(workdir, dest))
        for (const src of words) {
          const target = dest.endsWith('/') ? join(into, basename(src)) : into
          mkdirSync(dirname(target), { recursive: true })
          copyFileSync(join(context, src), target)
        }
      } else if (keyword === 'RUN') await sh(mapRun(text), mapped(workdir), { ...env, ...vars })
      else
        assert.fail(
          `the test does not know the Dockerfile instruction ${keyword}: teach it, so it keeps following the recipe`,
        )
    }

    // The pod: the kit's settings.js where the StatefulSet mounts it, the Secret's files, the
    // environment of the official image (NODE_PATH) and of the StatefulSet (AIO_* to the emulator).
    const objects = renderBase()
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed YAML, walked freely; a wrong path fails the test
    const sts = objects.find((o) => o.kind === 'StatefulSet') as K8sObject & { spec: any }
    const container = sts.spec.template.spec.containers[0]
    const mountOf = (volume: string) =>
      container.volumeMounts.find((m: { name: string }) => m.name === volume).mountPath as string
    const settingsMap = objects.find((o) => o.kind === 'ConfigMap') as K8sObject & { data: Record<string, string> }
    mkdirSync(mapped(mountOf('settings')), { recursive: true })
    writeFileSync(join(mapped(mountOf('settings')), 'settings.js'), settingsMap.data['settings.js']!)
    mkdirSync(mapped(mountOf('secrets')), { recursive: true })
    writeFileSync(join(mapped(mountOf('secrets')), 'adminPasswordHash'), bcrypt.hashSync('image-admin', 4) + '\n')
    writeFileSync(join(mapped(mountOf('secrets')), 'credentialSecret'), 'image-secret\n')

    emulator = await startEmulator({ listen: { host: '127.0.0.1', port: 0 } })
    writeFileSync(
      mapped('/data/flows.json'),
      JSON.stringify([
        { id: 'f1a0000000000001', type: 'tab', label: 'image' },
        { id: 'f1a0000000000002', type: 'ss-config', name: 'blank', broker: '', clientId: '' },
        {
          id: 'f1a0000000000010',
          type: 'http in',
          z: 'f1a0000000000001',
          url: '/kv/:key',
          method: 'put',
          wires: [['f1a0000000000011']],
        },
        {
          id: 'f1a0000000000011',
          type: 'change',
          z: 'f1a0000000000001',
          rules: [{ t: 'set', p: 'topic', pt: 'msg', to: 'req.params.key', tot: 'msg' }],
          wires: [['f1a0000000000012']],
        },
        {
          id: 'f1a0000000000012',
          type: 'ss-set',
          z: 'f1a0000000000001',
          store: 'f1a0000000000002',
          wires: [['f1a0000000000030']],
        },
        {
          id: 'f1a0000000000020',
          type: 'http in',
          z: 'f1a0000000000001',
          url: '/kv/:key',
          method: 'get',
          wires: [['f1a0000000000021']],
        },
        {
          id: 'f1a0000000000021',
          type: 'change',
          z: 'f1a0000000000001',
          rules: [{ t: 'set', p: 'topic', pt: 'msg', to: 'req.params.key', tot: 'msg' }],
          wires: [['f1a0000000000022']],
        },
        {
          id: 'f1a0000000000022',
          type: 'ss-get',
          z: 'f1a0000000000001',
          store: 'f1a0000000000002',
          wires: [['f1a0000000000030']],
        },
        { id: 'f1a0000000000030', type: 'http response', z: 'f1a0000000000001', wires: [] },
      ]),
    )
    const settingsFile = join(root, 'image-settings.js')
    // The image's entry point runs node_modules/node-red/red.js in /usr/src/node-red, so Node-RED scans
    // the node_modules it is installed in; here Node-RED is the repository's (a link), so nodesDir
    // names that folder. Loopback only.
    writeFileSync(
      settingsFile,
      `module.exports = { ...require(${JSON.stringify(join(mapped(mountOf('settings')), 'settings.js'))}), uiHost: '127.0.0.1', nodesDir: [${JSON.stringify(mapped(IMAGE_APP))}] }\n`,
    )
    const podEnv: NodeJS.ProcessEnv = {
      ...childEnvWithoutAio(),
      NODE_PATH: `${mapped(IMAGE_APP)}/node_modules:${mapped('/data')}/node_modules`,
    }
    for (const e of container.env as Array<{ name: string; value?: string }>)
      if (e.value !== undefined) podEnv[e.name] = e.value.startsWith('/') ? mapped(e.value) : e.value
    Object.assign(podEnv, {
      AIO_MQTT_CLIENT_ID: 'node-red-0',
      AIO_BROKER_HOSTNAME: '127.0.0.1',
      AIO_BROKER_TCP_PORT: new URL(emulator.brokerUrl).port,
      AIO_MQTT_USE_TLS: 'false',
    })
    delete podEnv.AIO_SAT_FILE
    delete podEnv.AIO_TLS_CA_FILE
    red = await startNodeRed({
      redJs: RED_JS[5],
      userDir: mapped('/data'),
      port: await freePort(),
      settingsFile,
      env: podEnv,
      timeoutMs: 90_000,
      ready: async (url, log) => (await fetch(`${url}/auth/login`)).ok && log.includes('connected to the state store'),
    })
  })

  after(async () => {
    await red?.stop()
    await emulator?.stop()
    await registry?.close()
    if (root) rmSync(root, { recursive: true, force: true })
  })

  it("builds on the official image at a pinned Node-RED (the tests' own), and installs the tarball pinned, without root or --unsafe-perm", () => {
    assert.equal(from, `nodered/node-red:${NODE_RED.version}-24`)
    assert.ok(!steps.some((s) => s.includes('--unsafe-perm')), steps.join('\n'))
    assert.ok(!steps.some((s) => /^USER\s+root/.test(s)), 'no step runs as root')
    assert.ok(steps.includes(`ARG VERSION=${PACKAGE.version}`), "the recipe's version is the package's")
    const app = JSON.parse(readFileSync(join(mapped(IMAGE_APP), 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>
    }
    assert.equal(app.dependencies[PACKAGE.name], `file:packages/${PACKAGE.name}-${PACKAGE.version}.tgz`)
    const installed = JSON.parse(
      readFileSync(join(mapped(IMAGE_APP), 'node_modules', PACKAGE.name, 'package.json'), 'utf8'),
    ) as { version: string }
    assert.equal(installed.version, PACKAGE.version)
    assert.ok(!existsSync(join(mapped(IMAGE_APP), 'node_modules', 'typescript')), 'no development dependency')
    assert.ok(registry!.requested.includes('mqtt'), 'the dependencies came through npm, from the registry')
  })

  it("starts Node-RED with the kit's settings.js: the login takes the hash from the Secret's file, and the nodes load from the installed package", async () => {
    const token = await fetch(`${red!.url}/auth/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        client_id: 'node-red-admin',
        grant_type: 'password',
        scope: '*',
        username: 'admin',
        password: 'image-admin',
      }),
    })
    assert.equal(token.status, 200, await token.clone().text())
    const { access_token } = (await token.json()) as { access_token: string }
    const nodes = await fetch(`${red!.url}/nodes/${PACKAGE.name}`, {
      headers: { Accept: 'application/json', Authorization: `Bearer ${access_token}` },
    })
    assert.equal(nodes.status, 200)
    const info = (await nodes.json()) as {
      version: string
      path: string
      nodes: Array<{ types: string[]; enabled: boolean; err?: string }>
    }
    assert.equal(info.version, PACKAGE.version)
    assert.equal(info.path, join(mapped(IMAGE_APP), 'node_modules', PACKAGE.name), 'the copy the recipe installed')
    assert.ok(info.nodes.length >= 7)
    for (const set of info.nodes) assert.ok(set.enabled && set.err === undefined, `${set.types.join()}: ${set.err}`)
    assert.equal(
      (await fetch(`${red!.url}/nodes`, { headers: { Accept: 'application/json' } })).status,
      401,
      'no login, no admin API',
    )
    const wrong = await fetch(`${red!.url}/auth/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        client_id: 'node-red-admin',
        grant_type: 'password',
        scope: '*',
        username: 'admin',
        password: 'guess',
      }),
    })
    assert.equal(wrong.status, 403, 'a wrong password is refused')
  })

  it('a flow with a blank config node writes and reads through the AIO environment', async () => {
    assert.equal(
      (
        await fetch(`${red!.url}/kv/greeting`, {
          method: 'PUT',
          headers: { 'Content-Type': 'text/plain' },
          body: 'from the image',
        })
      ).status,
      200,
    )
    const got = await fetch(`${red!.url}/kv/greeting`)
    assert.equal(await got.text(), 'from the image')
    // The figure behind the StatefulSet's memory request (printed, not asserted: it is this machine's).
    const status = readFileSync(`/proc/${red!.pid}/status`, 'utf8')
    console.log(
      `      Node-RED resident memory after start and a request: ${/VmRSS:\s*(\d+ kB)/.exec(status)?.[1] ?? 'unknown'}`,
    )
  })
})

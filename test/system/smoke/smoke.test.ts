// The package as users get it: `npm pack`, installed into fresh Node-RED 4.x and 5.x user
// directories, each runtime started from its CLI. Catches what the node tests cannot see (the test
// helper never reads package.json or the editor files): wrong paths in `node-red.nodes`, missing
// .html/locales/icons in the tarball, a type registered under another name, examples not shipped,
// examples that do not work.
import { strict as assert } from 'node:assert'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { freePort } from '../../../dev/ports'
import { mergeExamples, pointAtBroker } from '../../../dev/flows'
import { cliBehaviour } from '../cli/behaviour'
import { EXPECTATIONS, type ExampleRun } from './expectations'
import {
  debugValue,
  formatDebug,
  installIntoUserDir,
  NodeRedProcess,
  pack,
  readJson,
  RED_JS,
  repoRoot,
  writeSettings,
  type Comms,
  type NodeSetInfo,
} from './node-red'

const pkg = readJson<{ name: string; version: string }>(join(repoRoot, 'package.json'))
const TYPES = ['ss-config', 'ss-get', 'ss-set', 'ss-del', 'ss-lock', 'ss-update', 'ss-watch']
const EXAMPLES = readdirSync(join(repoRoot, 'examples'))
  .filter((f) => f.endsWith('.json'))
  .map((f) => f.slice(0, -'.json'.length))
  .sort()

// What a fresh user directory logs by itself, whatever is installed.
const BENIGN_WARNINGS = [/Encrypted credentials not found/, /Projects disabled/]

const RUNTIMES = [
  { major: 5, redJs: RED_JS[5] },
  { major: 4, redJs: RED_JS[4] },
]

type FlowNode = { id: string; type: string; z?: string; name?: string; [k: string]: unknown }

describe('smoke: the packed package in real Node-RED runtimes', function () {
  let work = ''
  let tarball = ''
  let emulator: Emulator | null = null

  before(async function () {
    this.timeout(60000)
    work = mkdtempSync(join(tmpdir(), 'aio-ss-smoke-'))
    tarball = await pack(work)
  })

  afterEach(async function () {
    await emulator?.stop()
    emulator = null
  })

  after(function () {
    if (work) rmSync(work, { recursive: true, force: true })
  })

  it('packs a package.json with no script that runs when it is installed', function () {
    // `prepare` (it built the working tree) made installing the tarball warn about install scripts;
    // the build now runs on `prepack`, `prestart` and `pretest`, none of which an install runs.
    const packed = JSON.parse(
      execFileSync('tar', ['-xzOf', tarball, 'package/package.json'], { encoding: 'utf8' }),
    ) as { scripts?: Record<string, string> }
    const atInstall = [
      'preinstall',
      'install',
      'postinstall',
      'prepare',
      'preprepare',
      'postprepare',
      'prepublish',
      'dependencies',
    ]
    assert.deepEqual(
      Object.keys(packed.scripts ?? {}).filter((name) => atInstall.includes(name)),
      [],
    )
    // Built from an empty dist/: a file the sources no longer make (a module moved since the last
    // build) would otherwise ship, and a require of the old path would load it instead of the new one.
    const files = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' })
      .split('\n')
      .filter((f) => f.startsWith('package/dist/src/') && f.endsWith('.js'))
    const stale = files.filter(
      (f) => !existsSync(join(repoRoot, 'src', f.slice('package/dist/src/'.length).replace(/\.js$/, '.ts'))),
    )
    assert.deepEqual(stale, [], 'every packed module has its source')
  })

  it('has an expectation for every example it ships', function () {
    assert.deepEqual(Object.keys(EXPECTATIONS).sort(), EXAMPLES)
  })

  for (const { major, redJs } of RUNTIMES) {
    describe(`Node-RED ${major}.x`, function () {
      let red: NodeRedProcess | null = null
      let startLog = ''

      before(async function () {
        this.timeout(90000)
        const userDir = join(work, `node-red-${major}`)
        await installIntoUserDir(userDir, tarball)
        const settings = join(work, 'settings.js')
        writeSettings(settings)
        red = new NodeRedProcess(redJs, userDir, await freePort(), settings)
        await red.start(30000)
        startLog = red.log
      })

      after(async function () {
        await red?.stop()
        red = null
      })

      it(`runs Node-RED ${major} on a Node.js it supports`, async function () {
        const settings = await red!.getJson<{ version: string }>('/settings')
        assert.equal(Number(settings.version.split('.')[0]), major, `version ${settings.version}`)
        const node = /Node\.js\s+version: v(\d+)\.(\d+)/.exec(startLog)
        assert.ok(node, startLog)
        const [nodeMajor, nodeMinor] = [Number(node[1]), Number(node[2])]
        // Node-RED 5 needs 22.9 (older ones only log a warning when embedded); 4 needs 18.5.
        const [needMajor, needMinor] = major >= 5 ? [22, 9] : [18, 5]
        assert.ok(
          nodeMajor > needMajor || (nodeMajor === needMajor && nodeMinor >= needMinor),
          `Node.js ${node[1]}.${node[2]}`,
        )
      })

      it('registers all six node types, with no error or warning in the log', async function () {
        const sets = (await red!.getJson<NodeSetInfo[]>('/nodes')).filter((s) => s.module === pkg.name)
        assert.equal(sets[0]?.version, pkg.version)
        const types = sets.flatMap((s) => s.types).sort()
        assert.deepEqual(types, [...TYPES].sort())
        for (const set of sets) {
          assert.equal(set.err, undefined, `${set.id}: ${set.err}`)
          assert.equal(set.enabled, true, set.id)
        }
        const problems = startLog
          .split('\n')
          .filter((line) => /\[(warn|error)\]/.test(line))
          .filter((line) => !BENIGN_WARNINGS.some((re) => re.test(line)))
        assert.deepEqual(problems, [], `warnings in the log:\n${startLog}`)
      })

      it('serves every node type its editor definition, help and message catalogue', async function () {
        const res = await fetch(`${red!.url}/nodes`, { headers: { Accept: 'text/html' } })
        const html = await res.text()
        const messages = await red!.getJson<Record<string, unknown>>('/nodes/messages?lng=en-US')
        for (const type of TYPES) {
          assert.match(html, new RegExp(`registerType\\(\\s*['"]${type}['"]`), `editor definition of ${type}`)
          assert.match(html, new RegExp(`data-help-name=['"]${type}['"]`), `help text of ${type}`)
        }
        const catalogues = Object.keys(messages).filter((k) => k.startsWith(`${pkg.name}/`))
        assert.ok(catalogues.length > 0, `no message catalogue for ${pkg.name}: ${Object.keys(messages).join(', ')}`)
        const helpers = await fetch(`${red!.url}/resources/${pkg.name}/editor.js`)
        assert.equal(helpers.status, 200, 'the shared editor helpers are served from resources/')
        assert.match(await helpers.text(), /window\.AioStateStore\s*=/)
        const icons = await red!.getJson<Record<string, string[]>>('/icons')
        assert.ok((icons[pkg.name] ?? []).length > 0, `no icons for ${pkg.name}: ${JSON.stringify(icons)}`)
      })

      it('serves the state store sidebar plugin to the editor', async function () {
        const plugins = await red!.getJson<Array<{ id: string; module: string }>>('/plugins')
        assert.ok(
          plugins.some((p) => p.id === `${pkg.name}/ss-sidebar`),
          `plugins: ${JSON.stringify(plugins.map((p) => p.id))}`,
        )
        const html = await (await fetch(`${red!.url}/plugins`, { headers: { Accept: 'text/html' } })).text()
        assert.match(html, /registerPlugin\('ss-sidebar'/)
      })

      it('lists every example under Import > Examples', async function () {
        const listed = await red!.getJson<Array<{ fn?: string } | string>>(`/library/examples/flows/${pkg.name}`)
        assert.deepEqual(listed.flatMap((e) => (typeof e === 'string' ? [] : [e.fn])).sort(), EXAMPLES)
        // Folders (examples/two-runtimes, flows for two runtimes, run by two-runtimes.test.ts) are submenus.
        const folders = readdirSync(join(repoRoot, 'examples'), { withFileTypes: true }).filter((f) => f.isDirectory())
        assert.deepEqual(listed.filter((e) => typeof e === 'string').sort(), folders.map((f) => f.name).sort())
        for (const folder of folders) {
          const inside = await red!.getJson<Array<{ fn?: string }>>(
            `/library/examples/flows/${pkg.name}/${folder.name}`,
          )
          const files = readdirSync(join(repoRoot, 'examples', folder.name))
            .filter((f) => f.endsWith('.json'))
            .map((f) => f.slice(0, -'.json'.length))
          assert.deepEqual(inside.map((e) => e.fn).sort(), files.sort())
        }
      })

      for (const name of EXAMPLES) {
        it(`deploys the example "${name}" and it produces its debug output`, async function () {
          this.timeout(30000)
          const expectation = EXPECTATIONS[name]
          assert.ok(expectation, `no expectation for example ${name}`)
          // Each example starts from an empty store, as on a first `npm start`.
          emulator = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, logLevel: 'warn' })
          // The example exactly as the Import menu hands it to a user; the broker URL is the only edit.
          const example = await red!.getJson<FlowNode[]>(`/library/examples/flows/${pkg.name}/${name}`)
          const nodes = pointAtBroker(mergeExamples([{ name, nodes: example }]), emulator.brokerUrl) as FlowNode[]
          const comms = await red!.comms()
          try {
            await red!.deploy(nodes, comms)
            await expectation.run(exampleRun(red!, comms, nodes, name))
            // Stopping the example (releasing locks, closing the connection) must be quiet too.
            await stopExample(red!, comms)
            const errors = comms.debug.filter(
              (m) => m.level !== undefined && !(expectation.allowErrors ?? []).some((re) => re.test(m.msg)),
            )
            assert.deepEqual(errors, [], `errors and warnings while running ${name}:\n${formatDebug(errors)}`)
          } finally {
            comms.close()
          }
        })
      }
    })
  }

  // The command-line client as npm installs it with the package: the bin link, run from outside the repository.
  cliBehaviour('the installed aio-statestore command', () => {
    const userDir = join(work, `node-red-${RUNTIMES[0]!.major}`)
    return { file: join(userDir, 'node_modules', '.bin', 'aio-statestore'), args: [], cwd: userDir }
  })
})

const STEP_TIMEOUT_MS = 10000

/** The example's controls as its README describes them: inject buttons, debug outputs, node status. */
function exampleRun(red: NodeRedProcess, comms: Comms, nodes: FlowNode[], example: string): ExampleRun {
  const debugIds = new Map<string, string>()
  for (const n of nodes) if (n.type === 'debug' && n.name) debugIds.set(n.name, n.id)
  const idOf = (debug: string) => {
    const id = debugIds.get(debug)
    assert.ok(id, `example ${example} has no debug node named "${debug}"`)
    return id
  }
  // Errors and warnings logged by nodes also arrive on the debug topic, with a level.
  const outputs = (debug: string) => {
    const id = idOf(debug)
    return comms.debug.filter((m) => m.id === id && m.level === undefined).map(debugValue)
  }
  return {
    async inject(name) {
      const inject = nodes.find((n) => n.type === 'inject' && n.name === name)
      assert.ok(inject, `example ${example} has no inject node named "${name}"`)
      await red.inject(inject.id)
    },
    count: (debug) => outputs(debug).length,
    values: outputs,
    async next(debug, from, accept = () => true) {
      // Wrapped, because waitFor reads undefined as "not yet" and a debug node can show undefined.
      const found = await comms.waitFor(
        () => {
          const all = outputs(debug)
          const i = all.findIndex((v, index) => index >= from && accept(v))
          return i >= 0 ? { value: all[i] } : undefined
        },
        STEP_TIMEOUT_MS,
        `output of debug node "${debug}"`,
      )
      return found.value
    },
    async status(type, accept) {
      const matching = nodes.filter((n) => n.type === type)
      assert.equal(matching.length, 1, `example ${example} has one ${type} node`)
      const id = matching[0]!.id
      await comms.waitFor(
        () => (accept(comms.status.get(id)?.text ?? '') ? true : undefined),
        STEP_TIMEOUT_MS,
        `status of the ${type} node`,
      )
    },
  }
}

/**
 * Replaces the example with an empty flow. Whatever its nodes logged while closing reaches the
 * editor connection before the runtime announces the new revision, which deploy() waits for.
 */
async function stopExample(red: NodeRedProcess, comms: Comms): Promise<void> {
  await red.deploy([], comms)
}

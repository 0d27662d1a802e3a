// What `npm publish` would ship, held to the release rules (CONTRIBUTING.md, "Cutting a release"):
// no source map without its source, no placeholder files, the icons once (where Node-RED looks for
// them), every file the package's entries name; the pre-release aedes only as an optional dependency
// that the emulator alone loads, and a clear, coded error from the emulator when it is left out.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { npmRun, repoRoot, treeCopy } from '../smoke/node-red'

interface Manifest {
  main: string
  bin: Record<string, string>
  dependencies: Record<string, string>
  optionalDependencies?: Record<string, string>
  'node-red': { nodes: Record<string, string>; plugins: Record<string, string> }
}

const manifest = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as Manifest

describe('release: the tarball npm publish would upload', function () {
  this.timeout(300_000)
  let files: string[] = []
  let copy = ''

  after(() => {
    if (copy) rmSync(copy, { recursive: true, force: true })
  })

  before(async () => {
    // As `npm publish` runs it: prepack builds dist/ afresh, then the file list is taken; in a copy
    // of the tree, so that the specs running beside keep the working tree's dist/.
    copy = treeCopy()
    const out = await npmRun(['pack', '--dry-run', '--json'], copy, 240_000)
    const [info] = JSON.parse(out.slice(out.indexOf('['))) as Array<{ files: Array<{ path: string }> }>
    files = info!.files.map((f) => f.path)
  })

  it('ships no source maps (their sources are not shipped), no .keep, and each icon once, beside the nodes', () => {
    assert.deepEqual(
      files.filter((f) => f.endsWith('.map')),
      [],
    )
    assert.deepEqual(
      files.filter((f) => f.endsWith('.keep')),
      [],
    )
    const icons = files.filter((f) => f.endsWith('.svg'))
    assert.ok(icons.length > 0)
    for (const icon of icons)
      assert.ok(icon.startsWith('dist/nodes/icons/'), `${icon}: Node-RED reads icons from beside the nodes' .js files`)
    // No shipped file points at a map that is not shipped.
    for (const f of files.filter((p) => p.endsWith('.js')))
      assert.ok(!readFileSync(join(repoRoot, f), 'utf8').includes('//# sourceMappingURL='), `${f} names a source map`)
  })

  it("ships every file the package's entries name", () => {
    const named = [
      manifest.main,
      ...Object.values(manifest.bin),
      ...Object.values(manifest['node-red'].nodes),
      ...Object.values(manifest['node-red'].plugins),
    ]
    for (const f of named) assert.ok(files.includes(f), f)
    for (const node of Object.values(manifest['node-red'].nodes))
      assert.ok(files.includes(node.replace(/\.js$/, '.html')), `${node}'s editor file`)
  })

  it('aedes, a pre-release, is an optional dependency, exactly pinned; every other dependency is a release', () => {
    assert.equal(manifest.dependencies.aedes, undefined)
    assert.equal(manifest.optionalDependencies?.aedes, '2.0.0-beta.1')
    for (const [name, range] of Object.entries(manifest.dependencies))
      assert.ok(!range.includes('-'), `${name}@${range} is a pre-release`)
  })

  it('without aedes installed, the emulator fails with EMULATOR_BROKER_MISSING and the client still loads', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'aio-ss-no-aedes-'))
    try {
      // A resolve hook that finds no aedes, as after `npm install --omit=optional`.
      const hook = join(dir, 'no-aedes.mjs')
      const resolveHook =
        "export async function resolve(s, c, next) { if (s === 'aedes') throw Object.assign(new Error('Cannot find package aedes'), { code: 'ERR_MODULE_NOT_FOUND' }); return next(s, c) }"
      writeFileSync(
        hook,
        `import { register } from 'node:module'\nregister('data:text/javascript,' + encodeURIComponent(${JSON.stringify(resolveHook)}))\n`,
      )
      const script = `
        const { StateStoreClient } = require(${JSON.stringify(join(repoRoot, 'dist', 'src'))})
        if (typeof StateStoreClient !== 'function') throw new Error('no client')
        require(${JSON.stringify(join(repoRoot, 'dist', 'src', 'emulator'))}).startEmulator({ listen: { host: '127.0.0.1', port: 0 } })
          .then(() => { console.log('started'); process.exit(1) }, (e) => { console.log(e.code + ': ' + e.message); process.exit(0) })`
      const out = await new Promise<string>((resolve, reject) => {
        const child = spawn(process.execPath, ['--import', hook, '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] })
        let text = ''
        child.stdout.on('data', (d) => (text += d))
        child.stderr.on('data', (d) => (text += d))
        child.once('close', (code) => (code === 0 ? resolve(text) : reject(new Error(text))))
      })
      assert.match(out, /^EMULATOR_BROKER_MISSING: .*optional dependency aedes/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

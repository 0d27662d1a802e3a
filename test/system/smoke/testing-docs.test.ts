// docs/testing.md's example, run as its reader runs it: the packed package installed in a fresh
// folder beside node-red, node-red-node-test-helper and mocha (those three linked from this
// repository's node_modules, as installed devDependencies), the page's test file written as it
// stands, mocha run from that folder. The package's `exports` must let the helper load the nodes.
import { strict as assert } from 'node:assert'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { installIntoUserDir, nodeBinary, pack, repoRoot, run } from './node-red'

/** The page's ```js block that names its own file in its first line: [file, source]. */
function pageExample(): [string, string] {
  const page = readFileSync(join(repoRoot, 'docs', 'testing.md'), 'utf8')
  const block = /```js\n\/\/ (\S+)[^\n]*\n([\s\S]*?)```/.exec(page)
  assert.ok(block, 'docs/testing.md has a test file')
  return [block[1]!, `// ${block[1]}\n${block[2]!}`]
}

describe('docs/testing.md: a user’s mocha test of a flow, from the packed package', function () {
  this.timeout(180_000)
  let work = ''
  after(() => {
    if (work) rmSync(work, { recursive: true, force: true })
  })

  it('passes both of the page’s tests, the embedded store and the emulator', async () => {
    work = mkdtempSync(join(tmpdir(), 'aio-ss-testing-docs-'))
    const project = join(work, 'my-flows')
    await installIntoUserDir(project, await pack(work))
    for (const dep of ['node-red', 'node-red-node-test-helper', 'mocha'])
      symlinkSync(join(repoRoot, 'node_modules', dep), join(project, 'node_modules', dep), 'junction')
    const [file, source] = pageExample()
    mkdirSync(join(project, file, '..'), { recursive: true })
    writeFileSync(join(project, file), source)
    const result = await run(
      nodeBinary(),
      [join(project, 'node_modules', 'mocha', 'bin', 'mocha.js'), file],
      project,
      120_000,
    )
    const output = `${result.stdout}\n${result.stderr}`
    assert.equal(result.code, 0, output)
    assert.match(result.stdout, /2 passing/, output)
    assert.doesNotMatch(output, /ERR_PACKAGE_PATH_NOT_EXPORTED|failing/, output)
  })

  it('exports each node file package.json’s node-red.nodes names, and one entry with them all', () => {
    const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
      exports: Record<string, unknown>
      'node-red': { nodes: Record<string, string> }
    }
    for (const file of Object.values(pkg['node-red'].nodes)) assert.ok(pkg.exports[`./${file}`], `${file} is exported`)
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const all = require(join(repoRoot, 'dist', 'nodes', 'index.js')) as unknown[]
    assert.equal(all.length, Object.keys(pkg['node-red'].nodes).length)
  })
})

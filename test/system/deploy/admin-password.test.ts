// The admin password's hash, made as docs/cluster.md tells a user to: its command line, taken from the
// doc as it is, run by a shell with the password typed on standard input. The file it writes holds
// the bcrypt hash alone, the password matches it, and the kit's settings.js takes it; the command the
// doc once gave, `$(npx node-red-admin hash-pw)`, captures the prompt as well, and settings.js refuses that.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { DEPLOY } from '../../support/deploy-kit'
import { repoRoot } from '../smoke/node-red'

// eslint-disable-next-line @typescript-eslint/no-require-imports
const bcrypt = require('bcryptjs') as { compareSync(password: string, hash: string): boolean }

const BARE_HASH = /^\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}\n?$/

/** Runs a shell command line in `cwd` with `input` typed on its standard input; its standard output. */
function shell(line: string, cwd: string, input: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const env: NodeJS.ProcessEnv = {}
    // npm_config_* of an outer `npm test` would steer the nested npx.
    for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k)) env[k] = v
    const child = spawn('bash', ['-c', line], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (err += d))
    child.once('error', reject)
    child.once('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${line} exited ${code}\n${err}`))))
    child.stdin.end(input)
  })
}

/** settings.js loaded with the Secret's files in `dir`. */
function loadSettings(dir: string): { adminAuth: { users: Array<{ password: string }> } } {
  const file = join(DEPLOY, 'base', 'settings.js')
  process.env.NODE_RED_SECRETS_DIR = dir
  try {
    delete require.cache[require.resolve(file)]
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require(file) as { adminAuth: { users: Array<{ password: string }> } }
  } finally {
    delete process.env.NODE_RED_SECRETS_DIR
  }
}

describe('deploy/: the admin password hash, made as docs/cluster.md says', function () {
  this.timeout(60_000)
  let dir = ''
  const doc = readFileSync(join(repoRoot, 'docs', 'cluster.md'), 'utf8')
  // The doc's line as a user pastes it.
  const line = doc.split('\n').find((l) => l.startsWith('npx node-red-admin hash-pw'))

  before(() => {
    // Inside the repository (.tmp/ is ignored by git), so npx finds node-red-admin installed here, as
    // it does for a user of the repository; no network.
    mkdirSync(join(repoRoot, '.tmp'), { recursive: true })
    dir = mkdtempSync(join(repoRoot, '.tmp', 'hash-pw-'))
    writeFileSync(join(dir, 'credentialSecret'), 'a-secret\n')
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('the command writes the bcrypt hash alone, the password matches it, and settings.js takes it', async () => {
    assert.ok(line, 'docs/cluster.md gives the command')
    const output = /> *(\S+)$/.exec(line)?.[1] ?? assert.fail(`${line}: writes no file`)
    await shell(line, dir, 'correct horse battery staple\n')
    const written = readFileSync(join(dir, output), 'utf8')
    assert.match(written, BARE_HASH)
    assert.ok(bcrypt.compareSync('correct horse battery staple', written.trim()))
    assert.ok(!bcrypt.compareSync('another password', written.trim()))
    writeFileSync(join(dir, 'adminPasswordHash'), written)
    assert.equal(loadSettings(dir).adminAuth.users[0]!.password, written.trim())
  })

  it('what `$(npx node-red-admin hash-pw)` captured holds the prompt too, and settings.js refuses it', async () => {
    const captured = await shell('printf "%s" "$(npx node-red-admin hash-pw)"', dir, 'correct horse battery staple\n')
    assert.match(captured, /^Password: ?\$2/)
    writeFileSync(join(dir, 'adminPasswordHash'), captured)
    assert.throws(() => loadSettings(dir), /holds no bcrypt hash alone/)
  })
})

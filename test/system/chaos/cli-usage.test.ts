/**
 * `npm run chaos -- --help` prints its usage, and a flag it does not know says so with the usage,
 * never a stack trace: the command line as a user first tries it.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { scaled } from '../../support/deadline'

const ROOT = join(__dirname, '..', '..', '..')
const CLI = join(ROOT, 'test', 'system', 'chaos', 'cli.ts')

interface Ran {
  code: number | null
  stdout: string
  stderr: string
}

/** The chaos command as `npm run chaos --` runs it after its build: tsx on test/system/chaos/cli.ts. */
function chaos(...args: string[]): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', CLI, ...args],
      { cwd: ROOT, timeout: scaled(20_000) },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : null) : 0
        resolve({ code, stdout, stderr })
      },
    )
  })
}

describe('chaos: the command line', function () {
  this.timeout(60_000)

  it('npm run chaos runs test/system/chaos/cli.ts, the file these tests start', () => {
    const scripts = (
      JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
    ).scripts
    assert.match(scripts.chaos ?? '', /tsx test\/system\/chaos\/cli\.ts$/)
  })

  for (const flag of ['--help', '-h']) {
    it(`${flag} prints the usage with every flag and fault kind, exits 0, and runs nothing`, async () => {
      const ran = await chaos(flag)
      assert.equal(ran.code, 0, ran.stderr)
      assert.match(ran.stdout, /^usage: npm run chaos -- /)
      for (const option of ['--seed', '--seconds', '--faults', '--load', '--help'])
        assert.ok(ran.stdout.includes(option), option)
      assert.ok(ran.stdout.includes('kill-emulator'), 'the fault kinds are listed')
      assert.doesNotMatch(ran.stdout, /^chaos: seed/m, 'no run started')
      assert.equal(ran.stderr, '')
    })
  }

  it('an unknown flag is named with the usage on stderr, exit code 2, no stack trace', async () => {
    const ran = await chaos('--bogus')
    assert.equal(ran.code, 2)
    assert.match(ran.stderr, /Unknown option '--bogus'/)
    assert.match(ran.stderr, /usage: npm run chaos -- /)
    assert.doesNotMatch(ran.stderr, /^\s+at /m, 'no stack trace')
    assert.doesNotMatch(ran.stderr, /ERR_PARSE_ARGS/)
    assert.equal(ran.stdout, '')
  })

  it('an unknown fault kind or a bad number is refused the same way', async () => {
    const kinds = await chaos('--faults', 'drop,meteor')
    assert.equal(kinds.code, 2)
    assert.match(kinds.stderr, /unknown fault kinds: meteor/)
    const seconds = await chaos('--seconds', 'soon')
    assert.equal(seconds.code, 2)
    assert.match(seconds.stderr, /--seconds/)
    assert.doesNotMatch(seconds.stderr, /^\s+at /m)
  })
})

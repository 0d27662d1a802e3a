import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startEmulator, type Emulator } from '../../../src/emulator'
import { runCli, startCli, type CliCommand } from './run'

/**
 * What `aio-statestore` must do against the emulator, for any way of starting it: from source here,
 * and as installed from the packed package in the smoke test.
 */
export function cliBehaviour(title: string, cli: () => CliCommand): void {
  describe(title, function () {
    this.timeout(60_000)
    let emulator: Emulator
    let dir: string
    let broker: string[]
    before(async () => {
      emulator = await startEmulator({ listen: { host: '127.0.0.1', port: 0 }, logLevel: 'error' })
      broker = ['--broker', emulator.brokerUrl]
      dir = mkdtempSync(join(tmpdir(), 'aio-ss-cli-'))
    })
    after(async () => {
      await emulator?.stop()
      if (dir) rmSync(dir, { recursive: true, force: true })
    })

    it('sets and gets a value as raw bytes; a missing key exits 1 with one line on stderr', async () => {
      const set = await runCli(cli(), ['set', 'cli/greeting', 'hello wörld', ...broker])
      assert.equal(set.code, 0, set.stderr)
      assert.match(set.stdout.toString(), /^\d{15}:\d{5}:\S+\n$/, 'prints the new version')
      const got = await runCli(cli(), ['get', 'cli/greeting', ...broker])
      assert.equal(got.code, 0, got.stderr)
      assert.deepEqual(got.stdout, Buffer.from('hello wörld'), 'the bytes, nothing added')

      const binary = Buffer.from([0, 255, 10, 13, 0x80])
      assert.equal((await runCli(cli(), ['set', 'cli/binary', ...broker], { input: binary })).code, 0, 'stdin')
      assert.deepEqual((await runCli(cli(), ['get', 'cli/binary', ...broker])).stdout, binary)
      const file = join(dir, 'value.bin')
      writeFileSync(file, Buffer.from([1, 2, 3]))
      assert.equal((await runCli(cli(), ['set', 'cli/file', '--file', file, ...broker])).code, 0)
      assert.deepEqual((await runCli(cli(), ['get', 'cli/file', ...broker])).stdout, Buffer.from([1, 2, 3]))

      const missing = await runCli(cli(), ['get', 'cli/never', ...broker])
      assert.equal(missing.code, 1)
      assert.equal(missing.stdout.length, 0)
      assert.equal(missing.stderr, 'aio-statestore: "cli/never" does not exist\n')
    })

    it('exits 1 when NX or NEX does not apply, and 2 for a wrong command line', async () => {
      const nx = await runCli(cli(), ['set', 'cli/greeting', 'other', '--nx', ...broker])
      assert.equal(nx.code, 1)
      assert.equal(nx.stderr.split('\n').length, 2, 'one line')
      assert.equal(
        (await runCli(cli(), ['set', 'cli/greeting', 'hello wörld', '--nex', ...broker])).code,
        0,
        'NEX with the same value applies',
      )
      for (const args of [
        ['get'],
        ['get', 'a', 'b'],
        ['frobnicate'],
        ['set', 'k', 'v', '--nx', '--nex'],
        ['set', 'k', 'v', '--expiry', 'soon'],
        ['get', 'k', '--no-such-flag'],
      ]) {
        const r = await runCli(cli(), [...args, ...broker])
        assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`)
        assert.match(r.stderr, /^aio-statestore: .+\n$/, args.join(' '))
      }
    })

    it('deletes (exit 1 when missing) and deletes by value', async () => {
      assert.equal((await runCli(cli(), ['set', 'cli/gone', 'v', ...broker])).code, 0)
      assert.equal((await runCli(cli(), ['vdel', 'cli/gone', 'other', ...broker])).code, 1, 'another value')
      assert.equal((await runCli(cli(), ['vdel', 'cli/gone', 'v', ...broker])).code, 0)
      assert.equal((await runCli(cli(), ['get', 'cli/gone', ...broker])).code, 1)
      assert.equal((await runCli(cli(), ['set', 'cli/gone', 'v', ...broker])).code, 0)
      assert.equal((await runCli(cli(), ['del', 'cli/gone', ...broker])).code, 0)
      assert.equal((await runCli(cli(), ['del', 'cli/gone', ...broker])).code, 1)
    })

    it('watches keys: a JSON line per change', async () => {
      const watching = startCli(cli(), ['watch', 'cli/w1', 'cli/w2', '--count', '3', ...broker])
      await watching.waitForStderr('watching 2 key(s)')
      assert.equal((await runCli(cli(), ['set', 'cli/w1', 'one', ...broker])).code, 0)
      assert.equal((await runCli(cli(), ['set', 'cli/w2', ...broker], { input: Buffer.from([0xff]) })).code, 0)
      assert.equal((await runCli(cli(), ['del', 'cli/w1', ...broker])).code, 0)
      const ended = await watching.ended
      assert.equal(ended.code, 0, ended.stderr)
      const lines = ended.stdout
        .toString()
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>)
      assert.deepEqual(
        lines.map(({ version, ...rest }) => {
          assert.match(String(version), /^\d{15}:\d{5}:/)
          return rest
        }),
        [
          { key: 'cli/w1', operation: 'SET', value: 'one' },
          { key: 'cli/w2', operation: 'SET', valueBase64: '/w==' },
          { key: 'cli/w1', operation: 'DELETE' },
        ],
      )
    })

    it('lists keys matching a pattern', async () => {
      for (const k of ['cli/list/a1', 'cli/list/a2', 'cli/list/b1'])
        assert.equal((await runCli(cli(), ['set', k, 'x', ...broker])).code, 0)
      const r = await runCli(cli(), ['keys', 'cli/list/a?', ...broker])
      assert.equal(r.code, 0, r.stderr)
      assert.deepEqual(r.stdout.toString().split('\n').filter(Boolean).sort(), ['cli/list/a1', 'cli/list/a2'])
    })

    it('lock around two concurrent commands runs them one after the other, each with a fencing token', async () => {
      const log = join(dir, 'lock.log')
      writeFileSync(log, '')
      // Each job notes its start and end, and the token it was given; a job running alone never sees another start in between.
      const job = (name: string) => [
        process.execPath,
        '-e',
        `const fs=require('fs');fs.appendFileSync(${JSON.stringify(log)},'start ${name} '+process.env.AIO_STATESTORE_LOCK+' '+process.env.AIO_STATESTORE_FENCING_TOKEN+'\\n');setTimeout(()=>{fs.appendFileSync(${JSON.stringify(log)},'end ${name}\\n');process.exit(${name === 'a' ? 0 : 5})},400)`,
      ]
      const a = startCli(cli(), ['lock', 'cli/lock', ...broker, '--', ...job('a')])
      const b = startCli(cli(), ['lock', 'cli/lock', ...broker, '--', ...job('b')])
      const [ra, rb] = await Promise.all([a.ended, b.ended])
      assert.equal(ra.code, 0, ra.stderr)
      assert.equal(rb.code, 5, `the command's exit code: ${rb.stderr}`)
      const lines = readFileSync(log, 'utf8').trim().split('\n')
      assert.equal(lines.length, 4, lines.join('\n'))
      const [first, second] = [lines[0]!.split(' ')[1], lines[2]!.split(' ')[1]]
      assert.deepEqual(
        lines.map((l) => l.split(' ').slice(0, 2).join(' ')),
        [`start ${first}`, `end ${first}`, `start ${second}`, `end ${second}`],
        'one after the other',
      )
      assert.notEqual(first, second)
      const tokens = [lines[0]!, lines[2]!].map((l) => l.split(' ')[3]!)
      for (const l of [lines[0]!, lines[2]!]) assert.equal(l.split(' ')[2], 'cli/lock')
      for (const t of tokens) assert.match(t, /^\d{15}:\d{5}:/)
      assert.ok(tokens[1]! > tokens[0]!, 'the second holder has the newer fencing token')
      assert.equal((await runCli(cli(), ['get', 'cli/lock', ...broker])).code, 1, 'released')
    })
  })
}

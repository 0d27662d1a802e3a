/**
 * The cluster's limits on the emulator's command line: `--memory-profile`, `--subscriber-queue`
 * and `--clock-offset` (a negative one written with `=`) start it as they say, and a value it
 * cannot use stops the start naming the flag.
 */
import assert from 'node:assert/strict'
import { EmulatorProcess } from './cli-process'

describe('emulator command line: the cluster limits', function () {
  this.timeout(60_000)

  it('starts with a memory profile, a subscriber queue limit and a clock offset, and says so', async () => {
    const p = await EmulatorProcess.start([
      '--listen',
      '127.0.0.1:0',
      '--memory-profile',
      'tiny',
      '--subscriber-queue',
      '10:DropOldest',
      '--clock-offset=-90000',
    ])
    try {
      assert.match(p.stderr, /--max-value-bytes 3145728, .*memory profile tiny, largest message 4194304 bytes/)
      assert.match(p.stderr, /the service's clock runs 90000 ms behind this machine's \(--clock-offset\)/)
    } finally {
      await p.kill('SIGTERM')
    }
  })

  for (const [args, reason] of [
    [['--memory-profile', 'huge'], /--memory-profile "huge": expected tiny, low, medium, high/],
    [['--subscriber-queue', '0'], /--subscriber-queue "0": expected <length>\[:DropOldest\|None\]/],
    [['--clock-offset', '1.5'], /--clock-offset "1\.5": expected whole milliseconds/],
  ] as const) {
    it(`stops on ${args.join(' ')}, naming the flag`, async () => {
      const p = EmulatorProcess.spawn(['--listen', '127.0.0.1:0', ...args])
      const { code } = await p.exit()
      assert.notEqual(code, 0)
      assert.match(p.stderr, reason)
    })
  }
})

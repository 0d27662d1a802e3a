import assert from 'node:assert/strict'
import { PassThrough } from 'node:stream'
import { Progress } from '../../src/cli/commands/progress'

function stream(isTTY: boolean): { out: PassThrough & { isTTY?: boolean }; text: () => string } {
  const out = new PassThrough() as PassThrough & { isTTY?: boolean }
  out.isTTY = isTTY
  let text = ''
  out.on('data', (d: Buffer) => (text += d.toString()))
  return { out, text: () => text }
}

describe('CLI progress: a count on a terminal, then a summary line', function () {
  it('rewrites one line on a terminal and clears it for the summary', async () => {
    const { out, text } = stream(true)
    const p = new Progress(out, 'exported')
    p.count = 1000
    await p.show()
    p.count = 2000
    await p.show()
    await p.done('2000 key(s) to backup.ndjson')
    assert.equal(
      text(),
      '\rexported 1000 key(s)…\rexported 2000 key(s)…\r\x1b[Kexported 2000 key(s) to backup.ndjson\n',
    )
  })

  it('writes only the summary line where stderr is not a terminal (a log, a pipe)', async () => {
    const { out, text } = stream(false)
    const p = new Progress(out, 'imported')
    p.count = 5
    await p.show()
    await p.done('5 key(s) from -')
    assert.equal(text(), 'imported 5 key(s) from -\n')
  })
})

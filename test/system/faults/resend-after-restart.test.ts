/**
 * Regression test from a chaos-run history (seed 505): a persistent SET NX was executed, the
 * emulator was killed before its answer went out, and the client, taken over and reconnected,
 * sent it again to the restarted emulator, which had forgotten it and executed it again: "not
 * applied", for a key nobody else had written. With --persist the answer of a request that changed
 * something persistent is in the file with the change, so the duplicate window outlives a restart.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Prop, Reply, Request } from '../../../src/protocol'
import { EmulatorProcess } from '../emulator/cli-process'
import { RawClient } from '../../integration/emulator/raw-client'

describe('faults: a request re-sent to an emulator restarted with --persist', function () {
  this.timeout(30_000)
  let dir: string
  let proc: EmulatorProcess | null = null
  let client: RawClient | null = null

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'resend-'))
  })
  afterEach(async () => {
    await client?.close()
    await proc?.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  })

  it('is answered with the first answer, not executed again', async () => {
    const args = ['--listen', '127.0.0.1:0', '--persist', join(dir, 'store.log'), '--log-level', 'error']
    proc = await EmulatorProcess.start(args)
    client = await RawClient.connect(proc.url, 'resending-client')
    // The same PUBLISH twice: the same correlation data and user properties (its __ts among them).
    // Its Message Expiry is long enough for a kill and a restart on a busy machine: a re-send after
    // it would rightly be a new request.
    const resend = {
      correlation: randomBytes(16),
      props: { ...client.defaultProps(), [Prop.persist]: 'true' },
      expiry: 600,
    }
    const setNx = Request.set('resent', 'v', { condition: 'NX' })
    const first = await client.request(setNx, resend)
    assert.ok(first.payload.equals(Reply.ok))

    await client.close()
    await proc.kill('SIGKILL')
    proc = await EmulatorProcess.start(args)
    client = await RawClient.connect(proc.url, 'resending-client')
    const again = await client.request(setNx, resend)
    assert.equal(
      again.payload.toString('latin1'),
      first.payload.toString('latin1'),
      'the first answer (OK), not a second execution (not applied)',
    )
    assert.equal(again.prop(Prop.timestamp), first.prop(Prop.timestamp))
    // A new request under other correlation data is executed: the key is there, so NX is not applied.
    const other = await client.request(setNx, { props: { [Prop.persist]: 'true' } })
    assert.ok(!other.payload.equals(Reply.ok))
  })
})

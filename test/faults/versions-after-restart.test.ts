/**
 * Versions keep increasing across a restart with --persist, a deletion's included. A client whose
 * clock runs ahead (within the service's allowance) pushes the emulator's clock ahead of the wall
 * clock; a persistent key deleted then has a version ahead too. The file's DEL record carries no
 * version, and the restarted emulator used to set its clock from the newest stored SET alone: the
 * next write got a version lower than the DELETE a watcher had seen, so a cache would have taken the
 * new value for an older one and ignored it.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Hlc, HybridLogicalClock } from '../../src/hlc'
import { Prop, Reply, Request } from '../../src/protocol'
import { EmulatorProcess } from '../emulator/cli-process'
import { RawClient } from '../emulator/raw-client'

describe('faults: versions after an emulator restart with --persist', function () {
  this.timeout(30_000)
  let dir: string
  let proc: EmulatorProcess | null = null
  let client: RawClient | null = null

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'versions-'))
  })
  afterEach(async () => {
    await client?.close()
    await proc?.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  })

  it('a write after the restart has a greater version than a deletion made with the clock pushed ahead', async () => {
    const args = ['--listen', '127.0.0.1:0', '--persist', join(dir, 'store.log'), '--log-level', 'error']
    const persist = { [Prop.persist]: 'true' }
    proc = await EmulatorProcess.start(args)
    client = await RawClient.connect(proc.url, 'versions-client')
    const set = await client.request(Request.set('doomed', 'v'), { props: persist })
    assert.ok(set.payload.equals(Reply.ok))
    // a reading 30 s ahead (allowed) moves the emulator's clock ahead of the wall clock
    const ahead = new HybridLogicalClock({ now: () => Date.now() + 30_000 })
    await client.request(Request.get('anything'), { props: { [Prop.timestamp]: ahead.tick().toString() } })
    const del = await client.request(Request.del('doomed'), { props: persist })
    assert.ok(del.payload.equals(Reply.integer(1)))
    const deletedAt = Hlc.parse(del.prop(Prop.timestamp)!)
    assert.ok(deletedAt.timestamp > Date.now() + 20_000, 'the deletion is versioned ahead of the wall clock')

    await client.close()
    await proc.kill('SIGKILL')
    proc = await EmulatorProcess.start(args)
    client = await RawClient.connect(proc.url, 'versions-client')
    const after = await client.request(Request.set('doomed', 'again'), { props: persist })
    assert.ok(after.payload.equals(Reply.ok))
    const writtenAt = Hlc.parse(after.prop(Prop.timestamp)!)
    assert.ok(Hlc.compare(writtenAt, deletedAt) > 0, `the new write's version ${writtenAt} is above the deletion's ${deletedAt}`)
  })
})

import assert from 'node:assert/strict'
import { appendFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SERVICE_ERROR_TEXT } from '../../src/errors'
import { Hlc } from '../../src/hlc'
import { Prop, Reply, Request } from '../../src/protocol'
import { startEmulator } from '../../src/emulator'
import { decodeLog, encodeDelete, encodeSet, PersistenceLog } from '../../src/emulator/persistence'
import { EmulatorProcess } from './cli-process'
import { RawClient } from './raw-client'

const persist = { props: { [Prop.persist]: 'true' } }
const text = (b: Buffer) => JSON.stringify(b.toString('latin1'))

describe('emulator persistence', function () {
  this.timeout(30_000)
  let dir: string
  let proc: EmulatorProcess | null = null
  let client: RawClient | null = null

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'emu-persist-'))
  })
  afterEach(async () => {
    await client?.close()
    client = null
    await proc?.kill('SIGKILL')
    proc = null
    rmSync(dir, { recursive: true, force: true })
  })

  async function restart(args: string[]): Promise<RawClient> {
    await client?.close()
    proc = await EmulatorProcess.start(args)
    client = await RawClient.connect(proc.url, 'persisting-client')
    return client
  }

  it('survives SIGKILL: every acknowledged persistent key comes back with its value, version, expiry and fencing token', async () => {
    const file = join(dir, 'store.aof')
    const args = ['--listen', '127.0.0.1:0', '--persist', file, '--node-id', 'emu-node', '--log-level', 'info']
    let c = await restart(args)
    const key = Buffer.from([0, 13, 10, 0xff])
    const value = Buffer.from('binary\r\n\0value')
    const versions = new Map<string, string>()
    const keep = async (k: Buffer | string, v: Buffer | string, options = {}, props: Record<string, string> = {}) => {
      const r = await c.request(Request.set(k, v, options), { props: { ...persist.props, ...props } })
      assert.equal(text(r.payload), text(Reply.ok))
      versions.set(Buffer.from(k).toString('hex'), r.prop(Prop.timestamp)!)
    }
    await keep(key, value)
    await keep('long-lived', 'v', { expiryMs: 600_000 })
    await keep('short-lived', 'v', { expiryMs: 300 })
    const token = new Hlc(Date.now() - 1000, 0, 'locker').toString()
    await keep('fenced', 'v', {}, { [Prop.fencingToken]: token })
    await keep('deleted', 'v')
    assert.equal(text((await c.request(Request.del('deleted'))).payload), text(Reply.integer(1)))
    await keep('overwritten', 'persistent')
    await c.request(Request.set('overwritten', 'in memory only'))
    await c.request(Request.set('volatile', 'v'))
    // Many at once: their syncs are shared, every one is acknowledged only once durable.
    const burst = await Promise.all(Array.from({ length: 500 }, (_, i) => c.request(Request.set(`burst-${i}`, String(i)), persist)))
    assert.ok(burst.every((r) => r.payload.equals(Reply.ok)))

    await proc!.kill('SIGKILL')
    await new Promise((r) => setTimeout(r, 350)) // past short-lived's deadline
    c = await restart(args)
    const get = async (k: Buffer | string) => c.request(Request.get(k))
    const hit = await get(key)
    assert.equal(text(hit.payload), text(Reply.value(value)))
    assert.equal(hit.prop(Prop.timestamp), versions.get(key.toString('hex')))
    assert.equal((await get('long-lived')).prop(Prop.timestamp), versions.get(Buffer.from('long-lived').toString('hex')))
    assert.equal(text((await get('short-lived')).payload), text(Reply.nil), 'its deadline passed while the emulator was down')
    assert.equal(text((await get('deleted')).payload), text(Reply.nil))
    assert.equal(text((await get('overwritten')).payload), text(Reply.nil), 'the in-memory overwrite hid the persistent value')
    assert.equal(text((await get('volatile')).payload), text(Reply.nil))
    assert.equal(text((await get('burst-499')).payload), text(Reply.value(Buffer.from('499'))))
    assert.equal(text((await c.request(Request.set('fenced', 'x'))).payload), text(Reply.error(SERVICE_ERROR_TEXT.MissingFencingToken)))
    const lower = new Hlc(Date.now() - 5000, 0, 'locker').toString()
    assert.equal(text((await c.request(Request.set('fenced', 'x'), { props: { [Prop.fencingToken]: lower } })).payload), text(Reply.error(SERVICE_ERROR_TEXT.FencingTokenLowerVersion)))
    const after = await c.request(Request.set(key, 'new'), persist)
    for (const v of versions.values()) assert.ok(Hlc.compare(Hlc.parse(after.prop(Prop.timestamp)!), Hlc.parse(v)) > 0, 'versions keep increasing across restarts')
  })

  it('ignores a torn last record and starts; refuses a file that is not its own', async () => {
    const file = join(dir, 'store.aof')
    const args = ['--listen', '127.0.0.1:0', '--persist', file, '--log-level', 'info']
    let c = await restart(args)
    const set = await c.request(Request.set('k', 'v'), persist)
    await proc!.kill('SIGKILL')
    const record = encodeSet(Buffer.from('torn'), { value: Buffer.alloc(100, 7), version: new Hlc(Date.now(), 0, 'x'), fencingToken: null, expiresAt: 0, persisted: true })
    appendFileSync(file, record.subarray(0, record.length >> 1))
    c = await restart(args)
    assert.equal((await c.request(Request.get('k'))).prop(Prop.timestamp), set.prop(Prop.timestamp))
    assert.equal(text((await c.request(Request.get('torn'))).payload), text(Reply.nil))
    assert.match(proc!.stderr, /ignored \d+ byte\(s\)/)
    // The torn tail was cut off, so what is written next is readable.
    await c.request(Request.set('after-tear', 'v'), persist)
    await proc!.kill('SIGKILL')
    c = await restart(args)
    assert.equal(text((await c.request(Request.get('after-tear'))).payload), text(Reply.value(Buffer.from('v'))))
    await proc!.kill('SIGKILL')

    const foreign = join(dir, 'foreign.txt')
    writeFileSync(foreign, 'my precious notes\n')
    await assert.rejects(startEmulator({ persistFile: foreign, logLevel: 'silent' }), /not a state store emulator persistence file/)
    assert.equal(readFileSync(foreign, 'utf8'), 'my precious notes\n')
  })

  it('flushes on SIGTERM and exits 0: every acknowledged persistent SET is in the file', async () => {
    const file = join(dir, 'store.aof')
    const args = ['--listen', '127.0.0.1:0', '--persist', file]
    const c = await restart(args)
    const pending = Array.from({ length: 300 }, (_, i) => c.request(Request.set(`t-${i}`, 'v'), { ...persist, timeoutMs: 3000 }).then((r) => (r.payload.equals(Reply.ok) ? `t-${i}` : null), () => null))
    await pending[0]
    const { code } = await proc!.kill('SIGTERM')
    assert.equal(code, 0)
    assert.match(proc!.stderr, /SIGTERM, stopping/)
    // The broker went with the process: whatever was not answered by now never will be.
    await client!.close()
    client = null
    const acknowledged = (await Promise.all(pending)).filter((k): k is string => k !== null)
    assert.ok(acknowledged.length >= 1)
    const written = new Set(decodeLog(readFileSync(file)).records.map((r) => r.key.toString()))
    for (const k of acknowledged) assert.ok(written.has(k), `${k} was acknowledged, so it is on disk`)
  })

  it('stops reading from the broker while too many requests wait for the disk, and answers them all', async () => {
    const logs: string[] = []
    const emulator = await startEmulator({ persistFile: join(dir, 'busy.aof'), maxInFlight: 4, logLevel: 'debug', logger: (_l, m) => logs.push(m) })
    const clients = await Promise.all([1, 2, 3].map(() => RawClient.connect(emulator.brokerUrl)))
    try {
      const answers = await Promise.all(clients.flatMap((c, i) => Array.from({ length: 100 }, (_, j) => c.request(Request.set(`busy-${i}-${j}`, 'v'), persist))))
      assert.ok(answers.every((r) => r.payload.equals(Reply.ok)))
      assert.equal(emulator.keyCount, 300)
      assert.ok(logs.some((m) => m.includes('reading from the broker paused')), 'the limit was reached')
    } finally {
      await Promise.all(clients.map((c) => c.close()))
      await emulator.stop()
    }
  })

  it('compacts the log when it has doubled, keeping only live persistent keys', async () => {
    const file = join(dir, 'store.aof')
    let emulator = await startEmulator({ persistFile: file, persistCompactMinBytes: 16 * 1024, logLevel: 'silent' })
    let c = await RawClient.connect(emulator.brokerUrl)
    try {
      for (let round = 0; round < 40; round++) {
        await Promise.all(Array.from({ length: 20 }, (_, i) => c.request(Request.set(`k${i}`, `round ${round} `.repeat(20)), persist)))
      }
      await c.request(Request.del('k0'))
      const size = statSync(file).size
      assert.ok(size < 3 * 20 * 300, `compacted to ${size} bytes`)
      await c.close()
      await emulator.stop()
      emulator = await startEmulator({ persistFile: file, logLevel: 'silent' })
      c = await RawClient.connect(emulator.brokerUrl)
      assert.equal(text((await c.request(Request.get('k19'))).payload), text(Reply.value(Buffer.from('round 39 '.repeat(20)))))
      assert.equal(text((await c.request(Request.get('k0'))).payload), text(Reply.nil))
      assert.equal(emulator.keyCount, 19)
    } finally {
      await c.close()
      await emulator.stop()
    }
  })

  it('decodes its records and stops at the first torn or corrupt one', () => {
    const v = new Hlc(1_700_000_000_000, 2, 'n')
    const a = encodeSet(Buffer.from('a'), { value: Buffer.from('1'), version: v, fencingToken: new Hlc(5, 0, 'f'), expiresAt: 1_800_000_000_000, persisted: true })
    const d = encodeDelete(Buffer.from('a'))
    const magic = Buffer.from('AIOSS\u0001\r\n', 'latin1')
    const log = decodeLog(Buffer.concat([magic, a, d]))
    assert.equal(log.discardedBytes, 0)
    assert.equal(log.records.length, 2)
    const first = log.records[0]!
    assert.ok(first.type === 'set')
    assert.equal(first.record.version.toString(), v.toString())
    assert.equal(first.record.fencingToken!.toString(), new Hlc(5, 0, 'f').toString())
    assert.equal(first.record.expiresAt, 1_800_000_000_000)
    const corrupt = Buffer.from(d)
    corrupt[corrupt.length - 1]! ^= 0xff
    const bad = decodeLog(Buffer.concat([magic, a, corrupt, a]))
    assert.equal(bad.records.length, 1)
    assert.equal(bad.discardedAt, magic.length + a.length)
    for (let cut = 1; cut < a.length; cut++) {
      const torn = decodeLog(Buffer.concat([magic, d, a.subarray(0, cut)]))
      assert.equal(torn.records.length, 1, `cut at ${cut}`)
      assert.equal(torn.discardedBytes, cut)
    }
  })

  it('opens a missing file as an empty log', async () => {
    const file = join(dir, 'new.aof')
    const { log, replay } = await PersistenceLog.open(file, { snapshot: () => [] })
    assert.equal(replay.records.length, 0)
    await log.close()
    assert.equal(statSync(file).size, 8)
  })
})

import assert from 'node:assert/strict'
import { appendFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SERVICE_ERROR_TEXT } from '../../../src/diagnostics/errors'
import { Hlc, HybridLogicalClock } from '../../../src/hlc'
import { Prop, Reply, Request } from '../../../src/protocol'
import { startEmulator } from '../../../src/emulator'
import {
  decodeLog,
  encodeDelete,
  encodeDropClient,
  encodeKeyNotify,
  encodeSet,
} from '../../../src/emulator/journal/format'
import { Journal } from '../../../src/emulator/journal/journal'
import { mqttBrokerUrl } from '../../support/broker'
import { EmulatorProcess } from './cli-process'
import { RawClient } from '../../integration/emulator/raw-client'

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
    const burst = await Promise.all(
      Array.from({ length: 500 }, (_, i) => c.request(Request.set(`burst-${i}`, String(i)), persist)),
    )
    assert.ok(burst.every((r) => r.payload.equals(Reply.ok)))

    await proc!.kill('SIGKILL')
    await new Promise((r) => setTimeout(r, 350)) // past short-lived's deadline
    c = await restart(args)
    const get = async (k: Buffer | string) => c.request(Request.get(k))
    const hit = await get(key)
    assert.equal(text(hit.payload), text(Reply.value(value)))
    assert.equal(hit.prop(Prop.timestamp), versions.get(key.toString('hex')))
    assert.equal(
      (await get('long-lived')).prop(Prop.timestamp),
      versions.get(Buffer.from('long-lived').toString('hex')),
    )
    assert.equal(
      text((await get('short-lived')).payload),
      text(Reply.nil),
      'its deadline passed while the emulator was down',
    )
    assert.equal(text((await get('deleted')).payload), text(Reply.nil))
    assert.equal(
      text((await get('overwritten')).payload),
      text(Reply.nil),
      'the in-memory overwrite hid the persistent value',
    )
    assert.equal(text((await get('volatile')).payload), text(Reply.nil))
    assert.equal(text((await get('burst-499')).payload), text(Reply.value(Buffer.from('499'))))
    assert.equal(
      text((await c.request(Request.set('fenced', 'x'))).payload),
      text(Reply.error(SERVICE_ERROR_TEXT.MissingFencingToken)),
    )
    // Lower than the stored token whatever the time the restart took (a reading of the clock now could pass it).
    const lower = new Hlc(Hlc.parse(token).timestamp - 4000, 0, 'locker').toString()
    assert.equal(
      text((await c.request(Request.set('fenced', 'x'), { props: { [Prop.fencingToken]: lower } })).payload),
      text(Reply.error(SERVICE_ERROR_TEXT.FencingTokenLowerVersion)),
    )
    const after = await c.request(Request.set(key, 'new'), persist)
    for (const v of versions.values())
      assert.ok(
        Hlc.compare(Hlc.parse(after.prop(Prop.timestamp)!), Hlc.parse(v)) > 0,
        'versions keep increasing across restarts',
      )
  })

  it('restarts its clock above a deletion made while a client ahead had pushed it (the DEL record has no version, its recorded answer does)', async () => {
    // Before, the clock restarted from the newest stored SET alone: the next write got a version
    // below the DELETE a watcher had seen, and a cache would have taken it for an older one.
    const args = ['--listen', '127.0.0.1:0', '--persist', join(dir, 'store.aof'), '--log-level', 'error']
    let c = await restart(args)
    assert.ok((await c.request(Request.set('doomed', 'v'), persist)).payload.equals(Reply.ok))
    // a reading 30 s ahead (within the allowance) moves the emulator's clock past the wall clock
    const ahead = new HybridLogicalClock({ now: () => Date.now() + 30_000 })
    await c.request(Request.get('anything'), { props: { [Prop.timestamp]: ahead.tick().toString() } })
    const del = await c.request(Request.del('doomed'), persist)
    assert.ok(del.payload.equals(Reply.integer(1)))
    const deletedAt = Hlc.parse(del.prop(Prop.timestamp)!)
    assert.ok(deletedAt.timestamp > Date.now() + 20_000, 'the deletion is versioned ahead of the wall clock')

    await proc!.kill('SIGKILL')
    c = await restart(args)
    const after = await c.request(Request.set('doomed', 'again'), persist)
    assert.ok(after.payload.equals(Reply.ok))
    const writtenAt = Hlc.parse(after.prop(Prop.timestamp)!)
    assert.ok(
      Hlc.compare(writtenAt, deletedAt) > 0,
      `the new write's version ${writtenAt} is above the deletion's ${deletedAt}`,
    )
  })

  it('ignores a torn last record and starts; refuses a file that is not its own', async () => {
    const file = join(dir, 'store.aof')
    const args = ['--listen', '127.0.0.1:0', '--persist', file, '--log-level', 'info']
    let c = await restart(args)
    const set = await c.request(Request.set('k', 'v'), persist)
    await proc!.kill('SIGKILL')
    const record = encodeSet(Buffer.from('torn'), {
      value: Buffer.alloc(100, 7),
      version: new Hlc(Date.now(), 0, 'x'),
      fencingToken: null,
      expiresAt: 0,
      persisted: true,
    })
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
    await assert.rejects(
      startEmulator({ persistFile: foreign, logLevel: 'silent' }),
      /not a state store emulator persistence file/,
    )
    assert.equal(readFileSync(foreign, 'utf8'), 'my precious notes\n')
  })

  it('flushes on SIGTERM and exits 0: every acknowledged persistent SET is in the file', async () => {
    const file = join(dir, 'store.aof')
    const args = ['--listen', '127.0.0.1:0', '--persist', file]
    const c = await restart(args)
    const pending = Array.from({ length: 300 }, (_, i) =>
      c.request(Request.set(`t-${i}`, 'v'), { ...persist, timeoutMs: 3000 }).then(
        (r) => (r.payload.equals(Reply.ok) ? `t-${i}` : null),
        () => null,
      ),
    )
    await pending[0]
    const { code } = await proc!.kill('SIGTERM')
    assert.equal(code, 0)
    assert.match(proc!.stderr, /SIGTERM, stopping/)
    // The broker went with the process: whatever was not answered by now never will be.
    await client!.close()
    client = null
    const acknowledged = (await Promise.all(pending)).filter((k): k is string => k !== null)
    assert.ok(acknowledged.length >= 1)
    const written = new Set(
      decodeLog(readFileSync(file)).records.flatMap((r) => (r.type === 'set' ? [r.key.toString()] : [])),
    )
    for (const k of acknowledged) assert.ok(written.has(k), `${k} was acknowledged, so it is on disk`)
  })

  it('stops reading from the broker while too many requests wait for the disk, and answers them all', async () => {
    const logs: string[] = []
    const emulator = await startEmulator({
      persistFile: join(dir, 'busy.aof'),
      maxInFlight: 4,
      logLevel: 'debug',
      logger: (_l, m) => logs.push(m),
    })
    const clients = await Promise.all([1, 2, 3].map(() => RawClient.connect(emulator.brokerUrl)))
    try {
      const answers = await Promise.all(
        clients.flatMap((c, i) =>
          Array.from({ length: 100 }, (_, j) => c.request(Request.set(`busy-${i}-${j}`, 'v'), persist)),
        ),
      )
      assert.ok(answers.every((r) => r.payload.equals(Reply.ok)))
      assert.equal(emulator.keyCount, 300)
      assert.ok(
        logs.some((m) => m.includes('reading from the broker paused')),
        'the limit was reached',
      )
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
        await Promise.all(
          Array.from({ length: 20 }, (_, i) => c.request(Request.set(`k${i}`, `round ${round} `.repeat(20)), persist)),
        )
      }
      await c.request(Request.del('k0'))
      const size = statSync(file).size
      assert.ok(size < 3 * 20 * 300, `compacted to ${size} bytes`)
      await c.close()
      await emulator.stop()
      emulator = await startEmulator({ persistFile: file, logLevel: 'silent' })
      c = await RawClient.connect(emulator.brokerUrl)
      assert.equal(
        text((await c.request(Request.get('k19'))).payload),
        text(Reply.value(Buffer.from('round 39 '.repeat(20)))),
      )
      assert.equal(text((await c.request(Request.get('k0'))).payload), text(Reply.nil))
      assert.equal(emulator.keyCount, 19)
    } finally {
      await c.close()
      await emulator.stop()
    }
  })

  it('decodes its records and stops at the first torn or corrupt one', () => {
    const v = new Hlc(1_700_000_000_000, 2, 'n')
    const a = encodeSet(Buffer.from('a'), {
      value: Buffer.from('1'),
      version: v,
      fencingToken: new Hlc(5, 0, 'f'),
      expiresAt: 1_800_000_000_000,
      persisted: true,
    })
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
    const n = encodeKeyNotify('wätcher', Buffer.from([0, 0xff]), false)
    const stop = encodeKeyNotify('wätcher', Buffer.from([0, 0xff]), true)
    const drop = encodeDropClient('wätcher')
    assert.deepEqual(decodeLog(Buffer.concat([magic, n, stop, drop])), {
      records: [
        { type: 'keynotify', clientId: 'wätcher', key: Buffer.from([0, 0xff]) },
        { type: 'keynotifyStop', clientId: 'wätcher', key: Buffer.from([0, 0xff]) },
        { type: 'dropClient', clientId: 'wätcher' },
      ],
      discardedBytes: 0,
      discardedAt: 0,
    })
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
    const { journal, replay } = await Journal.open(file, { snapshot: () => [] })
    assert.equal(replay.records.length, 0)
    await journal.close()
    assert.equal(statSync(file).size, 8)
  })

  it('reads a file of the previous version (SET and DEL only) and marks it as the current version', async () => {
    const file = join(dir, 'v1.aof')
    const magicV1 = Buffer.from('AIOSS\u0001\r\n', 'latin1')
    const version = new Hlc(Date.now() - 1000, 0, 'old-node')
    const record = { value: Buffer.from('from v1'), version, fencingToken: null, expiresAt: 0, persisted: true }
    writeFileSync(
      file,
      Buffer.concat([
        magicV1,
        encodeSet(Buffer.from('kept'), record),
        encodeSet(Buffer.from('gone'), record),
        encodeDelete(Buffer.from('gone')),
      ]),
    )
    let emulator = await startEmulator({ persistFile: file, logLevel: 'silent' })
    let c = await RawClient.connect(emulator.brokerUrl)
    try {
      const got = await c.request(Request.get('kept'))
      assert.equal(text(got.payload), text(Reply.value(Buffer.from('from v1'))))
      assert.equal(got.prop(Prop.timestamp), version.toString())
      assert.equal(emulator.keyCount, 1)
      assert.equal(
        readFileSync(file).subarray(0, 8).toString('latin1'),
        'AIOSS\u0003\r\n',
        'the previous version now refuses the file instead of cutting it short',
      )
      await c.request(Request.set('new', 'v'), persist)
      await c.close()
      await emulator.stop()
      emulator = await startEmulator({ persistFile: file, logLevel: 'silent' })
      c = await RawClient.connect(emulator.brokerUrl)
      assert.equal(emulator.keyCount, 2)
    } finally {
      await c.close()
      await emulator.stop()
    }
  })

  it('with the embedded broker, records a disconnect as the end of its registrations and drops registrations left by a previous run', async () => {
    const file = join(dir, 'embedded.aof')
    writeFileSync(
      file,
      Buffer.concat([Buffer.from('AIOSS\u0002\r\n', 'latin1'), encodeKeyNotify('ghost', Buffer.from('k'), false)]),
    )
    const emulator = await startEmulator({ persistFile: file, logLevel: 'silent' })
    const c = await RawClient.connect(emulator.brokerUrl, 'leaving')
    try {
      assert.equal(text((await c.request(Request.keyNotify('k'))).payload), text(Reply.ok))
    } finally {
      await c.close()
    }
    // The disconnect is recorded once the broker reports it; the next durable record follows it.
    const other = await RawClient.connect(emulator.brokerUrl)
    try {
      for (
        let i = 0;
        !decodeLog(readFileSync(file)).records.some((r) => r.type === 'dropClient' && r.clientId === 'leaving');
        i++
      ) {
        assert.ok(i < 100, 'the disconnect was recorded')
        await other.request(Request.set(`tick-${i}`, 'v'), persist)
      }
    } finally {
      await other.close()
      await emulator.stop()
    }
    const registrations = decodeLog(readFileSync(file)).records.flatMap((r) =>
      r.type === 'set' || r.type === 'delete' || r.type === 'answer' ? [] : [[r.type, r.clientId]],
    )
    assert.deepEqual(registrations, [
      ['keynotify', 'ghost'],
      ['dropClient', 'ghost'],
      ['keynotify', 'leaving'],
      ['dropClient', 'leaving'],
    ])
  })

  describe('KEYNOTIFY registrations behind an external broker', function () {
    let url: string
    let emulator: Awaited<ReturnType<typeof startEmulator>> | null = null
    let watcher: RawClient | null = null
    let writer: RawClient | null = null
    const logs: string[] = []

    before(async function () {
      url = await mqttBrokerUrl(this)
    })
    afterEach(async () => {
      await watcher?.close()
      await writer?.close()
      await emulator?.stop()
      watcher = writer = emulator = null
      logs.length = 0
    })

    const start = async (file: string, extra: { persistCompactMinBytes?: number } = {}) => {
      await emulator?.stop()
      emulator = await startEmulator({
        brokerUrl: url,
        persistFile: file,
        logLevel: 'info',
        logger: (_l, m) => logs.push(m),
        ...extra,
      })
    }
    /** SETs each key in turn; returns the keys whose notifications the watcher got, in order. */
    const notifiedOf = async (keys: string[]): Promise<string[]> => {
      for (const k of keys) assert.equal(text((await writer!.request(Request.set(k, 'v'))).payload), text(Reply.ok))
      // One publisher, QoS 1, one subscriber: notifications arrive in SET order, so a marker set
      // last and watched for sure bounds the wait.
      await writer!.request(Request.set('marker', 'v'))
      const got: string[] = []
      for (;;) {
        const key = (await watcher!.nextNotification()).key.toString()
        if (key === 'marker') return got
        got.push(key)
      }
    }

    /** After a restart: the watcher is told the current state of each key it is registered for, once (index.ts, tellRestoredWatchers); returns those keys, sorted. */
    const toldAtRestart = async (count: number): Promise<string[]> => {
      const got: string[] = []
      for (let i = 0; i < count; i++) got.push((await watcher!.nextNotification()).key.toString())
      return got.sort()
    }

    it('survive a restart from the log while the client stays connected; STOP removes them', async () => {
      const file = join(dir, 'external.aof')
      await start(file)
      watcher = await RawClient.connect(url, `watcher-${process.pid}`)
      writer = await RawClient.connect(url)
      for (const k of ['w1', 'w2', 'w3', 'marker'])
        assert.equal(text((await watcher.request(Request.keyNotify(k))).payload), text(Reply.ok))
      assert.equal(text((await watcher.request(Request.keyNotifyStop('w2'))).payload), text(Reply.ok))
      assert.deepEqual(await notifiedOf(['w1', 'w2', 'w3']), ['w1', 'w3'])
      await start(file)
      assert.ok(
        logs.some((m) => m.includes('3 KEYNOTIFY registration(s) restored')),
        logs.join('\n'),
      )
      assert.deepEqual(await toldAtRestart(3), ['marker', 'w1', 'w3'])
      assert.deepEqual(await notifiedOf(['w1', 'w2', 'w3']), ['w1', 'w3'], 'the watcher never re-registered')
      assert.equal(text((await watcher.request(Request.keyNotifyStop('w1'))).payload), text(Reply.ok))
      assert.equal(text((await watcher.request(Request.keyNotifyStop('w2'))).payload), text(Reply.integer(0)))
      await start(file)
      assert.deepEqual(await toldAtRestart(2), ['marker', 'w3'])
      assert.deepEqual(await notifiedOf(['w1', 'w2', 'w3']), ['w3'])
    })

    it('are kept by compaction, which drops the STOPs', async () => {
      const file = join(dir, 'compact.aof')
      await start(file, { persistCompactMinBytes: 16 * 1024 })
      watcher = await RawClient.connect(url, `compacted-${process.pid}`)
      writer = await RawClient.connect(url)
      for (const k of ['c1', 'c2', 'marker']) await watcher.request(Request.keyNotify(k))
      await watcher.request(Request.keyNotifyStop('c2'))
      for (let round = 0; round < 30; round++) {
        await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            writer!.request(Request.set(`fill-${i}`, `round ${round} `.repeat(20)), persist),
          ),
        )
      }
      assert.ok(
        logs.some((m) => m.includes('compacted')),
        'a compaction ran',
      )
      const records = decodeLog(readFileSync(file)).records
      assert.ok(!records.some((r) => r.type === 'keynotifyStop'), 'the STOP is gone with the compaction')
      await start(file)
      assert.deepEqual(await toldAtRestart(2), ['c1', 'marker'])
      assert.deepEqual(await notifiedOf(['c1', 'c2']), ['c1'])
    })

    it('ignore a torn registration record at the end of the file', async () => {
      const file = join(dir, 'torn.aof')
      await start(file)
      const id = `torn-${process.pid}`
      watcher = await RawClient.connect(url, id)
      writer = await RawClient.connect(url)
      for (const k of ['t1', 'marker']) await watcher.request(Request.keyNotify(k))
      await emulator!.stop()
      emulator = null
      const torn = encodeKeyNotify(id, Buffer.from('t2'), false)
      appendFileSync(file, torn.subarray(0, torn.length - 3))
      await start(file)
      assert.ok(
        logs.some((m) => m.includes(`ignored ${torn.length - 3} byte(s)`)),
        logs.join('\n'),
      )
      assert.deepEqual(await toldAtRestart(2), ['marker', 't1'])
      assert.deepEqual(await notifiedOf(['t1', 't2']), ['t1'])
      // The tail was cut off, so what is recorded next is readable.
      await watcher.request(Request.keyNotify('t3'))
      await start(file)
      assert.deepEqual(await toldAtRestart(3), ['marker', 't1', 't3'])
      assert.deepEqual(await notifiedOf(['t1', 't2', 't3']), ['t1', 't3'])
    })
  })
})

/**
 * ss-lock's lock mode with *Holders at most* 3 (a semaphore) as flows use it: many msgs at once into
 * the lock node of each of two runtimes, the work between the take and a release node, a runtime cut
 * off while it holds every slot, a redeploy midway. The holders' own records of when they worked
 * never show more than three at once.
 */
import assert from 'node:assert/strict'
import { Hlc } from '../../../src/hlc'
import { TcpRelay } from '../../support/relay'
import { scaled } from '../../support/deadline'
import { until } from '../../support/wait'
import { ALL, TAB, configNode, helper, listen, nextMessage, onTab, useStore, withClient } from './support'

type Msg = Record<string, unknown>
const LIMIT = 3

describe('ss-lock semaphore (Holders at most) across two runtimes', function () {
  this.timeout(180_000)
  const store = useStore()
  let name = ''
  const relays: TcpRelay[] = []
  beforeEach(() => {
    name = `api-${Math.random().toString(36).slice(2)}`
  })
  afterEach(async () => {
    for (const r of relays.splice(0)) await r.stop()
  })

  /** Runtime r: lock node `take-<r>` (limit 3) into helpers `<r>-work` / `<r>-no`, a release node `free-<r>` as dropped from the palette. */
  function runtime(r: string, url: string, settings: Msg = {}): unknown[] {
    return [
      configNode(url, { id: `cfg-${r}`, clientId: `sem-${r}-${name}` }),
      onTab({
        id: `take-${r}`,
        type: 'ss-lock',
        store: `cfg-${r}`,
        key: name,
        keyType: 'str',
        mode: 'lock',
        limit: String(LIMIT),
        leaseMs: '1000',
        timeout: '60000',
        holdMs: '0',
        queue: '1000',
        wires: [[`${r}-work`], [`${r}-no`]],
        ...settings,
      }),
      onTab({ id: `${r}-work`, type: 'helper' }),
      onTab({ id: `${r}-no`, type: 'helper' }),
      onTab({
        id: `free-${r}`,
        type: 'ss-lock',
        store: `cfg-${r}`,
        key: '',
        keyType: 'str',
        mode: 'lease',
        action: 'release',
        wires: [[`${r}-freed`], []],
      }),
      onTab({ id: `${r}-freed`, type: 'helper' }),
    ]
  }

  it('thirty msgs, fifteen into each runtime at once: all get a slot in the order they came, never more than three work at once, each slot’s tokens increase', async () => {
    await helper.load(ALL, [TAB, ...runtime('a', store.url), ...runtime('b', store.url)])
    /** Each holder's own record: when its work began and ended (the release is sent after the end), its slot and token. */
    const records: Array<{ runtime: string; n: number; slot: number; token: string; start: number; end?: number }> = []
    let working = 0
    let most = 0
    for (const r of ['a', 'b']) {
      helper.getNode(`${r}-work`).on('input', (m: Msg) => {
        const rec = {
          runtime: r,
          n: m.n as number,
          slot: m.slot as number,
          token: String(m.fencingToken),
          start: performance.now(),
        } as (typeof records)[number]
        records.push(rec)
        working += 1
        most = Math.max(most, working)
        setTimeout(
          () => {
            rec.end = performance.now()
            working -= 1
            helper.getNode(`free-${r}`).receive(m)
          },
          10 + Math.floor(Math.random() * 40),
        )
      })
    }
    listen(helper.getNode('a-freed'), helper.getNode('b-freed'))
    for (let n = 0; n < 15; n++) {
      helper.getNode('take-a').receive({ n })
      helper.getNode('take-b').receive({ n: 100 + n })
    }
    await until(
      () => records.filter((r) => r.end !== undefined).length === 30,
      'thirty holders worked and released',
      scaled(120_000),
      20,
    )
    assert.ok(most <= LIMIT, `at most ${LIMIT} worked at once (saw ${most})`)
    assert.ok(most >= 2, `more than one worked at once (saw ${most}): a semaphore, not a mutex`)
    assert.equal(new Set(records.map((r) => r.n)).size, 30, 'every msg got a slot once')
    assert.ok(new Set(records.map((r) => r.runtime)).size === 2, 'both runtimes held slots')
    for (let slot = 0; slot < LIMIT; slot++) {
      const tokens = records
        .filter((r) => r.slot === slot)
        .sort((x, y) => x.start - y.start)
        .map((r) => Hlc.parse(r.token))
      for (let i = 1; i < tokens.length; i++)
        assert.ok(
          Hlc.compare(tokens[i]!, tokens[i - 1]!) > 0,
          `slot ${slot}: each holder's token is greater than the last`,
        )
    }
    for (const r of ['a', 'b']) {
      const order = records.filter((x) => x.runtime === r).map((x) => x.n)
      assert.deepEqual(
        order,
        [...order].sort((x, y) => x - y),
        `runtime ${r}'s msgs got their slots in the order they came`,
      )
    }
    // Overlaps from the records themselves: at no record's start were more than three working.
    for (const r of records) {
      const at = records.filter((o) => o.start <= r.start && (o.end ?? Infinity) > r.start).length
      assert.ok(at <= LIMIT, `${at} at once when msg ${r.n} began`)
    }
  })

  it('a runtime cut off while it holds every slot: its slots come back after their lease and the other runtime’s msg gets one', async () => {
    const relayA = await TcpRelay.start(store.emulator.brokerUrl)
    relays.push(relayA)
    await helper.load(ALL, [TAB, ...runtime('a', relayA.url), ...runtime('b', store.url)])
    listen(helper.getNode('a-work'), helper.getNode('b-work'))
    for (let n = 0; n < LIMIT; n++) helper.getNode('take-a').receive({ n })
    const held = [
      await nextMessage(helper.getNode('a-work')),
      await nextMessage(helper.getNode('a-work')),
      await nextMessage(helper.getNode('a-work')),
    ]
    assert.deepEqual(held.map((m) => m.slot).sort(), [0, 1, 2])
    relayA.cut()
    helper.getNode('take-b').receive({ n: 'b' })
    const got = await nextMessage(helper.getNode('b-work'), 30_000)
    assert.equal(typeof got.slot, 'number')
    const before = held.find((m) => m.slot === got.slot)!
    assert.ok(
      Hlc.compare(Hlc.parse(String(got.fencingToken)), Hlc.parse(String(before.fencingToken))) > 0,
      'the slot’s new token is greater',
    )
    relayA.restore()
  })

  it('a release node named for the semaphore releases the slot the msg carries', async () => {
    await helper.load(ALL, [
      TAB,
      ...runtime('a', store.url),
      onTab({
        id: 'named-free',
        type: 'ss-lock',
        store: 'cfg-a',
        key: name,
        keyType: 'str',
        mode: 'lock',
        limit: String(LIMIT),
        action: 'release',
        wires: [['named-freed'], []],
      }),
      onTab({ id: 'named-freed', type: 'helper' }),
    ])
    listen(helper.getNode('a-work'), helper.getNode('named-freed'))
    helper.getNode('take-a').receive({ n: 1 })
    const m = await nextMessage(helper.getNode('a-work'))
    assert.equal((m.lock as Msg).name, `${name}/slot-${String(m.slot)}`)
    helper.getNode('named-free').receive(m)
    assert.equal((await nextMessage(helper.getNode('named-freed'))).released, true)
    await withClient(store.url, async (c) => assert.equal((await c.get(`${name}/slot-${String(m.slot)}`)).value, null))
  })

  it('a redeploy midway releases every slot held; the msgs waiting end quietly; the next deploy finds all slots free', async () => {
    const flow = [TAB, ...runtime('a', store.url)]
    await helper.load(ALL, flow)
    listen(helper.getNode('a-work'))
    for (let n = 0; n < LIMIT + 2; n++) helper.getNode('take-a').receive({ n })
    for (let i = 0; i < LIMIT; i++) await nextMessage(helper.getNode('a-work'))
    await helper.setFlows(flow, 'full')
    await withClient(store.url, async (c) => {
      for (let slot = 0; slot < LIMIT; slot++)
        assert.equal((await c.get(`${name}/slot-${slot}`)).value, null, `slot ${slot} released`)
    })
    listen(helper.getNode('a-work'))
    for (let n = 0; n < LIMIT; n++) helper.getNode('take-a').receive({ n: `after-${n}` })
    for (let i = 0; i < LIMIT; i++) assert.match(String((await nextMessage(helper.getNode('a-work'))).n), /^after-/)
  })
})

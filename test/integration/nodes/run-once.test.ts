/**
 * ss-lock's run-once mode wired as an active/active flow uses it: the same msgs delivered to two
 * runtimes at once (a shared subscription's redelivery, two flows on one topic), the work between the
 * claim and a completion node, a runtime cut off mid-work, a redeploy midway, claims that expire.
 */
import assert from 'node:assert/strict'
import { TcpRelay } from '../../support/relay'
import { scaled } from '../../support/deadline'
import { until } from '../../support/wait'
import { ALL, TAB, configNode, helper, listen, nextMessage, onTab, useStore, withClient } from './support'

type Msg = Record<string, unknown>

describe('ss-lock run once across two runtimes', function () {
  this.timeout(120_000)
  const store = useStore()
  let run = ''
  const relays: TcpRelay[] = []
  beforeEach(() => {
    run = Math.random().toString(36).slice(2)
  })
  afterEach(async () => {
    for (const r of relays.splice(0)) await r.stop()
  })

  /**
   * Runtime r: a run-once node `once-<r>` (blank Key: the id comes from the msg) into helper `<r>-work`
   * (output 1) and `<r>-dup` (output 2); a completion node `done-<r>` as dropped from the palette
   * (lease mode, blank name, action complete) into `<r>-completed` / `<r>-notCompleted`.
   */
  function runtime(r: string, url: string, settings: Msg = {}): unknown[] {
    return [
      configNode(url, { id: `cfg-${r}`, clientId: `once-${r}-${run}` }),
      onTab({
        id: `once-${r}`,
        type: 'ss-lock',
        store: `cfg-${r}`,
        key: '',
        keyType: 'str',
        mode: 'once',
        leaseMs: '1000',
        timeout: '20000',
        wires: [[`${r}-work`], [`${r}-dup`]],
        ...settings,
      }),
      onTab({ id: `${r}-work`, type: 'helper' }),
      onTab({ id: `${r}-dup`, type: 'helper' }),
      onTab({
        id: `done-${r}`,
        type: 'ss-lock',
        store: `cfg-${r}`,
        key: '',
        keyType: 'str',
        mode: 'lease',
        action: 'complete',
        wires: [[`${r}-completed`], [`${r}-notCompleted`]],
      }),
      onTab({ id: `${r}-completed`, type: 'helper' }),
      onTab({ id: `${r}-notCompleted`, type: 'helper' }),
    ]
  }

  /** An MQTT msg as the mqtt in node makes it: topic, payload, the publisher's user property `id`, a _msgid of this delivery. */
  const delivery = (n: number, extra: Msg = {}): Msg => ({
    topic: `orders/${run}`,
    payload: `order ${n}`,
    userProperties: { id: `${run}-${n}` },
    _msgid: Math.random().toString(16).slice(2),
    ...extra,
  })

  /** Every msg that reaches the helper `id`, as it came. */
  function collect(id: string): Msg[] {
    const got: Msg[] = []
    helper.getNode(id).on('input', (m: Msg) => got.push(m))
    return got
  }

  it('twenty msgs delivered to both runtimes at once: each is worked once; its twin waits for the completion and leaves as a done duplicate, naming who and when', async () => {
    await helper.load(ALL, [TAB, ...runtime('a', store.url), ...runtime('b', store.url)])
    const work = { a: collect('a-work'), b: collect('b-work') }
    const dups = collect('a-dup')
    const dupsB = collect('b-dup')
    const completed = collect('a-completed')
    const completedB = collect('b-completed')
    const count = 20
    for (let n = 0; n < count; n++) {
      helper.getNode('once-a').receive(delivery(n))
      helper.getNode('once-b').receive(delivery(n))
    }
    // The work: each msg that passed is completed by the completion node of its runtime, as a flow's last node would.
    const started = new Set<Msg>()
    await until(
      () => {
        for (const r of ['a', 'b'] as const)
          for (const m of work[r])
            if (!started.has(m)) {
              started.add(m)
              helper.getNode(`done-${r}`).receive(m)
            }
        return dups.length + dupsB.length === count
      },
      'every twin out by output 2',
      scaled(30_000),
    )
    const worked = [...work.a, ...work.b].map((m) => (m.userProperties as Msg).id).sort()
    assert.equal(worked.length, count, 'each msg worked once across the runtimes')
    assert.equal(new Set(worked).size, count, 'no msg worked twice')
    await until(() => completed.length + completedB.length === count, 'every claim completed')
    for (const m of [...work.a, ...work.b]) {
      assert.match(String(m.fencingToken), /^\d+:\d+:/, 'a first claim carries its token')
      assert.equal(m.claimed, true)
    }
    for (const d of [...dups, ...dupsB]) {
      assert.equal(d.duplicate, true)
      assert.equal(d.claimState, 'done', 'the twin waited for the work and saw it done')
      assert.match(String(d.claimedBy), /^once-[ab]-/, 'the duplicate names who claimed it')
      assert.ok(!Number.isNaN(Date.parse(String(d.claimedAt))), 'and when')
    }
  })

  it('a runtime cut off mid-work: its claim runs out, the redelivery in the other runtime claims it; the late completion is refused', async () => {
    const relayA = await TcpRelay.start(store.emulator.brokerUrl)
    relays.push(relayA)
    await helper.load(ALL, [TAB, ...runtime('a', relayA.url), ...runtime('b', store.url)])
    listen(
      helper.getNode('a-work'),
      helper.getNode('b-work'),
      helper.getNode('a-notCompleted'),
      helper.getNode('b-dup'),
    )
    helper.getNode('once-a').receive(delivery(1))
    const inWork = await nextMessage(helper.getNode('a-work'), 10_000)
    // Runtime a dies mid-work (its renewals no longer reach the store); the broker redelivers the msg to runtime b.
    relayA.cut()
    helper.getNode('once-b').receive(delivery(1))
    const redelivered = await nextMessage(helper.getNode('b-work'), 30_000)
    assert.equal((redelivered.userProperties as Msg).id, (inWork.userProperties as Msg).id)
    assert.notEqual(redelivered.fencingToken, inWork.fencingToken)
    // a's work ends after its claim ran out: the completion is refused, the flow learns it by output 2.
    helper.getNode('done-a').receive(inWork)
    const refused = await nextMessage(helper.getNode('a-notCompleted'), 10_000)
    assert.equal(refused.completed, false)
    relayA.restore()
  })

  it('a redeploy midway: a claim in work lapses and is claimed again; a completed id stays a duplicate after the deploy', async () => {
    const flow = [TAB, ...runtime('a', store.url)]
    await helper.load(ALL, flow)
    listen(helper.getNode('a-work'), helper.getNode('a-dup'), helper.getNode('a-completed'))
    helper.getNode('once-a').receive(delivery(1))
    helper.getNode('once-a').receive(delivery(2))
    const first = await nextMessage(helper.getNode('a-work'))
    const second = await nextMessage(helper.getNode('a-work'))
    const done = (first.userProperties as Msg).id === `${run}-1` ? first : second
    helper.getNode('done-a').receive(done)
    await nextMessage(helper.getNode('a-completed'))
    await helper.setFlows(flow, 'full')
    listen(helper.getNode('a-work'), helper.getNode('a-dup'))
    helper.getNode('once-a').receive(delivery(1))
    helper.getNode('once-a').receive(delivery(2))
    const again = await nextMessage(helper.getNode('a-work'), 30_000)
    assert.equal((again.userProperties as Msg).id, `${run}-2`, 'the claim left in work at the deploy is claimed again')
    const dup = await nextMessage(helper.getNode('a-dup'), 30_000)
    assert.deepEqual([(dup.userProperties as Msg).id, dup.claimState], [`${run}-1`, 'done'])
  })

  it('the id without a user property: the correlation data, else topic and payload, never _msgid or an earlier node’s msg.key', async () => {
    await helper.load(ALL, [TAB, ...runtime('a', store.url)])
    listen(helper.getNode('a-work'), helper.getNode('a-dup'), helper.getNode('a-completed'))
    const plain = (k: string): Msg => ({ topic: `t/${run}`, payload: Buffer.from('same'), key: k, _msgid: k })
    helper.getNode('once-a').receive(plain('x'))
    helper.getNode('done-a').receive(await nextMessage(helper.getNode('a-work')))
    await nextMessage(helper.getNode('a-completed'))
    helper.getNode('once-a').receive(plain('y'))
    const dup = await nextMessage(helper.getNode('a-dup'), 30_000)
    assert.equal(dup.duplicate, true, 'a second delivery (new _msgid, another msg.key) is the same msg')
    helper.getNode('once-a').receive({ ...plain('z'), correlationData: Buffer.from(run) })
    assert.equal((await nextMessage(helper.getNode('a-work'))).claimed, true, 'correlation data names another msg')
  })

  it('bounded: a completed claim is gone from the store after Keep done for', async () => {
    await helper.load(ALL, [TAB, ...runtime('a', store.url, { keepMs: '400' })])
    listen(helper.getNode('a-work'), helper.getNode('a-completed'))
    helper.getNode('once-a').receive(delivery(7))
    const m = await nextMessage(helper.getNode('a-work'))
    helper.getNode('done-a').receive(m)
    await nextMessage(helper.getNode('a-completed'))
    const key = (m.lock as Msg).name as string
    assert.match(key, /^once\/id\//)
    await withClient(store.url, async (c) => {
      assert.match(String((await c.get(key)).value), /"state":"done"/)
      await until(async () => (await c.get(key)).value === null, 'the done claim expired', scaled(10_000), 50)
    })
  })
})

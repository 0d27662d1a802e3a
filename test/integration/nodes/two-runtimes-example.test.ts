/**
 * The "fenced out" function of the two-runtimes examples (examples/two-runtimes/), run as shipped.
 * From the chaos run (seed 20261125, round 1, Node-RED workload): writes queued during an outage
 * with the runtime's old token came back refused after it had acquired again with a newer one, and
 * "fenced out" cleared the new token: the holder kept the lock, renewed it and never wrote again,
 * so neither runtime worked. A refusal clears the token only when the refused write carried it.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { until } from '../../support/wait'
import { ALL, helper, listen, nextMessage, redModule, statuses, useStore } from './support'

const FUNCTION = redModule('@node-red/nodes/core/function/10-function.js')
const INJECT = redModule('@node-red/nodes/core/common/20-inject.js')
const COMMENT = redModule('@node-red/nodes/core/common/90-comment.js')

type FlowNode = Record<string, unknown> & { id: string; type: string; name?: string }
/** What the test uses of a running function node: its input and its flow context. */
interface FunctionNode {
  receive(msg: object): void
  context(): { flow: { get(key: string): unknown; set(key: string, value: unknown): void } }
}

describe('examples/two-runtimes: "fenced out"', function () {
  afterEach(() => helper.unload())

  for (const file of ['active-standby-lock.json', 'active-standby-leader.json']) {
    it(`${file}: a refused write with an older token of its own keeps the current token; one with the current token stops the writing`, async () => {
      const example = JSON.parse(
        readFileSync(join(__dirname, '..', '..', '..', 'examples', 'two-runtimes', file), 'utf8'),
      ) as FlowNode[]
      const fencedOut = example.find((n) => n.type === 'function' && n.name === 'fenced out')!
      const tab = example.find((n) => n.type === 'tab')!
      await helper.load([FUNCTION], [tab, { ...fencedOut, wires: [['out']] }, { id: 'out', type: 'helper', z: tab.id }])
      const node = helper.getNode(fencedOut.id) as unknown as FunctionNode
      const flow = node.context().flow
      flow.set('token', 'new')
      const refused = (token: string) => ({
        fencingToken: token,
        error: { code: 'FencingTokenLowerVersion', message: 'refused' },
      })

      node.receive(refused('old'))
      await nextMessage(helper.getNode('out'))
      assert.equal(flow.get('token'), 'new', 'a late refusal of an older write leaves the current token')

      node.receive(refused('new'))
      await nextMessage(helper.getNode('out'))
      assert.equal(flow.get('token'), null, 'a refusal of a write with the current token stops the writing')
    })
  }
})

describe('examples/two-runtimes: the lock example stands by again after any failed wait', function () {
  this.timeout(90_000)
  const store = useStore()
  afterEach(() => store.proxy.restore())

  it('a wait that never saw the store connected fails NotConnected, goes back to standby, and the runtime becomes active once the store is back', async () => {
    // From the chaos run (seed 202, --load 8): a runtime whose connection was down for all of a
    // wait got NotConnected from the lock, which no Catch node took, and it never stood by again.
    const example = JSON.parse(
      readFileSync(join(__dirname, '..', '..', '..', 'examples', 'two-runtimes', 'active-standby-lock.json'), 'utf8'),
    ) as FlowNode[]
    // The test helper loads the Catch node once per catch in the flow and fails on the second: the
    // writing side's "write refused" Catch, which this test does not reach, stays out.
    const flow = example
      .filter((n) => n.name !== 'write refused')
      .map((n) => {
        if (n.type === 'ss-config') return { ...n, broker: store.url }
        // The test watches "became active" in place of the Debug node.
        if (n.type === 'debug') return { id: n.id, type: 'helper', z: n.z, x: n.x, y: n.y, wires: [] }
        return n
      })
    const standby = example.find((n) => n.name === 'standby, wait again')!
    const active = example.find((n) => n.name === 'became active')!
    store.proxy.cut()
    await helper.load([FUNCTION, INJECT, COMMENT, ...ALL], flow)
    listen(helper.getNode(active.id))
    const standingBy = () => statuses(helper.getNode(standby.id)).filter((st) => st.text === 'standby').length
    await until(() => standingBy() >= 2, 'two waits without a connection to fail and go back to standby', 30_000)
    store.proxy.restore()
    const became = await nextMessage(helper.getNode(active.id), 30_000)
    assert.match(String(became.fencingToken), /^\d+:\d+:/, 'acquired, with a fencing token')
  })
})

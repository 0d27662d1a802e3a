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
import { helper, nextMessage, redModule } from './support'

const FUNCTION = redModule('@node-red/nodes/core/function/10-function.js')

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
      const example = JSON.parse(readFileSync(join(__dirname, '..', '..', 'examples', 'two-runtimes', file), 'utf8')) as FlowNode[]
      const fencedOut = example.find((n) => n.type === 'function' && n.name === 'fenced out')!
      const tab = example.find((n) => n.type === 'tab')!
      await helper.load([FUNCTION], [tab, { ...fencedOut, wires: [['out']] }, { id: 'out', type: 'helper', z: tab.id }])
      const node = helper.getNode(fencedOut.id) as unknown as FunctionNode
      const flow = node.context().flow
      flow.set('token', 'new')
      const refused = (token: string) => ({ fencingToken: token, error: { code: 'FencingTokenLowerVersion', message: 'refused' } })

      node.receive(refused('old'))
      await nextMessage(helper.getNode('out'))
      assert.equal(flow.get('token'), 'new', 'a late refusal of an older write leaves the current token')

      node.receive(refused('new'))
      await nextMessage(helper.getNode('out'))
      assert.equal(flow.get('token'), null, 'a refusal of a write with the current token stops the writing')
    })
  }
})

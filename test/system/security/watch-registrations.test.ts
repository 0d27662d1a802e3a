import assert from 'node:assert/strict'
import { onTab, withNodeRed } from '../../support/node-red-fixture'
import { debugValue } from '../../support/node-red-comms'

const PER_NODE = 40
const PER_CONNECTION = 60
const SENT = 500

/**
 * Watch registrations through msgs had no count bound (4,540 and growing from one flow). In a real
 * runtime: one watch keys node asked for hundreds of distinct keys watches its bound and no more,
 * the msgs past it fail `WatchLimit` to the Catch node, and a second node on the same connection is
 * held to what the connection has left.
 */
describe('security: watch registrations through msgs are bounded per node and per connection', function () {
  this.timeout(300_000)
  const runtime = withNodeRed({
    name: 'watchregs',
    flows,
    aioStateStore: { maxWatchesPerNode: PER_NODE, maxWatchesPerConnection: PER_CONNECTION },
  })

  async function watched(): Promise<string[]> {
    const res = await fetch(`${runtime.red.url}/aio-statestore/stores`)
    const body = (await res.json()) as { stores: Array<{ watches: Array<{ key: string; observers: string[] }> }> }
    return body.stores[0]!.watches.map((w) => w.key)
  }

  async function flood(inject: string, prefix: string): Promise<{ refused: number; codes: Set<string> }> {
    const seen = runtime.comms.debug.length
    assert.equal((await fetch(`${runtime.red.url}/inject/${inject}`, { method: 'POST' })).status, 200)
    const done = await runtime.comms.waitFor(
      (all) => all.slice(seen).find((m) => m.id === `${prefix}-tally`),
      120_000,
      `${prefix}'s tally`,
    )
    const tally = debugValue(done) as { refused: number; codes: string[] }
    return { refused: tally.refused, codes: new Set(tally.codes) }
  }

  it(`${SENT} watch msgs at one node: ${PER_NODE} keys watched, the rest WatchLimit`, async () => {
    const a = await flood('go-a', 'a')
    assert.deepEqual([...a.codes], ['WatchLimit'])
    assert.equal(a.refused, SENT - PER_NODE)
    assert.equal((await watched()).filter((k) => k.startsWith('a/')).length, PER_NODE)
  })

  it(`a second node on the connection gets what is left of its ${PER_CONNECTION}`, async () => {
    const b = await flood('go-b', 'b')
    assert.deepEqual([...b.codes], ['WatchLimit'])
    assert.equal(b.refused, SENT - (PER_CONNECTION - PER_NODE))
    assert.equal((await watched()).length, PER_CONNECTION)
    assert.equal((await fetch(`${runtime.red.url}/settings`)).status, 200)
  })
})

function flows(broker: string): unknown[] {
  const chain = (p: string) => [
    { id: `go-${p}`, type: 'inject', props: [], wires: [[`${p}-names`]] },
    {
      id: `${p}-names`,
      type: 'function',
      outputs: 1,
      func: `for (let i = 0; i < ${SENT}; i++) node.send({ action: 'watch', topic: '${p}/' + i })\nreturn null`,
      wires: [[`${p}-watch`]],
    },
    { id: `${p}-watch`, type: 'ss-watch', store: 'cfg', keys: '', decode: 'auto', overrides: true, wires: [[]] },
    { id: `${p}-catch`, type: 'catch', scope: [`${p}-watch`], uncaught: false, wires: [[`${p}-sum`]] },
    {
      id: `${p}-count`,
      type: 'complete',
      scope: [`${p}-watch`],
      uncaught: false,
      wires: [[`${p}-sum`]],
    },
    {
      id: `${p}-sum`,
      type: 'function',
      outputs: 1,
      func: `const t = context.get('t') || { n: 0, refused: 0, codes: [] }\nt.n += 1\nif (msg.error) { t.refused += 1; if (!t.codes.includes(msg.error.code)) t.codes.push(msg.error.code) }\ncontext.set('t', t)\nreturn t.n === ${SENT} ? { payload: { refused: t.refused, codes: t.codes } } : null`,
      wires: [[`${p}-tally`]],
    },
    { id: `${p}-tally`, type: 'debug', active: true, tosidebar: true, complete: 'payload', wires: [] },
  ]
  return [
    { id: 'tab', type: 'tab', label: 'watch regs' },
    { id: 'cfg', type: 'ss-config', name: 'store', broker, clientId: 'watchregs-red' },
    ...[...chain('a'), ...chain('b')].map(onTab),
  ]
}

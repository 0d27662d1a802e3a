import assert from 'node:assert/strict'
import type { StateStoreClient } from '../../../src/client'
import { SCHEMAS } from '../../../nodes/config/schemas'
import {
  ALL,
  configNode,
  helper,
  nextMessage,
  noMessage,
  onTab,
  redModule,
  statuses,
  TAB,
  useStore,
  withClient,
} from './support'
import { until } from '../../support/wait'

/**
 * Our nodes chained with each other and with core nodes, every node on the settings it has when
 * dropped from the palette (a lock node needs its Lock name, a watch node its keys). The store is
 * read afterwards: each node must have read and written the key its own settings name, never one an
 * upstream state store node left on the msg.
 */

const CORE = [
  redModule('@node-red/nodes/core/function/10-function.js'),
  redModule('@node-red/nodes/core/function/15-change.js'),
  redModule('@node-red/nodes/core/sequence/17-split.js'),
  redModule('@node-red/nodes/core/common/60-link.js'),
  redModule('@node-red/nodes/core/common/25-catch.js'),
]

type Flow = Array<Record<string, unknown>>
type Step = 'get' | 'set' | 'delete' | 'acquire' | 'release' | 'update' | 'watch'
type Connector = 'change' | 'function' | 'split/join' | 'link'

const FIRST: readonly Step[] = ['get', 'set', 'delete', 'acquire', 'release', 'update', 'watch']
/** A watch node takes only control msgs (msg.action): as the second node of a pair it has nothing to read. */
const SECOND: readonly Step[] = ['get', 'set', 'delete', 'acquire', 'release', 'update']
const CONNECTORS: readonly Connector[] = ['change', 'function', 'split/join', 'link']

/** The msg properties an override option reads (set key's, lock's, watch keys'): no state store node may leave one. */
const OPTIONS = ['condition', 'expiry', 'persist', 'action'] as const

const TYPE: Record<Step, keyof typeof SCHEMAS> = {
  get: 'ss-get',
  set: 'ss-set',
  delete: 'ss-del',
  acquire: 'ss-lock',
  release: 'ss-lock',
  update: 'ss-update',
  watch: 'ss-watch',
}

/** A node as the editor drops it: every setting at its schema default. */
function dropped(step: Step): Record<string, unknown> {
  const defaults = SCHEMAS[TYPE[step]].defaults as Record<string, { value?: unknown }>
  const settings = Object.fromEntries(Object.entries(defaults).map(([name, d]) => [name, d.value]))
  return { ...settings, type: TYPE[step], store: 'cfg' }
}

/** What each step needs beyond the defaults: the lock name and the watched key are required. */
function stepNode(step: Step, id: string, key: string, wires: string[]): Record<string, unknown> {
  const node = { ...dropped(step), id }
  if (step === 'acquire' || step === 'release') Object.assign(node, { key, action: step })
  if (step === 'watch') Object.assign(node, { keys: key })
  const outputs = step === 'acquire' || step === 'release' ? 2 : 1
  return onTab({ ...node, wires: Array.from({ length: outputs }, () => wires) })
}

/** The core nodes between the two: each ends with msg.topic naming the second node's key, as a user wires it. */
function connector(kind: Connector, id: string, key: string, next: string): Flow {
  const topic = { t: 'set', p: 'topic', pt: 'msg', to: key, tot: 'str' }
  switch (kind) {
    case 'change':
      return [onTab({ id, type: 'change', rules: [topic], wires: [[next]] })]
    case 'function':
      return [
        onTab({
          id,
          type: 'function',
          func: `msg.topic = ${JSON.stringify(key)};\nreturn msg;`,
          outputs: 1,
          wires: [[next]],
        }),
      ]
    case 'split/join':
      return [
        onTab({
          id,
          type: 'change',
          rules: [topic, { t: 'set', p: 'payload', pt: 'msg', to: '["part 1","part 2"]', tot: 'json' }],
          wires: [[`${id}-split`]],
        }),
        onTab({
          id: `${id}-split`,
          type: 'split',
          splt: '\\n',
          spltType: 'str',
          arraySplt: 1,
          arraySpltType: 'len',
          stream: false,
          addname: '',
          wires: [[`${id}-join`]],
        }),
        onTab({
          id: `${id}-join`,
          type: 'join',
          mode: 'auto',
          build: 'object',
          property: 'payload',
          propertyType: 'msg',
          key: 'topic',
          joiner: '\\n',
          joinerType: 'str',
          accumulate: false,
          timeout: '',
          count: '',
          wires: [[next]],
        }),
      ]
    case 'link':
      return [
        onTab({ id, type: 'link out', mode: 'link', links: [`${id}-in`], wires: [] }),
        onTab({ id: `${id}-in`, type: 'link in', links: [id], wires: [[`${id}-topic`]] }),
        onTab({ id: `${id}-topic`, type: 'change', rules: [topic], wires: [[next]] }),
      ]
  }
}

interface Chain {
  id: string
  first: Step
  second: Step
  via: Connector
  a: string
  b: string
}

const chains: Chain[] = FIRST.flatMap((first) =>
  SECOND.flatMap((second) =>
    CONNECTORS.map((via, v) => {
      const id = `${first}-${second}-${v}`
      return { id, first, second, via, a: `chain/${id}/a`, b: `chain/${id}/b` }
    }),
  ),
)

function chainFlow(c: Chain): Flow {
  return [
    stepNode(c.first, `${c.id}:A`, c.a, [`${c.id}:via`, `${c.id}:tapA`]),
    ...connector(c.via, `${c.id}:via`, c.b, `${c.id}:B`),
    stepNode(c.second, `${c.id}:B`, c.b, [`${c.id}:tapB`]),
    onTab({ id: `${c.id}:tapA`, type: 'helper' }),
    onTab({ id: `${c.id}:tapB`, type: 'helper' }),
  ]
}

/** A value as the nodes' codec stores it, read back: JSON when it parses, else the UTF-8 text. */
function decoded(value: Buffer | null): unknown {
  if (value === null) return undefined
  try {
    return JSON.parse(value.toString('utf8'))
  } catch {
    return value.toString('utf8')
  }
}

/** The lease holder a lock node writes with its Holder left blank: `<client id>/<node id>`. */
const holderOf = (clientId: string, nodeId: string): string => `${clientId}/${nodeId}`

/** The store before the msg: what the first node reads or releases, and what the second one does. */
async function prepare(c: StateStoreClient, chain: Chain, clientId: string): Promise<void> {
  const before: Partial<Record<Step, (key: string, nodeId: string) => Buffer>> = {
    get: (key) => Buffer.from(`value of ${key}`),
    delete: () => Buffer.from('value it should delete'),
    update: () => Buffer.from('40'),
    release: (_key, nodeId) => Buffer.from(holderOf(clientId, nodeId)),
  }
  const first = before[chain.first]
  const second = before[chain.second]
  if (first) await c.set(chain.a, first(chain.a, `${chain.id}:A`))
  if (second) await c.set(chain.b, second(chain.b, `${chain.id}:B`))
}

/** What the key holds afterwards when the step did its work on it, given the msg the step sent. */
function expectedAfter(
  step: Step,
  key: string,
  nodeId: string,
  clientId: string,
  sent: Record<string, unknown>,
  watched: string,
): unknown {
  switch (step) {
    case 'get':
      return `value of ${key}`
    case 'set':
      return sent.payload
    case 'delete':
    case 'release':
      return undefined
    case 'acquire':
      return holderOf(clientId, nodeId)
    case 'update':
      return 41
    case 'watch':
      return watched
  }
}

describe('nodes: chains of our nodes and core nodes, on default settings', function () {
  this.timeout(120_000)
  const store = useStore()

  it(`every pair of palette nodes, through change, function, split/join and link nodes, reads and writes its own key (${chains.length} chains at once)`, async () => {
    const flow: Flow = [
      TAB,
      configNode(store.url),
      ...chains.flatMap(chainFlow),
      onTab({ id: 'catcher', type: 'catch', scope: null, uncaught: false, wires: [['caught']] }),
      onTab({ id: 'caught', type: 'helper' }),
    ]
    await helper.load([...ALL, ...CORE], flow)
    const clientId = (helper.getNode('cfg') as unknown as { clientId: string }).clientId
    const watched = 'the value the watch node saw'
    await withClient(store.url, async (c) => {
      for (const chain of chains) await prepare(c, chain, clientId)
      // A watch node says it watches once its registration is in; only then can a change reach it.
      const watches = chains.filter((ch) => ch.first === 'watch').map((ch) => helper.getNode(`${ch.id}:A`))
      await until(
        () => watches.every((w) => statuses(w).some((s) => String(s.text).includes('status.watching'))),
        'every watch node watching',
      )

      // What each node of each chain sent, or the error it gave Catch: every node answers one way or the other.
      const sent = new Map<string, Record<string, unknown>>()
      const failed = new Map<string, string>()
      for (const ch of chains) {
        for (const tap of ['A', 'B'])
          helper
            .getNode(`${ch.id}:tap${tap}`)
            .on('input', (m: Record<string, unknown>) => sent.set(`${ch.id}:${tap}`, m))
      }
      helper.getNode('caught').on('input', (m: Record<string, unknown>) => {
        const error = m.error as { source?: { id?: string }; code?: string; message?: string }
        failed.set(String(error.source?.id), `${error.code}: ${error.message}`)
      })
      // Every chain at once, as a busy flow sends them.
      for (const ch of chains)
        if (ch.first !== 'watch') helper.getNode(`${ch.id}:A`).receive({ topic: ch.a, payload: `sent into ${ch.id}` })
      await Promise.all(chains.filter((ch) => ch.first === 'watch').map((ch) => c.set(ch.a, Buffer.from(watched))))
      const answered = (ch: Chain) =>
        ['A', 'B'].every(
          (n) => sent.has(`${ch.id}:${n}`) || failed.has(`${ch.id}:${n}`) || (n === 'B' && failed.has(`${ch.id}:A`)),
        )
      await until(() => chains.every(answered), 'every node of every chain sent its msg or failed', 30_000)

      const wrong: string[] = [...failed].map(([node, error]) => `${node} failed: ${error}`)
      for (const ch of chains) {
        const a = sent.get(`${ch.id}:A`)
        const b = sent.get(`${ch.id}:B`)
        if (!a || !b) continue
        // Options: no node leaves a property that is another node's override or its default fencing token unasked.
        for (const [node, m] of [['A', a] as const, ['B', b] as const]) {
          const step = node === 'A' ? ch.first : ch.second
          for (const option of OPTIONS)
            if (m[option] !== undefined) wrong.push(`${ch.id}: the ${step} node left msg.${option}`)
          if (step === 'update' && m.fencingToken !== undefined && ch.first !== 'acquire')
            wrong.push(`${ch.id}: the update node left msg.fencingToken`)
        }
        // Reads: the value a reading node sends is the value of the key it should have read.
        if (ch.first === 'get' && a.payload !== `value of ${ch.a}`)
          wrong.push(`${ch.id}: the first get read ${JSON.stringify(a.payload)}`)
        if (ch.second === 'get' && b.payload !== `value of ${ch.b}`)
          wrong.push(`${ch.id}: the second get read ${JSON.stringify(b.payload)}`)
        // Writes: the store holds what each node should have done to its own key, and nothing else.
        const expected = new Map<string, unknown>([
          [ch.a, expectedAfter(ch.first, ch.a, `${ch.id}:A`, clientId, a, watched)],
          [ch.b, expectedAfter(ch.second, ch.b, `${ch.id}:B`, clientId, b, watched)],
        ])
        const listed: string[] = []
        for await (const page of c.scan(`chain/${ch.id}/*`)) listed.push(...page)
        for (const key of listed) if (!expected.has(key)) wrong.push(`${ch.id}: wrote ${key}`)
        for (const [key, value] of expected) {
          const stored = decoded((await c.get(key)).value)
          if (JSON.stringify(stored) !== JSON.stringify(value))
            wrong.push(`${ch.id}: ${key} holds ${JSON.stringify(stored)}, expected ${JSON.stringify(value)}`)
        }
        // A write with no lock upstream stays unfenced: a plain write of the key afterwards is not refused.
        if (ch.second === 'set' && ch.first !== 'acquire') {
          try {
            await c.set(ch.b, Buffer.from('a plain write afterwards'))
          } catch (err) {
            wrong.push(`${ch.id}: a plain write of ${ch.b} afterwards fails: ${(err as { code?: string }).code}`)
          }
        }
      }
      assert.deepEqual(wrong, [])
    })
  })

  it('get key (fixed key a) → change (msg.topic = b) → set key (defaults) writes b and leaves a alone', async () => {
    await helper.load(
      [...ALL, ...CORE],
      [
        TAB,
        configNode(store.url),
        onTab({ ...dropped('get'), id: 'get', key: 'issue/a', keyType: 'str', wires: [['topic']] }),
        onTab({
          id: 'topic',
          type: 'change',
          rules: [{ t: 'set', p: 'topic', pt: 'msg', to: 'issue/b', tot: 'str' }],
          wires: [['set']],
        }),
        onTab({ ...dropped('set'), id: 'set', wires: [['written']] }),
        onTab({ id: 'written', type: 'helper' }),
      ],
    )
    await withClient(store.url, async (c) => {
      await c.set('issue/a', Buffer.from('"a stays"'))
      const written = nextMessage(helper.getNode('written'))
      helper.getNode('get').receive({ payload: 'ignored' })
      await written
      assert.equal((await c.get('issue/a')).value?.toString(), '"a stays"')
      assert.equal((await c.get('issue/b')).value?.toString(), 'a stays', 'b holds the value read from a')
    })
  })

  it('update key → change (msg.topic = its own key) → set key writes its own key, unfenced, and leaves the sequence alone', async () => {
    await helper.load(
      [...ALL, ...CORE],
      [
        TAB,
        configNode(store.url),
        onTab({ ...dropped('update'), id: 'seq', wires: [['topic']] }),
        onTab({
          id: 'topic',
          type: 'change',
          rules: [
            { t: 'set', p: 'topic', pt: 'msg', to: '"orders/" & $string(payload)', tot: 'jsonata' },
            { t: 'set', p: 'payload', pt: 'msg', to: '{"state":"new"}', tot: 'json' },
          ],
          wires: [['set']],
        }),
        onTab({ ...dropped('set'), id: 'set', wires: [['written']] }),
        onTab({ id: 'written', type: 'helper' }),
        onTab({ id: 'catcher', type: 'catch', scope: null, uncaught: false, wires: [['caught']] }),
        onTab({ id: 'caught', type: 'helper' }),
      ],
    )
    await withClient(store.url, async (c) => {
      for (let n = 1; n <= 3; n++) {
        const written = nextMessage(helper.getNode('written'))
        helper.getNode('seq').receive({ topic: 'orders/sequence' })
        assert.equal((await written).key, `orders/${n}`)
      }
      await noMessage(helper.getNode('caught'), 50)
      assert.equal((await c.get('orders/sequence')).value?.toString(), '3', 'the sequence counts, never overwritten')
      for (let n = 1; n <= 3; n++) {
        assert.equal((await c.get(`orders/${n}`)).value?.toString(), '{"state":"new"}')
        // Fenced with the update's lock token, the key would refuse a plain write (MissingFencingToken).
        assert.equal((await c.set(`orders/${n}`, Buffer.from('{"state":"paid"}'))).applied, true)
      }
    })
  })
})

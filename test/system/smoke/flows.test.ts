// How `npm start` turns examples/*.json into one flow file (dev/flows.js).
import { strict as assert } from 'node:assert'
import { join } from 'node:path'
import {
  firesByItself,
  mergeExamples,
  pointAtBroker,
  quietExamples,
  readExamples,
  type FlowNodeLike,
} from '../../../dev/flows'
import { repoRoot } from './node-red'

const config = { id: 'cfg', type: 'ss-config', name: 'local', broker: 'mqtt://127.0.0.1:1883', embedded: false }

function example(tab: string, ids: [string, string, string], withTab = true): FlowNodeLike[] {
  return [
    ...(withTab ? [{ id: tab, type: 'tab', label: tab }] : []),
    { id: ids[0], type: 'inject', z: tab, wires: [[ids[1]]] },
    { id: ids[1], type: 'ss-get', z: tab, store: 'cfg', wires: [[ids[2]]] },
    { id: ids[2], type: 'debug', z: tab, wires: [] },
    { ...config },
  ]
}

describe('examples: importing several side by side', function () {
  it('shares no node id between two example files, config nodes included (no "nodes already exist" dialog), and npm start still merges them into one config node', function () {
    const dirs = [join(repoRoot, 'examples'), join(repoRoot, 'examples', 'two-runtimes')]
    const files = dirs.flatMap((dir) => readExamples(dir))
    assert.ok(files.length >= 10, `every example file: ${files.map((f) => f.name).join(', ')}`)
    const seen = new Map<string, string>()
    for (const { name, nodes } of files) {
      for (const node of nodes) {
        const other = seen.get(node.id)
        assert.ok(other === undefined || other === name, `${node.id} (${node.type}) is in both ${other} and ${name}`)
        seen.set(node.id, name)
      }
    }
    const merged = mergeExamples(readExamples(dirs[0]!))
    assert.equal(merged.filter((n) => n.type === 'ss-config').length, 1, 'their config nodes are equal but for the id')
  })
})

describe('dev/flows: seeding the example flows', function () {
  it('keeps the shared config node once and every tab', function () {
    const merged = mergeExamples([
      { name: 'a', nodes: example('ta', ['a1', 'a2', 'a3']) },
      { name: 'b', nodes: example('tb', ['b1', 'b2', 'b3']) },
    ])
    assert.deepEqual(
      merged.filter((n) => n.type === 'ss-config'),
      [config],
    )
    assert.deepEqual(
      merged.filter((n) => n.type === 'tab').map((n) => n.id),
      ['ta', 'tb'],
    )
    assert.equal(merged.length, 9)
  })

  it('merges equal config nodes with different ids and rewires their users', function () {
    const b = example('tb', ['b1', 'b2', 'b3']).map((n) =>
      n.id === 'cfg' ? { ...n, id: 'cfg2' } : n.store ? { ...n, store: 'cfg2' } : n,
    )
    const merged = mergeExamples([
      { name: 'a', nodes: example('ta', ['a1', 'a2', 'a3']) },
      { name: 'b', nodes: b },
    ])
    assert.equal(merged.filter((n) => n.type === 'ss-config').length, 1)
    assert.equal(merged.find((n) => n.id === 'b2')?.store, 'cfg')
  })

  it('keeps different config nodes apart, renaming a clashing id', function () {
    const b = example('tb', ['b1', 'b2', 'b3']).map((n) => (n.id === 'cfg' ? { ...n, name: 'other' } : n))
    const merged = mergeExamples([
      { name: 'a', nodes: example('ta', ['a1', 'a2', 'a3']) },
      { name: 'b', nodes: b },
    ])
    const configs = merged.filter((n) => n.type === 'ss-config')
    assert.equal(configs.length, 2)
    const other = configs.find((n) => n.name === 'other')!
    assert.notEqual(other.id, 'cfg')
    assert.equal(merged.find((n) => n.id === 'b2')?.store, other.id)
  })

  it('renames clashing flow nodes and their wires', function () {
    const merged = mergeExamples([
      { name: 'a', nodes: example('ta', ['n1', 'n2', 'n3']) },
      { name: 'b', nodes: example('tb', ['n1', 'n2', 'n3']) },
    ])
    const ids = merged.map((n) => n.id)
    assert.equal(new Set(ids).size, ids.length)
    const inB = merged.filter((n) => n.z === 'tb')
    const find = (type: string) => {
      const node = inB.find((n) => n.type === type)
      assert.ok(node, `${type} in tab tb`)
      return node
    }
    const [inject, get, debug] = [find('inject'), find('ss-get'), find('debug')]
    assert.deepEqual(inject.wires, [[get.id]])
    assert.deepEqual(get.wires, [[debug.id]])
    assert.equal(get.store, 'cfg')
  })

  it('gives an example exported without a tab its own tab, named after the file', function () {
    const merged = mergeExamples([{ name: 'counter', nodes: example('gone', ['a1', 'a2', 'a3'], false) }])
    const tab = merged.find((n) => n.type === 'tab')!
    assert.equal(tab.label, 'counter')
    assert.ok(merged.filter((n) => n.type !== 'tab' && n.type !== 'ss-config').every((n) => n.z === tab.id))
  })

  it('is deterministic', function () {
    const input = () => [
      { name: 'a', nodes: example('ta', ['n1', 'n2', 'n3']) },
      { name: 'b', nodes: example('tb', ['n1', 'n2', 'n3']) },
    ]
    assert.deepEqual(mergeExamples(input()), mergeExamples(input()))
  })

  it('points every config node at a broker, leaving the input alone', function () {
    const nodes = example('ta', ['a1', 'a2', 'a3'])
    const pointed = pointAtBroker(nodes, 'mqtt://127.0.0.1:9999')
    assert.equal(pointed.find((n) => n.type === 'ss-config')?.broker, 'mqtt://127.0.0.1:9999')
    assert.equal(nodes.find((n) => n.type === 'ss-config')?.broker, 'mqtt://127.0.0.1:1883')
  })

  it('makes the examples quiet for npm start: no inject fires at deploy, repeats or runs at a time of day, and a first tab names the buttons that start each', function () {
    const examples = readExamples(join(repoRoot, 'examples'))
    const merged = mergeExamples(examples)
    const starters = merged.filter((n) => n.type === 'inject' && firesByItself(n))
    assert.ok(starters.length > 0, 'the shipped examples press some buttons at deploy')
    assert.ok(
      starters.some((n) => n.repeat) && starters.some((n) => n.crontab),
      'the shipped examples have a repeating inject and one at a time of day',
    )
    const quiet = quietExamples(merged)
    assert.deepEqual(
      quiet.filter((n) => n.type === 'inject' && (n.once === true || n.repeat || n.crontab)),
      [],
      'none fires by itself',
    )
    assert.equal(quiet.length, merged.length + 2, 'nothing lost: one tab and one comment more')
    const [tab, comment] = quiet
    assert.equal(tab?.type, 'tab')
    assert.equal(comment?.type, 'comment')
    assert.equal(comment?.z, tab?.id)
    for (const n of starters)
      assert.ok(String(comment?.info).includes(`**${String(n.name)}**`), `the first tab names ${String(n.name)}`)
  })
})

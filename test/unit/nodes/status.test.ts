import assert from 'node:assert/strict'
import type { Node, NodeStatus } from 'node-red'
import { StatusView } from '../../../nodes/lib/status'
import type { Translate } from '../../../nodes/lib/i18n'
import { ConnectionError, TimeoutError } from '../../../src/diagnostics/errors'

/** A node that records every status set on it, and a translator that counts its lookups. */
function setup() {
  const shown: NodeStatus[] = []
  const node = { status: (s: NodeStatus) => shown.push(s) } as unknown as Node
  const lookups: string[] = []
  const t: Translate = (key, substitutions) => {
    lookups.push(key)
    return `<${key}>${substitutions ? JSON.stringify(substitutions) : ''}`
  }
  return { view: new StatusView(node, t), shown, lookups }
}

describe('nodes: status view', () => {
  it('sets a repeated outcome once and translates each text once', () => {
    const { view, shown, lookups } = setup()
    view.onConnection({ state: 'connected' })
    for (let i = 0; i < 100; i++) view.outcome('status.found')
    assert.deepEqual(shown, [
      { fill: 'green', shape: 'dot', text: '<node-red:common.status.connected>' },
      { fill: 'green', shape: 'dot', text: '<status.found>' },
    ])
    assert.deepEqual(lookups, ['node-red:common.status.connected', 'status.found'])
  })

  it('shows every change of outcome at once, and only the changes', () => {
    const { view, shown, lookups } = setup()
    view.onConnection({ state: 'connected' })
    const sequence = [
      'status.found',
      'status.found',
      'status.notFound',
      'status.found',
      'status.notFound',
      'status.notFound',
    ]
    for (const key of sequence) view.outcome(key)
    assert.deepEqual(
      shown.slice(1).map((s) => s.text),
      ['<status.found>', '<status.notFound>', '<status.found>', '<status.notFound>'],
    )
    assert.equal(lookups.filter((k) => k === 'status.found').length, 1)
  })

  it('shows a detail that changes (a key name) every time it changes', () => {
    const { view, shown } = setup()
    view.onConnection({ state: 'connected' })
    view.outcome('status.changed', 'a')
    view.outcome('status.changed', 'a')
    view.outcome('status.changed', 'b')
    view.outcome('status.changed', 'a-very-long-key-name')
    assert.deepEqual(
      shown.slice(1).map((s) => s.text),
      ['<status.changed> a', '<status.changed> b', '<status.changed> a-very-long…'],
    )
  })

  it('shows a connection change at once, and the same outcome again in the new colour', () => {
    const { view, shown } = setup()
    view.onConnection({ state: 'connected' })
    view.outcome('status.applied')
    view.onConnection({ state: 'reconnecting' })
    view.onConnection({ state: 'connecting' }) // looks the same: nothing new to show
    view.outcome('status.applied')
    view.onConnection({ state: 'disconnected', reason: 'broker gone' })
    view.outcome('status.applied')
    view.onConnection({ state: 'connected' })
    view.outcome('status.applied')
    view.outcome('status.applied')
    assert.deepEqual(shown, [
      { fill: 'green', shape: 'dot', text: '<node-red:common.status.connected>' },
      { fill: 'green', shape: 'dot', text: '<status.applied>' },
      { fill: 'yellow', shape: 'ring', text: '<node-red:common.status.connecting>' },
      { fill: 'red', shape: 'ring', text: '<status.applied>' },
      { fill: 'red', shape: 'ring', text: '<node-red:common.status.disconnected>: broker gone' },
      { fill: 'red', shape: 'ring', text: '<status.applied>' },
      { fill: 'green', shape: 'dot', text: '<node-red:common.status.connected>' },
      { fill: 'green', shape: 'dot', text: '<status.applied>' },
    ])
  })

  it('shows a failure once while it repeats, and the next success at once', () => {
    const { view, shown } = setup()
    view.onConnection({ state: 'connected' })
    view.outcome('status.found')
    view.failure(new TimeoutError(1000))
    view.failure(new TimeoutError(1000))
    view.failure(new ConnectionError('NotConnected', 'gone'))
    view.outcome('status.found')
    assert.deepEqual(shown.slice(2), [
      // The failure's short name from the catalogue, its kind when the catalogue has none.
      {
        fill: 'red',
        shape: 'dot',
        text: '<node-red:common.status.error>: <failure.Timeout>{"defaultValue":"timeout"}',
      },
      {
        fill: 'red',
        shape: 'dot',
        text: '<node-red:common.status.error>: <failure.NotConnected>{"defaultValue":"connection"}',
      },
      { fill: 'green', shape: 'dot', text: '<status.found>' },
    ])
  })

  it('shows a configuration problem even before any connection', () => {
    const { view, shown } = setup()
    view.misconfigured('status.noConfig')
    view.misconfigured('status.noConfig')
    assert.deepEqual(shown, [{ fill: 'red', shape: 'ring', text: '<status.noConfig>' }])
  })
})

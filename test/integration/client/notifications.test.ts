/**
 * Observation bookkeeping against a scripted responder: one KEYNOTIFY per key however many
 * listeners, STOP when the last one leaves, failures that leave nothing behind, and robust
 * delivery (malformed or foreign messages dropped, a throwing listener isolated, the clock fed).
 */
import assert from 'node:assert/strict'
import { ServiceError } from '../../../src/diagnostics/errors'
import { Hlc } from '../../../src/hlc'
import { Notification, Prop, Reply } from '../../../src/protocol'
import { mqttBrokerUrl } from '../../support/broker'
import { until } from '../../support/wait'
import { ClientPool, Inbox } from '../../support/clients'
import { Responder, type SeenRequest } from './support/responder'

describe('client observations (scripted responder)', function () {
  let url: string
  let responder: Responder
  const pool = new ClientPool()
  const answer = (r: SeenRequest) => {
    if (r.words[0] === 'KEYNOTIFY') return responder.answer(r.words[2] === 'STOP' ? Reply.integer(0) : Reply.ok)
    if (r.words[0] === 'GET') return { payload: Reply.nil, user: { [Prop.status]: '200' } }
    return responder.answer(Reply.ok)
  }
  const verbs = () => responder.requests.map((r) => r.words.join(' '))

  before(async function () {
    url = await mqttBrokerUrl(this)
    responder = await Responder.start(url, answer)
  })
  beforeEach(() => {
    responder.requests.length = 0
    responder.handler = answer
  })
  afterEach(() => pool.closeAll())
  after(() => responder?.stop())

  it('registers a key once for any number of listeners and stops when the last one leaves', async function () {
    const client = await pool.ready(url)
    const [a, b, c] = await Promise.all([
      client.observe('k', () => {}),
      client.observe('k', () => {}),
      client.observe('k', () => {}),
    ])
    assert.deepEqual(verbs(), ['KEYNOTIFY k', 'GET k'])
    await a.close()
    await b.close()
    await b.close()
    assert.deepEqual(verbs(), ['KEYNOTIFY k', 'GET k'], 'no STOP while a listener remains')
    await c.close()
    assert.deepEqual(verbs(), ['KEYNOTIFY k', 'GET k', 'KEYNOTIFY k STOP'])
    const again = await client.observe('k', () => {})
    assert.deepEqual(verbs().slice(3), ['KEYNOTIFY k', 'GET k'])
    await again.close()
    // Closing the last listener and observing again at once: still registered, and nothing was sent for it.
    const d = await client.observe('j', () => {})
    responder.requests.length = 0
    const inbox = new Inbox()
    const [, e] = await Promise.all([d.close(), client.observe('j', inbox.listener)])
    assert.deepEqual(verbs(), [])
    await responder.notify(client.clientId, 'j', Notification.set(Buffer.from('still')))
    await inbox.count(1)
    await e.close()
    assert.deepEqual(verbs(), ['KEYNOTIFY j STOP'])
  })

  it('an observation gives back what its registration read, unless a notification came first or the key was registered already', async function () {
    const client = await pool.ready(url)
    const stamp = new Hlc(Date.now(), 7, 'service')
    responder.handler = (r) =>
      r.words[0] === 'GET'
        ? responder.answer(Reply.value(Buffer.from('v0')), { [Prop.timestamp]: stamp.toString() })
        : answer(r)
    const first = await client.observe('k', () => {})
    assert.equal(first.initial?.value?.toString(), 'v0')
    assert.equal(first.initial?.version?.toString(), stamp.toString())
    const second = await client.observe('k', () => {})
    assert.equal(second.initial, null, 'registered already: nothing was read for this call')
    // a notification published before the GET's answer: the listener has it, the read is not given back
    const inbox = new Inbox()
    responder.handler = async (r) => {
      if (r.words[0] !== 'GET') return answer(r)
      await responder.notify(client.clientId, 'j', Notification.set(Buffer.from('newer')))
      return responder.answer(Reply.value(Buffer.from('older')))
    }
    const overtaken = await client.observe('j', inbox.listener)
    assert.deepEqual(
      inbox.items.map((n) => n.value?.toString()),
      ['newer'],
    )
    assert.equal(overtaken.initial, null)
    responder.handler = answer
    const missing = await client.observe('m', () => {})
    assert.deepEqual(missing.initial, { value: null, version: null })
    await Promise.all([first.close(), second.close(), overtaken.close(), missing.close()])
  })

  it('fails observe with the service error and leaves no registration behind', async function () {
    const client = await pool.ready(url)
    responder.handler = (r) =>
      r.words[0] === 'KEYNOTIFY' ? responder.answer(Reply.error('not authorized')) : answer(r)
    await assert.rejects(
      client.observe('secret', () => {}),
      (e: unknown) => e instanceof ServiceError && e.code === 'NotAuthorized',
    )
    responder.handler = answer
    const o = await client.observe('secret', () => {})
    assert.deepEqual(verbs(), ['KEYNOTIFY secret', 'KEYNOTIFY secret', 'GET secret'])
    await o.close()
  })

  it('delivers valid notifications, drops malformed, foreign and unversioned ones; a __ts ahead of every answer leaves the clock', async function () {
    const client = await pool.ready(url)
    const inbox = new Inbox()
    const errors: Error[] = []
    client.on('error', (e) => errors.push(e))
    await client.observe('k', inbox.listener)
    await client.observe('k', () => {
      throw new Error('listener bug')
    })
    const future = new Hlc(Date.now() + 5000, 3, responder.clock.nodeId)
    await responder.notify(client.clientId, 'k', Buffer.from('garbage'))
    await responder.notify(client.clientId, 'k', Notification.set(Buffer.from('v1')), {
      [Prop.timestamp]: future.toString(),
    })
    await responder.notify('someone-else', 'k', Notification.set(Buffer.from('not for us')))
    await responder.notify(client.clientId, 'k', Notification.delete, {})
    await responder.notify(client.clientId, 'k', Notification.set(Buffer.from('v2')), {
      [Prop.timestamp]: 'not an hlc',
    })
    const later = new Hlc(Date.now() + 6000, 0, responder.clock.nodeId)
    await responder.notify(client.clientId, 'k', Notification.set(Buffer.from('v3')), {
      [Prop.timestamp]: later.toString(),
    })
    const got = await inbox.count(2, 3000).catch((err) => {
      throw new Error(`${err.message}: ${JSON.stringify(inbox.items)}`)
    })
    // Without a valid __ts (the service always sends one) a notification is not the service's.
    assert.deepEqual(
      got.map((n) => `${n.operation} ${n.value?.toString() ?? '-'} ${n.version?.toString() ?? 'null'}`),
      [`SET v1 ${future}`, `SET v3 ${later}`],
    )
    assert.equal(client.droppedNotifications, 2)
    // Ahead of the wall clock and of every answer: taken, but the clock goes no further than an answer has shown.
    assert.ok(
      client.clock.current.timestamp < future.timestamp,
      'a notification __ts ahead of every answer was not merged into the clock',
    )
    assert.equal(errors.length, 2, 'each throw of the faulty listener was reported, not propagated')
    assert.match(errors[0]!.message, /listener bug/)
    assert.equal(inbox.items.length, 2)
  })

  it('a notification from a node id no answer carried is confirmed by a read: a forged one never arrives, a restarted store’s change does', async function () {
    const client = await pool.ready(url)
    const inbox = new Inbox()
    await client.observe('k', inbox.listener)
    const gets = () => verbs().filter((v) => v === 'GET k').length
    // A forgery within the clock's drift limit, from a node id of its own.
    const forged = new Hlc(Date.now() + 55_000, 0, 'intruder')
    await responder.notify(client.clientId, 'k', Notification.set(Buffer.from('forged')), {
      [Prop.timestamp]: forged.toString(),
    })
    await responder.waitForRequests(3)
    assert.equal(gets(), 2, 'the forgery made the client read the key')
    // The read answered (nil, as before): nothing changed, nothing is told, the clock stayed behind the forgery.
    await until(() => client.droppedNotifications === 1, 'the forgery dropped once the read had answered')
    assert.ok(Hlc.compare(client.clock.current, forged) < 0, 'the forged version was not merged into the clock')
    // The store restarts behind the broker under a new node id: its answers and notifications carry it.
    let tick = 0
    const restarted = () => new Hlc(Date.now(), ++tick, 'restarted')
    responder.handler = (r) =>
      r.words[0] === 'GET'
        ? {
            payload: Reply.value(Buffer.from('v-new')),
            user: { [Prop.status]: '200', [Prop.protocolVersion]: '1.0', [Prop.timestamp]: restarted().toString() },
          }
        : responder.answer(Reply.ok)
    await responder.notify(client.clientId, 'k', Notification.set(Buffer.from('v-new')), {
      [Prop.timestamp]: restarted().toString(),
    })
    const [confirmed] = await inbox.count(1, 5000)
    assert.deepEqual(
      [confirmed!.value?.toString(), confirmed!.reconciled],
      ['v-new', false],
      'the restarted store’s notification, once the read’s answer carried its node id',
    )
    const readsBefore = gets()
    await responder.notify(client.clientId, 'k', Notification.set(Buffer.from('v-next')), {
      [Prop.timestamp]: restarted().toString(),
    })
    const got = await inbox.count(2, 5000)
    assert.deepEqual(
      [got[1]!.value?.toString(), got[1]!.reconciled],
      ['v-next', false],
      'once an answer carried the node id, its notifications are taken',
    )
    assert.equal(gets(), readsBefore, 'without another read')
    assert.ok(!inbox.items.some((n) => n.value?.toString() === 'forged'))
  })

  it('still delivers to other keys and listeners after a key is unobserved', async function () {
    const client = await pool.ready(url)
    const keep = new Inbox()
    const gone = new Inbox()
    await client.observe('keep', keep.listener)
    const o = await client.observe('gone', gone.listener)
    await o.close()
    await responder.notify(client.clientId, 'gone', Notification.set(Buffer.from('late')))
    await responder.notify(client.clientId, 'keep', Notification.set(Buffer.from('x')))
    await keep.count(1)
    await new Promise((r) => setTimeout(r, 50))
    assert.equal(gone.items.length, 0, 'a closed observation gets nothing more')
  })
})

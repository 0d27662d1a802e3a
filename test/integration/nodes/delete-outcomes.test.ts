/**
 * *delete key* whose answer is lost: the msg reaches Catch saying in `msg.error.cause.written` whether
 * the delete took effect, read back after its Message Expiry, as *set key* does. The store is a
 * scripted responder on a real broker, so that a delete can be executed and its answer dropped, or
 * dropped unexecuted, on purpose.
 */
import assert from 'node:assert/strict'
import { Hlc } from '../../../src/hlc'
import { Prop, Reply } from '../../../src/protocol'
import { mqttBrokerUrl } from '../../support/broker'
import { Responder, type SeenRequest } from '../client/support/responder'
import { ALL, flowWith, helper, nextMessage } from './support'

describe('nodes: ss-del outcomes of a lost answer', function () {
  let url: string
  let responder: Responder
  /** What the stand-in store holds, with the version each key was written at. */
  const held = new Map<string, { value: Buffer; version: Hlc }>()
  /** Whether a DEL or VDEL is executed before its answer is dropped. */
  let execute = true

  function handle(r: SeenRequest) {
    const [verb, key = '', value = ''] = r.words
    switch (verb) {
      case 'DEL':
      case 'VDEL':
        if (execute && (verb === 'DEL' || held.get(key)?.value.toString() === value)) held.delete(key)
        return null
      case 'GET': {
        const h = held.get(key)
        return h
          ? responder.answer(Reply.value(h.value), { [Prop.timestamp]: h.version.toString() })
          : responder.answer(Reply.nil)
      }
      default:
        return responder.answer(Reply.ok)
    }
  }

  before(async function () {
    url = await mqttBrokerUrl(this)
    responder = await Responder.start(url, handle)
  })
  beforeEach(() => {
    held.clear()
    responder.handler = handle
  })
  afterEach(() => helper.unload())
  after(() => responder?.stop())

  /** Keys written an hour ago, before any delete of this test. */
  function hold(entries: Record<string, string>): void {
    for (const [key, value] of Object.entries(entries))
      held.set(key, { value: Buffer.from(value), version: new Hlc(Date.now() - 3_600_000, 0, 'old') })
  }

  async function failed(node: Record<string, unknown>, msg: Record<string, unknown>) {
    await helper.load(
      ALL,
      flowWith(url, { id: 'del', type: 'ss-del', key: 'topic', keyType: 'msg', ...node }, 1, {
        requestTimeout: '400',
      }),
    )
    const caught = nextMessage(helper.getNode('caught'), 15_000)
    helper.getNode('del').receive(msg)
    const c = await caught
    return c.error as { code: string; cause?: { written?: unknown } }
  }

  it('a DEL the store applied whose answer was lost fails Timeout with written true, as the store holds', async function () {
    hold({ 'line/1': 'on' })
    const error = await failed({}, { topic: 'line/1' })
    assert.deepEqual({ code: error.code, written: error.cause?.written }, { code: 'Timeout', written: true })
    assert.equal(held.has('line/1'), false)
  })

  it('a DEL never delivered fails Timeout with written false, the key still there', async function () {
    execute = false
    try {
      hold({ 'line/2': 'on' })
      const error = await failed({}, { topic: 'line/2' })
      assert.deepEqual({ code: error.code, written: error.cause?.written }, { code: 'Timeout', written: false })
      assert.equal(held.get('line/2')?.value.toString(), 'on')
    } finally {
      execute = true
    }
  })

  it('a VDEL applied says written true; one that found another value says false; a key written since "unknown"', async function () {
    hold({ 'line/3': 'mine', 'line/4': 'theirs' })
    const vdel = { mode: 'vdel', value: 'mine', valueType: 'str' }
    const applied = await failed(vdel, { topic: 'line/3' })
    assert.equal(applied.cause?.written, true)
    await helper.unload()
    const other = await failed(vdel, { topic: 'line/4' })
    assert.equal(other.cause?.written, false)
    assert.equal(held.get('line/4')?.value.toString(), 'theirs')
    await helper.unload()
    // Written again after the delete was sent, before the read: it may have come before or after the delete.
    responder.handler = (r) => {
      if (r.words[0] === 'VDEL')
        held.set('line/5', { value: Buffer.from('new'), version: new Hlc(Date.now() + 1, 0, 'x') })
      return handle(r)
    }
    hold({ 'line/5': 'mine' })
    const since = await failed(vdel, { topic: 'line/5' })
    assert.equal(since.cause?.written, 'unknown')
  })
})

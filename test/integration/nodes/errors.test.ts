// How a node's failure reads where Node-RED shows it: the Debug sidebar (an uncaught error goes
// through the runtime's encodeObject), the Catch node's msg.error, the console log.
import assert from 'node:assert/strict'
import { InputError, NodeFailure, toFailure } from '../../../nodes/lib/errors'
import { evaluateInput } from '../../../nodes/msg/props'
import { CONNECTION_ERROR_CODES, ConnectionError, ServiceError } from '../../../src/diagnostics/errors'
import { redModule } from './support'

// The runtime's own encoder for the Debug sidebar, from the Node-RED this package is tested with.
const redUtil = redModule('@node-red/util/lib/util.js') as {
  encodeObject(msg: { msg: unknown }): { msg: unknown; format: string }
}
const { encodeObject } = redUtil

describe('nodes: failures as Node-RED shows them', () => {
  it('an uncaught failure is one line in the Debug sidebar, not an object with cause "[object Object]"', () => {
    const failure = toFailure(
      new InputError('KeyEmpty', "the key is empty: set msg.topic, msg.key or the node's Key field"),
    )
    const encoded = encodeObject({ msg: failure })
    assert.equal(encoded.msg, "the key is empty: set msg.topic, msg.key or the node's Key field")
    assert.equal(String(failure), failure.message, 'the console log and Catch msg.error.message read the same line')
  })

  it('keeps code and cause for Catch, and the cause reads when stringified', () => {
    const failure = toFailure(
      new ServiceError('the request fencing token is a lower version than the fencing token protecting the resource'),
    )
    assert.equal(failure.code, 'FencingTokenLowerVersion')
    assert.deepEqual(
      { ...failure.cause },
      { kind: 'service', code: 'FencingTokenLowerVersion', message: failure.message },
    )
    assert.equal(String(failure.cause), `service FencingTokenLowerVersion: ${failure.message}`)
    // What the runtime copies into msg.error for a Catch node: own code and cause.
    assert.ok(Object.hasOwn(failure, 'code') && Object.hasOwn(failure, 'cause'))
  })

  it('wraps every error once', () => {
    const failure = toFailure(new ConnectionError('NotConnected', 'not connected'))
    assert.ok(failure instanceof NodeFailure)
    assert.equal(toFailure(failure), failure)
    assert.equal(failure.cause.kind, 'connection')
    assert.equal(failure.code, 'NotConnected')
  })

  it("hands a Catch node the client's own connection code, whatever the message says", () => {
    // The message of every one mentions 'closed', which once decided what a lock waiter did; the
    // client once said `notConnected` where the nodes said `NotConnected`, so one Catch check missed one.
    const codes = CONNECTION_ERROR_CODES.map(
      (code) => toFailure(new ConnectionError(code, 'the connection closed')).code,
    )
    assert.deepEqual(codes, [
      'ConnectionClosed',
      'ConnectionLost',
      'NotConnected',
      'BrokerRefused',
      'NotAuthenticated',
      'NoService',
    ])
  })

  it('names a property that cannot be evaluated by its label in the catalogue, not by an English word', async () => {
    // The runtime's own evaluateNodeProperty on a JSONata expression that does not parse; a
    // translator that shows which catalogue keys were asked for.
    const RED = { util: redUtil } as never
    const t = (key: string, substitutions?: Record<string, string | number>) =>
      substitutions ? `${key} ${JSON.stringify(substitutions)}` : `<${key}>`
    for (const what of ['key', 'value', 'fencingToken'] as const) {
      const failed = await evaluateInput(
        RED,
        { id: 'n1' } as never,
        { value: '$$$(', type: 'jsonata' },
        { _msgid: 'm' },
        what,
        t,
      ).then(
        () => assert.fail('the expression evaluated'),
        (err: unknown) => err as InputError,
      )
      assert.equal(failed.code, 'PropertyFailed')
      const [key, substitutions] = [
        failed.message.slice(0, failed.message.indexOf(' ')),
        JSON.parse(failed.message.slice(failed.message.indexOf(' ') + 1)) as Record<string, string>,
      ]
      assert.equal(key, 'errors.property')
      assert.equal(substitutions.property, `<label.${what}>`)
      assert.ok(substitutions.error, 'the evaluation error is kept')
    }
  })
})

// The two dialects of the protocol (src/protocol/dialect.ts) and the client envelope built from them.
import assert from 'node:assert/strict'
import { readResponseVersion, requestProperties } from '../../src/client/envelope'
import { resolveOptions } from '../../src/client/options'
import { ArgumentError, ProtocolError } from '../../src/diagnostics/errors'
import { Hlc, HybridLogicalClock } from '../../src/hlc'
import {
  dialect,
  dialectOfRequestTopic,
  dialectPropertyName,
  isProtocolName,
  PREVIEW_REQUEST_TOPIC,
  REQUEST_TOPIC,
  responseTopicRefusal,
  responseUserProperties,
} from '../../src/protocol'

describe('protocol dialects', function () {
  const v1 = dialect('v1')
  const preview = dialect('preview')
  const hlc = new Hlc(1696374425000, 0, 'CLIENT')

  it('knows v1 and preview, v1 by default, and nothing else', function () {
    assert.equal(dialect().name, 'v1')
    assert.equal(isProtocolName('preview'), true)
    for (const bad of ['V1', 'v2', '', 'toString', 1, null]) assert.equal(isProtocolName(bad), false, String(bad))
  })

  it('the client option: v1 unless told, a clear error for anything else', function () {
    const base = { brokerUrl: 'mqtt://127.0.0.1:1', clientId: 'c1' }
    assert.equal(resolveOptions(base).dialect.name, 'v1')
    assert.equal(resolveOptions({ ...base, protocol: 'preview' }).dialect.name, 'preview')
    assert.throws(
      () => resolveOptions({ ...base, protocol: 'v2' as never }),
      (e: unknown) => e instanceof ArgumentError && /protocol must be one of v1, preview/.test(e.message),
    )
  })

  it('tells the dialect by the request topic', function () {
    assert.equal(dialectOfRequestTopic(REQUEST_TOPIC), v1)
    assert.equal(dialectOfRequestTopic(PREVIEW_REQUEST_TOPIC), preview)
    assert.equal(dialectOfRequestTopic('$services/statestore/_any_/command/invoke/response'), undefined)
  })

  it('writes HLCs padded in v1 and as in the preview article (1696374425000:0:CLIENT)', function () {
    assert.equal(v1.formatHlc(hlc), '001696374425000:00000:CLIENT')
    assert.equal(preview.formatHlc(hlc), '1696374425000:0:CLIENT')
    assert.ok(Hlc.parse(preview.formatHlc(hlc)).equals(hlc))
  })

  it('maps the v1 names of the clock and the fencing token to the dialect', function () {
    assert.equal(dialectPropertyName(preview, '__ts'), 'Timestamp')
    assert.equal(dialectPropertyName(preview, '__ft'), 'FencingToken')
    assert.equal(dialectPropertyName(preview, '__srcId'), '__srcId')
    assert.equal(dialectPropertyName(v1, '__ts'), '__ts')
  })

  it("answers with status headers in v1 only, the version written the dialect's way", function () {
    assert.deepEqual(responseUserProperties(v1, hlc.toString()), {
      __stat: '200',
      __protVer: '1.0',
      __ts: '001696374425000:00000:CLIENT',
    })
    assert.deepEqual(responseUserProperties(preview, hlc.toString()), { Timestamp: '1696374425000:0:CLIENT' })
    assert.deepEqual(responseUserProperties(preview, undefined), {})
  })

  it('a service never answers on either request topic', function () {
    assert.notEqual(responseTopicRefusal(PREVIEW_REQUEST_TOPIC), null)
    assert.equal(responseTopicRefusal(preview.responseTopic('c1')), null)
  })

  it('client requests: preview sends Timestamp and FencingToken and none of the v1 headers', function () {
    const envelope = {
      clientId: 'c1',
      responseTopic: preview.responseTopic('c1'),
      correlation: Buffer.alloc(16),
      timestamp: hlc,
      expirySec: 5,
      fencingToken: hlc,
    }
    assert.deepEqual(requestProperties({ ...envelope, dialect: preview }).userProperties, {
      Timestamp: '1696374425000:0:CLIENT',
      FencingToken: '1696374425000:0:CLIENT',
    })
    const v1Props = requestProperties(envelope).userProperties!
    assert.equal(v1Props.__ts, '001696374425000:00000:CLIENT')
    assert.equal(v1Props.__ft, '001696374425000:00000:CLIENT')
    assert.equal(v1Props.__srcId, 'c1')
  })

  it('client responses: the preview needs no __stat and reads its version from Timestamp', function () {
    const clock = new HybridLogicalClock()
    const version = readResponseVersion({ userProperties: { Timestamp: '1696374425000:3:svc' } }, clock, preview)
    assert.ok(version?.equals(new Hlc(1696374425000, 3, 'svc')))
    assert.throws(
      () => readResponseVersion({ userProperties: { Timestamp: '1696374425000:3:svc' } }, clock, v1),
      ProtocolError,
    )
  })
})

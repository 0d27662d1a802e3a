import assert from 'node:assert/strict'
import {
  ArgumentError,
  CancelledError,
  ConnectionError,
  OverloadedError,
  ProtocolError,
  SERVICE_ERROR_TEXT,
  ServiceError,
  StateStoreError,
  TimeoutError,
  type ServiceErrorCode,
} from '../../src/diagnostics/errors'
import {
  CONTENT_TYPE,
  hexDecode,
  hexUpper,
  Notification,
  notificationFilter,
  notificationTopic,
  parseDeleteResponse,
  parseGetResponse,
  parseKeyNotifyResponse,
  parseNotification,
  parseNotificationTopic,
  parseSetResponse,
  Prop,
  PROTOCOL_VERSION,
  Reply,
  Request,
  REQUEST_TOPIC,
  requireExpiry,
  requireKey,
  responseTopicFor,
  responseTopicRefusal,
  SERVICE_CLIENTS_PREFIX,
  toBytes,
} from '../../src/protocol'
import { decodeExact, RespProtocolError } from '../../src/resp'

const b = (text: string): Buffer => Buffer.from(text, 'latin1')
const wire = (buf: Buffer): string => buf.toString('latin1')

function throwsKind<E extends Error>(fn: () => unknown, type: abstract new (...args: never[]) => E): E {
  let thrown: unknown
  try {
    fn()
  } catch (err) {
    thrown = err
  }
  assert.ok(thrown instanceof type, `expected a ${type.name}, got ${String(thrown)}`)
  return thrown
}

describe('protocol: topics', () => {
  it('the request topic and the service prefix are the literals of the spec', () => {
    assert.equal(REQUEST_TOPIC, 'statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke')
    assert.equal(SERVICE_CLIENTS_PREFIX, 'clients/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8')
    assert.equal(PROTOCOL_VERSION, '1.0')
    assert.equal(CONTENT_TYPE, 'application/octet-stream')
    assert.deepStrictEqual(
      [
        Prop.timestamp,
        Prop.fencingToken,
        Prop.sourceId,
        Prop.protocolVersion,
        Prop.status,
        Prop.persist,
        Prop.partition,
        Prop.highPriority,
      ],
      ['__ts', '__ft', '__srcId', '__protVer', '__stat', 'aio-persistence', '$partition', '$high_priority'],
    )
  })

  it('the notification topic worked example: client-id1 and SOMEKEY', () => {
    const topic = notificationTopic('client-id1', b('SOMEKEY'))
    assert.equal(
      topic,
      'clients/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/636C69656E742D696431/command/notify/534F4D454B4559',
    )
    assert.deepStrictEqual(parseNotificationTopic(topic), { clientId: 'client-id1', key: b('SOMEKEY') })
    assert.equal(notificationFilter('client-id1'), `${SERVICE_CLIENTS_PREFIX}/636C69656E742D696431/command/notify/+`)
  })

  it('hex is upper case, of the UTF-8 bytes of a string or the raw bytes of a Buffer', () => {
    assert.equal(hexUpper(Buffer.from([0x00, 0xab, 0xcd, 0xef, 0xff])), '00ABCDEFFF')
    assert.equal(hexUpper('é'), 'C3A9')
    assert.equal(hexUpper(''), '')
    const topic = notificationTopic('ü', Buffer.from([0xde, 0xad, 0x0d, 0x0a]))
    assert.ok(topic.endsWith('/C3BC/command/notify/DEAD0D0A'), topic)
    const levels = topic.split('/')
    for (const hex of [levels[4]!, levels[7]!]) assert.match(hex, /^[0-9A-F]+$/)
  })

  it('hexDecode is strict base16, accepting either case', () => {
    assert.deepStrictEqual(hexDecode('DEADbeef'), Buffer.from([0xde, 0xad, 0xbe, 0xef]))
    assert.deepStrictEqual(hexDecode(''), Buffer.alloc(0))
    assert.equal(hexDecode('ABC'), null)
    assert.equal(hexDecode('ZZ'), null)
    assert.equal(hexDecode('0x12'), null)
    assert.equal(hexDecode('12 3'), null)
  })

  it('parseNotificationTopic round-trips binary keys and refuses what is not a notification topic', () => {
    const key = Buffer.from([0x00, 0x2f, 0x2b, 0x23, 0xff])
    const topic = notificationTopic('my/client+id', key)
    assert.deepStrictEqual(parseNotificationTopic(topic), { clientId: 'my/client+id', key })
    // Go and .NET accept lower-case hex when decoding; we do too, while always writing upper case.
    assert.deepStrictEqual(
      parseNotificationTopic(topic.toLowerCase().replace(SERVICE_CLIENTS_PREFIX.toLowerCase(), SERVICE_CLIENTS_PREFIX)),
      {
        clientId: 'my/client+id',
        key,
      },
    )
    const base = `${SERVICE_CLIENTS_PREFIX}/636C69656E74`
    for (const bad of [
      REQUEST_TOPIC,
      `${base}/command/notify`,
      `${base}/command/notify/41/42`,
      `${base}/command/invoke/41`,
      `${base}/telemetry/notify/41`,
      `${base}/command/notify/4`,
      `${base}/command/notify/XY`,
      `${SERVICE_CLIENTS_PREFIX}/6C6/command/notify/41`,
      `clients/statestore/v1/other/636C69656E74/command/notify/41`,
      `${SERVICE_CLIENTS_PREFIX}636C69656E74/command/notify/41`,
    ]) {
      assert.equal(parseNotificationTopic(bad), null, bad)
    }
  })

  it('response topics: under clients/<id>/, never the request topic nor the service space', () => {
    const ours = responseTopicFor('client-1')
    assert.equal(ours, `clients/client-1/services/${REQUEST_TOPIC}/response`)
    assert.equal(responseTopicRefusal(ours), null)
    // The three SDK shapes (spec 1.2) are all allowed.
    assert.equal(responseTopicRefusal(`clients/636C69656E74/${REQUEST_TOPIC}/response`), null)
    assert.equal(responseTopicRefusal(`clients/client-1/${REQUEST_TOPIC}`), null)
    assert.equal(responseTopicRefusal('clients/client-1/services/statestore/_any_/command/invoke/response'), null)
    for (const bad of [
      '',
      REQUEST_TOPIC,
      SERVICE_CLIENTS_PREFIX,
      `${SERVICE_CLIENTS_PREFIX}/636C69656E74/command/notify/41`,
      `${SERVICE_CLIENTS_PREFIX}-suffix`,
      'clients/+/response',
      'clients/c/#',
    ]) {
      assert.notEqual(responseTopicRefusal(bad), null, bad)
    }
  })
})

describe('protocol: request builders', () => {
  it('GET, DEL, VDEL, KEYNOTIFY and KEYNOTIFY STOP', () => {
    assert.equal(wire(Request.get('k')), '*2\r\n$3\r\nGET\r\n$1\r\nk\r\n')
    assert.equal(wire(Request.del('k')), '*2\r\n$3\r\nDEL\r\n$1\r\nk\r\n')
    assert.equal(wire(Request.vdel('k', 'v')), '*3\r\n$4\r\nVDEL\r\n$1\r\nk\r\n$1\r\nv\r\n')
    assert.equal(wire(Request.keyNotify('k')), '*2\r\n$9\r\nKEYNOTIFY\r\n$1\r\nk\r\n')
    assert.equal(wire(Request.keyNotifyStop('k')), '*3\r\n$9\r\nKEYNOTIFY\r\n$1\r\nk\r\n$4\r\nSTOP\r\n')
  })

  it('SET with NX, NEX and PX: the condition first, then PX, NEX bare', () => {
    assert.equal(wire(Request.set('k', 'v')), '*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n')
    assert.equal(wire(Request.set('k', 'v', { condition: 'always' })), '*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n')
    assert.equal(
      wire(Request.set('k', 'v', { condition: 'NX' })),
      '*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nNX\r\n',
    )
    assert.equal(
      wire(Request.set('k', 'v', { condition: 'NEX' })),
      '*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$3\r\nNEX\r\n',
    )
    assert.equal(
      wire(Request.set('k', 'v', { expiryMs: 1500 })),
      '*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nPX\r\n$4\r\n1500\r\n',
    )
    assert.equal(
      wire(Request.set('k', 'v', { condition: 'NEX', expiryMs: 1 })),
      '*6\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$3\r\nNEX\r\n$2\r\nPX\r\n$1\r\n1\r\n',
    )
    // An expiry of 0 means none, as in Go.
    assert.equal(wire(Request.set('k', 'v', { expiryMs: 0 })), '*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n')
  })

  it('keys and values are bytes: binary Buffers and UTF-8 strings, lengths in bytes', () => {
    const key = Buffer.from([0x0d, 0x0a, 0x00, 0xff])
    const value = Buffer.from('\r\n$2\r\n', 'latin1')
    const payload = Request.set(key, value)
    assert.deepStrictEqual(decodeExact(payload), {
      kind: 'array',
      value: [
        { kind: 'bulk', value: b('SET') },
        { kind: 'bulk', value: key },
        { kind: 'bulk', value: value },
      ],
    })
    assert.equal(wire(Request.get('schlüssel')), '*2\r\n$3\r\nGET\r\n$10\r\nschl\xc3\xbcssel\r\n')
    assert.equal(wire(Request.set('k', '')), '*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n')
  })

  it('refuses an empty key before anything is sent, for every verb', () => {
    for (const build of [
      () => Request.get(''),
      () => Request.set('', 'v'),
      () => Request.del(Buffer.alloc(0)),
      () => Request.vdel('', 'v'),
      () => Request.keyNotify(''),
      () => Request.keyNotifyStop(''),
    ]) {
      const err = throwsKind(build, ArgumentError)
      assert.equal(err.kind, 'argument')
      assert.match(err.message, /key must not be empty/)
    }
  })

  it('refuses expiries that are not whole positive milliseconds, and unknown conditions', () => {
    for (const expiryMs of [-1, 0.5, 1.5, 0.001, NaN, Infinity, -Infinity, Number.MAX_SAFE_INTEGER + 2]) {
      throwsKind(() => Request.set('k', 'v', { expiryMs }), ArgumentError)
    }
    throwsKind(() => Request.set('k', 'v', { condition: 'XX' as never }), ArgumentError)
    throwsKind(() => Request.set('k', 'v', { condition: 'nx' as never }), ArgumentError)
  })

  it('requireKey, requireExpiry and toBytes', () => {
    assert.deepStrictEqual(requireKey('é'), Buffer.from([0xc3, 0xa9]))
    const key = Buffer.from([1])
    assert.equal(requireKey(key), key)
    assert.equal(requireExpiry(undefined), undefined)
    assert.equal(requireExpiry(0), undefined)
    assert.equal(requireExpiry(10), 10)
    assert.deepStrictEqual(toBytes('ab'), b('ab'))
  })
})

describe('protocol: response parsers', () => {
  it('SET: +OK applied, :-1 not applied; nothing else', () => {
    assert.equal(parseSetResponse(b('+OK\r\n')), true)
    assert.equal(parseSetResponse(b(':-1\r\n')), false)
    for (const bad of ['$-1\r\n', '+not OK\r\n', ':0\r\n', ':1\r\n', '$2\r\nOK\r\n', '*0\r\n']) {
      const err = throwsKind(() => parseSetResponse(b(bad)), ProtocolError)
      assert.equal(err.kind, 'protocol')
      assert.match(err.message, /unexpected SET response/)
    }
    // A RESP3 kind the protocol does not use is a malformed payload.
    assert.match(throwsKind(() => parseSetResponse(b('_\r\n')), ProtocolError).message, /bad SET response payload/)
  })

  it('GET: the value bytes, an empty value, or null for a missing key', () => {
    assert.deepStrictEqual(parseGetResponse(b('$3\r\n\r\n\0\r\n')), b('\r\n\0'))
    assert.deepStrictEqual(parseGetResponse(b('$0\r\n\r\n')), Buffer.alloc(0))
    assert.equal(parseGetResponse(b('$-1\r\n')), null)
    // A missing key is $-1: the RESP3 null `_` is not a kind the protocol uses.
    for (const bad of ['+OK\r\n', ':1\r\n', '*1\r\n$1\r\na\r\n', '_\r\n'])
      throwsKind(() => parseGetResponse(b(bad)), ProtocolError)
  })

  it('DEL and VDEL: the count deleted, 0 for no key, -1 for a VDEL mismatch', () => {
    assert.equal(parseDeleteResponse(b(':1\r\n')), 1)
    assert.equal(parseDeleteResponse(b(':0\r\n')), 0)
    assert.equal(parseDeleteResponse(b(':-1\r\n'), 'VDEL'), -1)
    // All three SDKs accept larger counts (Rust test_del_multiple_response); refused before the fix.
    assert.equal(parseDeleteResponse(b(':6\r\n')), 6)
    for (const bad of [':-2\r\n', ':99999999999999999999\r\n', '+OK\r\n', '$1\r\n1\r\n']) {
      const err = throwsKind(() => parseDeleteResponse(b(bad), 'VDEL'), ProtocolError)
      assert.match(err.message, /unexpected VDEL response/)
    }
  })

  it('KEYNOTIFY: +OK, and :0 for STOP on a key that was not registered', () => {
    assert.equal(parseKeyNotifyResponse(b('+OK\r\n')), true)
    assert.equal(parseKeyNotifyResponse(b(':0\r\n')), false)
    for (const bad of [':1\r\n', ':-1\r\n', '$-1\r\n']) throwsKind(() => parseKeyNotifyResponse(b(bad)), ProtocolError)
  })

  it('an empty, malformed or over-long payload is a ProtocolError carrying the RESP3 error', () => {
    const parsers = [parseSetResponse, parseGetResponse, parseDeleteResponse, parseKeyNotifyResponse, parseNotification]
    for (const parse of parsers) {
      assert.match(throwsKind(() => parse(Buffer.alloc(0)), ProtocolError).message, /^empty .* payload$/)
      const err = throwsKind(() => parse(b('+OK\r\n+OK\r\n')), ProtocolError)
      assert.ok(err.cause instanceof RespProtocolError && err.cause.reason === 'trailingBytes')
      const bad = throwsKind(() => parse(b('$5\r\nab')), ProtocolError)
      assert.ok(bad.cause instanceof RespProtocolError && bad.cause.reason === 'incomplete')
      assert.match(bad.message, /RESP3 incomplete at offset 6/)
    }
  })

  it('-ERR <text> is a ServiceError with the catalogue code, for every parser', () => {
    const codes = Object.keys(SERVICE_ERROR_TEXT) as ServiceErrorCode[]
    assert.equal(codes.length, 12)
    for (const code of codes) {
      const payload = Reply.error(SERVICE_ERROR_TEXT[code])
      assert.equal(wire(payload), `-ERR ${SERVICE_ERROR_TEXT[code]}\r\n`)
      for (const parse of [parseSetResponse, parseGetResponse, parseDeleteResponse, parseKeyNotifyResponse]) {
        const err = throwsKind(() => parse(payload), ServiceError)
        assert.equal(err.code, code)
        assert.equal(err.text, SERVICE_ERROR_TEXT[code])
        assert.equal(err.kind, 'service')
        assert.ok(err instanceof StateStoreError)
        assert.equal(err.message, `state store error: ${SERVICE_ERROR_TEXT[code]}`)
      }
    }
  })

  it('unknown error text is kept verbatim with code Unknown; matching is exact', () => {
    const cases: Array<[string, string]> = [
      ['-ERR something new\r\n', 'something new'],
      ['-ERR: syntax error\r\n', 'ERR: syntax error'],
      ['-ERR Syntax Error\r\n', 'Syntax Error'],
      ['-ERR syntax error \r\n', 'syntax error '],
      ['-WRONGTYPE Operation against a key\r\n', 'WRONGTYPE Operation against a key'],
      ['-ERR \r\n', ''],
    ]
    for (const [payload, text] of cases) {
      const err = throwsKind(() => parseGetResponse(b(payload)), ServiceError)
      assert.equal(err.code, 'Unknown', payload)
      assert.equal(err.text, text)
    }
  })

  it('a blob error is not a kind the protocol uses: the service errs with -ERR, so a blob error is a malformed payload', () => {
    const text = SERVICE_ERROR_TEXT.NotAuthorized
    const err = throwsKind(() => parseSetResponse(b(`!${4 + text.length}\r\nERR ${text}\r\n`)), ProtocolError)
    assert.match(err.message, /bad SET response payload/)
    assert.equal(throwsKind(() => parseSetResponse(b(`-ERR ${text}\r\n`)), ServiceError).code, 'NotAuthorized')
  })

  it('notifications: NOTIFY SET VALUE <bytes> and NOTIFY DELETE, as arrays', () => {
    const value = Buffer.from([0, 13, 10, 255])
    assert.deepStrictEqual(parseNotification(Notification.set(value)), { operation: 'SET', value })
    assert.deepStrictEqual(parseNotification(Notification.set(Buffer.alloc(0))), {
      operation: 'SET',
      value: Buffer.alloc(0),
    })
    assert.deepStrictEqual(parseNotification(Notification.delete), { operation: 'DELETE' })
    assert.equal(wire(Notification.delete), '*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n')
    assert.equal(wire(Notification.set(b('abc'))), '*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$3\r\nabc\r\n')
  })

  it('notifications: the article forms and anything else are ProtocolErrors', () => {
    for (const bad of [
      '*2\r\n$6\r\nNOTIFY\r\n$3\r\nDEL\r\n',
      '*2\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n',
      '*3\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$1\r\nv\r\n',
      '*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$4\r\nVALU\r\n$1\r\nv\r\n',
      '*2\r\n$6\r\nnotify\r\n$6\r\nDELETE\r\n',
      '*2\r\n$6\r\nNOTIFY\r\n$6\r\ndelete\r\n',
      '*2\r\n+NOTIFY\r\n+DELETE\r\n',
      '*0\r\n',
      '+OK\r\n',
      // RESP3 kinds the protocol does not use: a set, a push.
      '~2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n',
      '>2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n',
    ]) {
      const err = throwsKind(() => parseNotification(b(bad)), ProtocolError)
      assert.match(err.message, /(unexpected|bad) notification response/, bad)
    }
  })

  it('the service replies parse back to what they mean', () => {
    assert.equal(wire(Reply.ok), '+OK\r\n')
    assert.equal(wire(Reply.notApplied), ':-1\r\n')
    assert.equal(wire(Reply.nil), '$-1\r\n')
    assert.equal(parseSetResponse(Reply.ok), true)
    assert.equal(parseSetResponse(Reply.notApplied), false)
    assert.equal(parseGetResponse(Reply.nil), null)
    assert.deepStrictEqual(parseGetResponse(Reply.value(b('v'))), b('v'))
    assert.equal(parseDeleteResponse(Reply.integer(1)), 1)
    assert.equal(parseKeyNotifyResponse(Reply.integer(0)), false)
    assert.equal(
      throwsKind(() => parseGetResponse(Reply.error('the key length is zero')), ServiceError).code,
      'KeyLengthZero',
    )
  })
})

describe('errors', () => {
  it('every typed error extends StateStoreError with its kind and name', () => {
    const cases: Array<[StateStoreError, string, string]> = [
      [new ServiceError('x'), 'service', 'ServiceError'],
      [new TimeoutError(1500), 'timeout', 'TimeoutError'],
      [new ConnectionError('ConnectionLost', 'gone'), 'connection', 'ConnectionError'],
      [new ProtocolError('bad'), 'protocol', 'ProtocolError'],
      [new ArgumentError('bad'), 'argument', 'ArgumentError'],
      [new CancelledError('stop'), 'cancelled', 'CancelledError'],
      [new OverloadedError('busy'), 'overloaded', 'OverloadedError'],
    ]
    for (const [err, kind, name] of cases) {
      assert.ok(err instanceof StateStoreError && err instanceof Error)
      assert.equal(err.kind, kind)
      assert.equal(err.name, name)
    }
    const timeout = new TimeoutError(1500, 'GET')
    assert.equal(timeout.message, 'GET timed out after 1500 ms')
    assert.equal(timeout.timeoutMs, 1500)
  })

  it('the catalogue is the twelve texts of spec section 8, with the Go names', () => {
    assert.deepStrictEqual(Object.keys(SERVICE_ERROR_TEXT).sort(), [
      'FencingTokenLowerVersion',
      'FencingTokenSkew',
      'KeyLengthZero',
      'MissingFencingToken',
      'NotAuthorized',
      'QuotaExceeded',
      'SyntaxError',
      'TimestampMalformed',
      'TimestampMissing',
      'TimestampSkew',
      'UnknownCommand',
      'WrongNumberOfArguments',
    ])
    // The SDKs match "than"; the article's typo "that" is unknown text.
    assert.equal(new ServiceError(SERVICE_ERROR_TEXT.FencingTokenLowerVersion.replace('than', 'that')).code, 'Unknown')
  })
})

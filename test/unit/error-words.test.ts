/**
 * Every failure a flow can see that is not about the msg's own properties (the store's refusals,
 * the connection's, the client's kinds, an internal error) is worded from the catalogue in each of
 * the ten languages: the msg's key first, then what happened and what to do, the error's own words
 * kept where the text has a place for them. (The msg's own faults, InputError, name the property.)
 */
import { strict as assert } from 'node:assert'
import { readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import {
  describeError,
  INPUT_ERROR_CODES,
  NODE_ERROR_CODES,
  NodeFailure,
  type NodeErrorCode,
} from '../../nodes/lib/errors'
import { worded } from '../../nodes/lib/error-text'
import {
  ArgumentError,
  CancelledError,
  ConnectionError,
  NotSupportedError,
  OverloadedError,
  ProtocolError,
  SERVICE_ERROR_TEXT,
  ServiceError,
  TimeoutError,
  CONNECTION_ERROR_CODES,
} from '../../src/diagnostics/errors'

const LOCALES = join(resolve(__dirname, '..', '..'), 'nodes', 'locales')
const STORE_CODES = NODE_ERROR_CODES.filter((code) => !(INPUT_ERROR_CODES as readonly string[]).includes(code))

/** An error of each code, as the client (or a bug) makes it. */
function errorOf(code: NodeErrorCode): unknown {
  if (code in SERVICE_ERROR_TEXT) return new ServiceError(SERVICE_ERROR_TEXT[code as keyof typeof SERVICE_ERROR_TEXT])
  if (code === 'Unknown') return new ServiceError('some new refusal')
  if ((CONNECTION_ERROR_CODES as readonly string[]).includes(code))
    return new ConnectionError(code as never, 'connect ECONNREFUSED 127.0.0.1:1')
  const byCode: Record<string, () => unknown> = {
    Timeout: () => new TimeoutError(5000),
    ProtocolError: () => new ProtocolError('response without a correlation'),
    ClockSkew: () => new ProtocolError('the answer is 90 s ahead of this clock', { code: 'ClockSkew' }),
    InvalidArgument: () => new ArgumentError('expiry must be a whole number'),
    Cancelled: () => new CancelledError('aborted'),
    Overloaded: () => new OverloadedError('100 requests in flight'),
    NotSupported: () => new NotSupportedError('SCAN'),
    Internal: () => new Error('store.get is not a function'),
  }
  const make = byCode[code]
  assert.ok(make, `an error for ${code}`)
  return make()
}

/** i18next's way with __name__ substitutions, for one catalogue's `common` section. */
function translator(common: Record<string, Record<string, string>>) {
  return (key: string, subs: Record<string, string | number> = {}) => {
    const [section, name] = key.split('.') as [string, string]
    const text = common[section]?.[name]
    if (text === undefined) return `node-red-contrib-aio-statestore/ss-config:common.${key}`
    return text.replace(/__(\w+)__/g, (_, v: string) => String(subs[v]))
  }
}

describe('error words: each code names its subject and says what to do, in every language', () => {
  it('covers every code that is not the msg’s own fault, with an error of that code', () => {
    assert.ok(
      STORE_CODES.includes('MissingFencingToken') &&
        STORE_CODES.includes('NotConnected') &&
        STORE_CODES.includes('Internal'),
    )
    assert.deepEqual(
      STORE_CODES.filter((code) => describeError(errorOf(code)).code !== code),
      [],
    )
  })

  for (const language of readdirSync(LOCALES)) {
    it(`${language}: the key first, the catalogue's hint, the error's own words where the hint takes them`, () => {
      const catalogue = JSON.parse(readFileSync(join(LOCALES, language, 'ss-config.json'), 'utf8')) as {
        common: Record<string, Record<string, string>>
      }
      const explain = catalogue.common.explain ?? {}
      assert.deepEqual(
        STORE_CODES.filter((code) => !explain[code]),
        [],
        'a hint for every code',
      )
      const t = translator(catalogue.common)
      for (const code of STORE_CODES) {
        const err = errorOf(code)
        const failure = worded(err, 'line/7 setpoint', t)
        assert.ok(failure instanceof NodeFailure, code)
        assert.equal(failure.code, code)
        assert.ok(
          failure.message.includes('"line/7 setpoint"'),
          `${language} ${code} names the key: ${failure.message}`,
        )
        assert.notEqual(
          explain[code]!.replace(/__reason__/g, '').replace(/[\s:：()（）]/g, ''),
          '',
          `${language} ${code}: a hint beyond the reason`,
        )
        if (explain[code]!.includes('__reason__'))
          assert.ok(failure.message.includes((err as Error).message), `${language} ${code} keeps the reason`)
        assert.doesNotMatch(failure.message, /__\w+__|undefined/, `${language} ${code}: every placeholder filled`)
        const noKey = worded(err, undefined, t) as NodeFailure
        assert.equal(
          noKey.message,
          t(`explain.${code}`, { reason: (err as Error).message }),
          'without a key: the hint alone',
        )
      }
    })
  }
})

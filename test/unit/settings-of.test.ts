/**
 * Each node's config as its TS reads it is derived from its schema (nodes/config/schemas.ts), and its
 * fallbacks are read from there: the types are checked by `npx tsc -p tsconfig.test.json` (a
 * misspelt setting does not compile), the fallbacks at run time.
 */
import assert from 'node:assert/strict'
import { CLIENT_DEFAULTS } from '../../src/client'
import { DEFAULT_KEEP_MS, DEFAULT_LEASE_MS } from '../../src/locks'
import type { Decoding } from '../../nodes/msg/codec'
import { DEFAULT_IN_FLIGHT, DEFAULT_MAX_KEYS } from '../../nodes/msg/key-list'
import {
  DEFAULT_EXPRESSION_TIMEOUT_MS,
  DEFAULT_HOLD_MS,
  DEFAULT_QUEUE,
  DEFAULT_WAIT_MS,
  SCHEMAS,
  wholeDefaults,
  type SettingsOf,
} from '../../nodes/config/schemas'

/** True only when A and B are the same type. */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false
/** True when the property may be absent (a flow saved before the setting existed). */
type Optional<T, K extends keyof T> = object extends Pick<T, K> ? true : false

describe('unit: a node reads its config as its schema declares it', () => {
  it('a setting the schema declares compiles; a misspelt one or one of another node does not', () => {
    const lock = { leaseMs: '15000', holdMs: 0 } as unknown as SettingsOf<'ss-lock'>
    const watch = { keys: 'a/#' } as unknown as SettingsOf<'ss-watch'>
    // @ts-expect-error: the setting is leaseMs
    assert.equal(lock.leaseMS, undefined)
    // @ts-expect-error: queue is a setting of ss-lock, not of ss-watch
    assert.equal(watch.queue, undefined)
    assert.equal(lock.leaseMs, '15000')
    assert.equal(watch.keys, 'a/#')
  })

  it('a closed setting reads as its choices, a whole number as text or a number, a switch as a boolean', () => {
    const closed: [
      Equal<SettingsOf<'ss-lock'>['action'], 'acquire' | 'renew' | 'release' | 'holder' | 'complete'>,
      Equal<SettingsOf<'ss-lock'>['mode'], 'lease' | 'lock' | 'leader' | 'gate' | 'once'>,
      Equal<SettingsOf<'ss-get'>['decode'], Decoding>,
      Equal<SettingsOf<'ss-del'>['mode'], 'delete' | 'vdel'>,
      Equal<SettingsOf<'ss-set'>['condition'], 'always' | 'NX' | 'NEX'>,
      Equal<SettingsOf<'ss-lock'>['leaseMs'], string | number>,
      Equal<SettingsOf<'ss-watch'>['initial'], boolean>,
      Equal<SettingsOf<'ss-config'>['tls'], string>,
    ] = [true, true, true, true, true, true, true, true]
    assert.ok(closed.every(Boolean))
    assert.deepEqual(SCHEMAS['ss-lock'].defaults.action.choices, ['acquire', 'renew', 'release', 'holder', 'complete'])
  })

  it('a setting added after its node is optional, one the node was born with is not', () => {
    const optional: [
      Optional<SettingsOf<'ss-get'>, 'sendAs'>,
      Optional<SettingsOf<'ss-set'>, 'maxKeys'>,
      Optional<SettingsOf<'ss-config'>, 'metricCategory'>,
      Optional<SettingsOf<'ss-lock'>, 'store'>,
      Optional<SettingsOf<'ss-del'>, 'mode'>,
    ] = [true, true, true, false, false]
    assert.deepEqual(optional, [true, true, true, false, false])
    assert.equal(SCHEMAS['ss-get'].defaults.sendAs.added, true)
  })

  it("the fallbacks are the schema's whole-number defaults, blank ones left out", () => {
    assert.deepEqual(wholeDefaults('ss-lock'), {
      leaseMs: DEFAULT_LEASE_MS,
      timeout: DEFAULT_WAIT_MS,
      holdMs: DEFAULT_HOLD_MS,
      queue: DEFAULT_QUEUE,
      limit: 1,
      keepMs: DEFAULT_KEEP_MS,
    })
    assert.deepEqual(wholeDefaults('ss-update'), {
      timeout: DEFAULT_LEASE_MS,
      exprTimeout: DEFAULT_EXPRESSION_TIMEOUT_MS,
    })
    assert.deepEqual(wholeDefaults('ss-del'), { inFlight: DEFAULT_IN_FLIGHT, maxKeys: DEFAULT_MAX_KEYS })
    assert.deepEqual(wholeDefaults('ss-config'), {
      keepalive: CLIENT_DEFAULTS.keepaliveSec,
      requestTimeout: CLIENT_DEFAULTS.requestTimeoutMs,
      maxInFlight: CLIENT_DEFAULTS.maxInFlight,
      queueMemory: CLIENT_DEFAULTS.maxQueuedBytes / (1024 * 1024),
    })
    assert.deepEqual(wholeDefaults('ss-watch'), {})
  })
})

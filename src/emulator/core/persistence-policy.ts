import { Prop } from '../../protocol'
import { Fields } from './resource-error'
import { KeyPattern, keyTypeOf } from './key-pattern'

/**
 * Which keys the state store writes to disk, from `spec.persistence` of a Broker resource (AIO docs
 * "Configure broker persistence"; ARM BrokerPersistence, BrokerStateStorePolicy):
 * - `stateStore.mode: None`: no key; `All`: every key; `Custom`: the keys of
 *   `stateStoreSettings.stateStoreResources`, and, when `stateStoreSettings.dynamic.mode` is
 *   `Enabled`, also a key SET with the dynamic user property (logical OR, as the docs say).
 * - `dynamicSettings: { userPropertyKey, userPropertyValue }`: that property, default
 *   `aio-persistence: true`.
 * Where the resource leaves it open, the emulator chooses, and docs/emulator.md says so: without
 * `stateStore`, only the dynamic property persists (what the emulator always did); in Custom,
 * `dynamic` absent means Disabled. Pure: no file.
 */

export interface PersistenceDecision {
  persist: boolean
  /**
   * Why (`stateStoreResources[0] Pattern "config/*"`, `the user property aio-persistence=true`, `mode All`); null when
   * not persisted.
   */
  rule: string | null
}

type Mode = 'None' | 'All' | 'Custom'

interface CompiledResource {
  where: string
  keys: KeyPattern[]
}

export const DEFAULT_DYNAMIC_PROPERTY = { userPropertyKey: Prop.persist, userPropertyValue: 'true' } as const

export class PersistencePolicy {
  private constructor(
    private readonly mode: Mode,
    private readonly resources: CompiledResource[],
    private readonly dynamic: boolean,
    readonly userPropertyKey: string,
    readonly userPropertyValue: string,
  ) {}

  /** The emulator without a Broker resource: keys SET with `aio-persistence: true` persist. */
  static readonly dynamicOnly = new PersistencePolicy(
    'Custom',
    [],
    true,
    DEFAULT_DYNAMIC_PROPERTY.userPropertyKey,
    DEFAULT_DYNAMIC_PROPERTY.userPropertyValue,
  )

  /** From `spec.persistence`; throws ResourceError. */
  static compile(value: unknown, f: Fields): PersistencePolicy {
    const p = f.object(value, [
      'maxSize',
      'persistentVolumeClaimSpec',
      'encryption',
      'dynamicSettings',
      'retain',
      'stateStore',
      'subscriberQueue',
    ])
    let key: string = DEFAULT_DYNAMIC_PROPERTY.userPropertyKey
    let val: string = DEFAULT_DYNAMIC_PROPERTY.userPropertyValue
    if (p.dynamicSettings !== undefined) {
      const df = f.at('dynamicSettings')
      const d = df.object(p.dynamicSettings, ['userPropertyKey', 'userPropertyValue'])
      if (d.userPropertyKey !== undefined)
        key =
          typeof d.userPropertyKey === 'string' && d.userPropertyKey
            ? d.userPropertyKey
            : df.at('userPropertyKey').fail('must be a non-empty string')
      if (d.userPropertyValue !== undefined)
        val =
          typeof d.userPropertyValue === 'string'
            ? d.userPropertyValue
            : df.at('userPropertyValue').fail('must be a string')
    }
    if (p.stateStore === undefined) return new PersistencePolicy('Custom', [], true, key, val)
    const sf = f.at('stateStore')
    const s = sf.object(p.stateStore, ['mode', 'stateStoreSettings'])
    const mode = sf.at('mode').oneOf(s.mode, ['None', 'All', 'Custom'] as const)
    if (mode !== 'Custom') {
      if (s.stateStoreSettings !== undefined)
        sf.at('stateStoreSettings').fail(`applies to mode Custom only, not ${mode}`)
      return new PersistencePolicy(mode, [], false, key, val)
    }
    const cf = sf.at('stateStoreSettings')
    const settings =
      s.stateStoreSettings === undefined ? {} : cf.object(s.stateStoreSettings, ['stateStoreResources', 'dynamic'])
    let dynamic = false
    if (settings.dynamic !== undefined) {
      const d = cf.at('dynamic').object(settings.dynamic, ['mode'])
      dynamic = cf.at('dynamic', 'mode').oneOf(d.mode, ['Enabled', 'Disabled'] as const) === 'Enabled'
    }
    const resources =
      settings.stateStoreResources === undefined
        ? []
        : cf
            .at('stateStoreResources')
            .list(settings.stateStoreResources)
            .map((r, i) => {
              const rf = cf.at('stateStoreResources', i)
              const o = rf.object(r, ['keyType', 'keys'])
              const keyType =
                o.keyType === undefined
                  ? 'Pattern'
                  : (keyTypeOf(o.keyType) ??
                    rf
                      .at('keyType')
                      .fail(`must be Pattern, String or Binary (either case), not ${JSON.stringify(o.keyType)}`))
              const keys = rf.at('keys').strings(o.keys ?? rf.at('keys').fail('is missing'))
              return {
                where: `stateStoreResources[${i}] ${keyType}`,
                keys: keys.map((k, j) =>
                  rf.at('keys', j).pattern(() => new KeyPattern(keyType, k, { substitutions: false })),
                ),
              }
            })
    return new PersistencePolicy('Custom', resources, dynamic, key, val)
  }

  /** One line for the start log. */
  describe(): string {
    if (this.mode !== 'Custom') return `state store persistence mode ${this.mode}`
    const keys = this.resources.reduce((n, r) => n + r.keys.length, 0)
    const dynamic = this.dynamic
      ? `the user property ${this.userPropertyKey}=${this.userPropertyValue}`
      : 'no user property'
    return `state store persistence mode Custom: ${keys} key pattern(s) and ${dynamic}`
  }

  /** Whether a SET of this key (latin1) is persisted; `prop` reads the request's user properties. */
  decide(key: string, prop: (name: string) => string | undefined): PersistenceDecision {
    const byKey = this.decideKey(key)
    if (byKey.persist) return byKey
    if (this.dynamic && this.asked(prop))
      return { persist: true, rule: `the user property ${this.userPropertyKey}=${this.userPropertyValue}` }
    return { persist: false, rule: null }
  }

  /** The key rules alone (no request at hand: the key inspector). */
  decideKey(key: string): PersistenceDecision {
    if (this.mode === 'All') return { persist: true, rule: 'mode All' }
    if (this.mode === 'None') return { persist: false, rule: null }
    for (const r of this.resources) {
      const hit = r.keys.find((k) => k.matches(key))
      if (hit) return { persist: true, rule: `${r.where} ${JSON.stringify(hit.source)}` }
    }
    return { persist: false, rule: null }
  }

  /**
   * The dynamic property's value; compared without regard to case, as the emulator always took `aio-persistence: TRUE`.
   */
  private asked(prop: (name: string) => string | undefined): boolean {
    return prop(this.userPropertyKey)?.toLowerCase() === this.userPropertyValue.toLowerCase()
  }
}

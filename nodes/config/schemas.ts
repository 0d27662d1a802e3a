import { CLIENT_DEFAULTS } from '../../src/client'
import { DEFAULT_KEEP_MS, DEFAULT_LEASE_MS } from '../../src/locks'
import { DECODINGS } from '../msg/codec'
import { DEFAULT_IN_FLIGHT, DEFAULT_MAX_KEYS } from '../msg/key-list'

/**
 * Each node's settings and their defaults, declared once. The build writes each editor file's
 * registration header (category, palette look, `defaults`) from this table where the file says
 * `// registration: nodes/config/schemas.ts` (scripts/copy-assets.mjs), and each node's TS derives its
 * config type (`SettingsOf`) and its fallbacks (`wholeDefaults`) from it. A setting added here
 * appears in the editor; its form row and its catalogue texts are the editor file's and the locales'.
 */

/**
 * How the editor checks a setting: a whole number, a required typed input, a typed input, or an editor function of its
 * own.
 */
export type Validate = 'wholeNumber' | { requiredTyped: string } | { typedInput: string } | { editor: string[] }

export interface Setting {
  value?: string | number | boolean
  /** A config node's type, for a setting that names one. */
  type?: string
  required?: boolean
  validate?: Validate
  /** The values a closed setting takes; the node's TS reads it as their union. */
  choices?: readonly string[]
  /** Added after its node: a flow saved before lacks it, so the node's TS reads it as optional. */
  added?: true
}

export interface NodeSchema {
  /** `config` for a config node, else a palette node with the category's colour and the node's icon. */
  category: 'config' | 'state store'
  defaults: Record<string, Setting>
}

/**
 * Lock mode's defaults keep a forgotten release from blocking the msgs behind it for longer than
 * they wait: a msg holds a lock at most 10 s (a get, a computation and a set take milliseconds),
 * and a msg waits up to 30 s, so the next one still gets the lock after a dropped msg's hold ends.
 */
export const DEFAULT_HOLD_MS = 10_000
/** How long a msg waits for a lock unless the node says otherwise (longer than a hold may last). */
export const DEFAULT_WAIT_MS = 30_000
/** How long one evaluation of *update key*'s expression may run unless the node says otherwise. */
export const DEFAULT_EXPRESSION_TIMEOUT_MS = 1000
/** Msgs that may wait for a lock in lock mode unless the node says otherwise. */
export const DEFAULT_QUEUE = 100

const whole = <const V extends number | ''>(value: V) =>
  ({ value: String(value) as `${V}`, validate: 'wholeNumber' }) as const
/** A closed setting: its default and the values it takes. */
const oneOf = <const C extends readonly string[]>(value: C[number], choices: C) => ({ value, choices }) as const
const added = <const S extends Setting>(setting: S) => ({ ...setting, added: true }) as const
const name = { value: '' }
const store = { value: '', type: 'ss-config', required: true }
const msgKey = { value: 'topic', validate: { requiredTyped: 'keyType' } }
const keyType = { value: 'msg' }
const overrides = { value: true }
const inFlight = added(whole(DEFAULT_IN_FLIGHT))
const maxKeys = added(whole(DEFAULT_MAX_KEYS))
/** Several keys: one msg for all or one per key. */
const sendAs = added(oneOf('all', ['all', 'key']))
const decode = oneOf('auto', DECODINGS)

export const SCHEMAS = {
  'ss-config': {
    category: 'config',
    defaults: {
      name,
      embedded: { value: false },
      broker: {
        validate: {
          editor: [
            '// Blank: $AIO_STATESTORE_URL when set (npm start sets it), else mqtt://127.0.0.1:1883; the ' +
              'placeholder shows which.',
            'value: "",',
            'validate: function (v, opt) {',
            '  var embedded = $("#node-config-input-embedded").length ? ' +
              '$("#node-config-input-embedded").is(":checked") : this.embedded;',
            '  return embedded ? true : window.AioStateStore.brokerUrl(v, opt);',
            '}',
          ],
        },
      },
      clientId: { value: '' },
      usetls: { value: false },
      tls: { type: 'tls-config', required: false },
      keepalive: whole(CLIENT_DEFAULTS.keepaliveSec),
      cleanStart: { value: true },
      sessionExpiry: whole(''),
      requestTimeout: whole(CLIENT_DEFAULTS.requestTimeoutMs),
      connectionWait: added(whole('')),
      maxInFlight: whole(CLIENT_DEFAULTS.maxInFlight),
      // In MiB: the client's maxQueuedBytes.
      queueMemory: added(whole(CLIENT_DEFAULTS.maxQueuedBytes / (1024 * 1024))),
      // `v1` or `preview`; the client refuses anything else.
      protocol: added({ value: 'v1' }),
      // Blank: aio-persistence=true, the Broker resource's default dynamicSettings.
      persistenceProperty: {
        added: true,
        value: '',
        validate: {
          editor: ['value: "",', 'validate: function (v) {', '  return !v || /^\\s*[^=\\s][^=]*=/.test(v);', '}'],
        },
      },
      // Absent (a flow from before the setting): this package's name; '' sends none.
      metricCategory: added({ value: 'node-red-contrib-aio-statestore' }),
    },
  },
  'ss-get': {
    category: 'state store',
    defaults: {
      name,
      store,
      key: msgKey,
      keyType,
      decode,
      notFound: oneOf('payload', ['output', 'payload']),
      // `value` reads the key (or keys); `keys` lists the keys the Key matches as a glob (SCAN), `values` too.
      mode: added(oneOf('value', ['value', 'keys', 'values'])),
      // With a pattern and values, `page` sends one msg per page.
      sendAs: added(oneOf('all', ['all', 'page', 'key'])),
      inFlight,
      maxKeys,
      outputs: { value: 1 },
    },
  },
  'ss-set': {
    category: 'state store',
    defaults: {
      name,
      store,
      key: msgKey,
      keyType,
      value: { value: 'payload', validate: { typedInput: 'valueType' } },
      valueType: { value: 'msg' },
      condition: oneOf('always', ['always', 'NX', 'NEX']),
      expiry: whole(''),
      fencingToken: { value: 'fencingToken' },
      fencingTokenType: { value: 'msg' },
      persist: { value: false },
      notApplied: oneOf('same', ['output', 'same']),
      overrides,
      encode: added(oneOf('auto', ['auto', 'ndjson'])),
      // `object`: the Value is an object of key → value, each property written to its key (the Key is not used).
      multi: added(oneOf('key', ['key', 'object'])),
      sendAs,
      inFlight,
      maxKeys,
      outputs: { value: 1 },
    },
  },
  'ss-del': {
    category: 'state store',
    defaults: {
      name,
      store,
      key: msgKey,
      keyType,
      mode: oneOf('delete', ['delete', 'vdel']),
      value: { value: 'payload', validate: { typedInput: 'valueType' } },
      valueType: { value: 'msg' },
      fencingToken: { value: 'fencingToken' },
      fencingTokenType: { value: 'msg' },
      sendAs,
      inFlight,
      maxKeys,
    },
  },
  'ss-lock': {
    category: 'state store',
    defaults: {
      name,
      store,
      key: {
        validate: {
          editor: [
            'value: "",',
            'validate: function (v, opt) {',
            '  var mode = $("#node-input-mode").val() || this.mode;',
            '  var type = $("#node-input-keyType").val() || this.keyType;',
            '  // A leader campaigns when the flow starts, before any msg exists to name the position.',
            '  if ((mode === "leader" || mode === "gate") && type === "msg") return opt ? ' +
              'RED._("node-red:validator.errors.invalid-prop") : false;',
            '  // A release takes the lock from the hold the msg carries (msg.lock): no name needed.',
            '  var action = $("#node-input-action").val() || this.action;',
            '  if (action === "release" && mode !== "leader" && mode !== "gate" && type === "str" && !v) return true;',
            '  // Run once with a blank name claims an id derived from the msg; a completion takes the claim from ' +
              'msg.lock.',
            '  if ((mode === "once" || action === "complete") && type === "str" && !v) return true;',
            '  return window.AioStateStore.requiredTyped("keyType").call(this, v, opt);',
            '}',
          ],
        },
      },
      keyType: { value: 'str' },
      mode: oneOf('lease', ['lease', 'lock', 'leader', 'gate', 'once']),
      action: oneOf('acquire', ['acquire', 'renew', 'release', 'holder', 'complete']),
      holder: { value: '' },
      leaseMs: whole(DEFAULT_LEASE_MS),
      timeout: whole(DEFAULT_WAIT_MS),
      holdMs: whole(DEFAULT_HOLD_MS),
      queue: whole(DEFAULT_QUEUE),
      limit: whole(1),
      autoRenew: { value: true },
      campaign: { value: true },
      keepMs: whole(DEFAULT_KEEP_MS),
      overrides,
    },
  },
  'ss-update': {
    category: 'state store',
    defaults: {
      name,
      store,
      key: msgKey,
      keyType,
      expression: { value: 'value + 1', required: true },
      initial: { value: '0', validate: { typedInput: 'initialType' } },
      initialType: { value: 'num' },
      timeout: whole(DEFAULT_LEASE_MS),
      exprTimeout: whole(DEFAULT_EXPRESSION_TIMEOUT_MS),
      holder: { value: '' },
      persist: { value: false },
    },
  },
  'ss-watch': {
    category: 'state store',
    defaults: {
      name,
      store,
      keys: { value: '' },
      decode,
      initial: { value: false },
      overrides,
    },
  },
} as const satisfies Record<string, NodeSchema>

export type NodeType = keyof typeof SCHEMAS

type Defaults<T extends NodeType> = (typeof SCHEMAS)[T]['defaults']

/** How a node's TS reads a setting: a closed one as its values, a whole number as the editor or a flow wrote it. */
type SettingType<S> = S extends { readonly choices: readonly (infer C)[] }
  ? C
  : S extends { readonly validate: 'wholeNumber' }
    ? string | number
    : S extends { readonly value: boolean }
      ? boolean
      : S extends { readonly value: number }
        ? number
        : string

type AddedKeys<D> = { [K in keyof D]: D[K] extends { readonly added: true } ? K : never }[keyof D]

/**
 * A node's config as its TS reads it, derived from its schema (declared once): every setting, those
 * added after the node optional; `name` is Node-RED's own.
 */
export type SettingsOf<T extends NodeType, D = Defaults<T>> = {
  readonly [K in Exclude<keyof D, AddedKeys<D> | 'name'>]: SettingType<D[K]>
} & { readonly [K in AddedKeys<D>]?: SettingType<D[K]> }

type WholeKeys<D> = {
  [K in keyof D]: D[K] extends { readonly validate: 'wholeNumber'; readonly value: infer V }
    ? V extends ''
      ? never
      : K
    : never
}[keyof D]

/** The fallbacks of a node's whole-number settings with a default, read from its schema. */
export function wholeDefaults<T extends NodeType>(type: T): Readonly<Record<WholeKeys<Defaults<T>>, number>> {
  const found: Record<string, number> = {}
  for (const [key, setting] of Object.entries(SCHEMAS[type].defaults as Record<string, Setting>))
    if (setting.validate === 'wholeNumber' && setting.value !== '') found[key] = Number(setting.value)
  return found as Record<WholeKeys<Defaults<T>>, number>
}

const COLOR = '#7fb2e5'

function validator(validate: Validate): string {
  if (validate === 'wholeNumber') return 'function (v, opt) { return window.AioStateStore.wholeNumber(v, opt); }'
  if ('requiredTyped' in validate)
    return (
      `function (v, opt) { return ` +
      `window.AioStateStore.requiredTyped(${JSON.stringify(validate.requiredTyped)}).call(this, v, opt); }`
    )
  if ('typedInput' in validate)
    return (
      `function (v, opt) { return RED.validators.typedInput(${JSON.stringify(validate.typedInput)}).call(this, ` +
      `v, opt); }`
    )
  throw new Error('an editor function is written out in full')
}

function settingLine(key: string, setting: Setting, indent: string): string {
  const { validate } = setting
  if (validate !== undefined && typeof validate === 'object' && 'editor' in validate) {
    return [`${indent}${key}: {`, ...validate.editor.map((line) => `${indent}  ${line}`), `${indent}}`].join('\n')
  }
  const parts: string[] = []
  if (setting.value !== undefined) parts.push(`value: ${JSON.stringify(setting.value)}`)
  if (setting.type !== undefined) parts.push(`type: ${JSON.stringify(setting.type)}`)
  if (setting.required !== undefined) parts.push(`required: ${setting.required}`)
  if (validate !== undefined) parts.push(`validate: ${validator(validate)}`)
  return `${indent}${key}: { ${parts.join(', ')} }`
}

/** The lines of an editor file's registration header for `type`: category, palette look and defaults. */
export function registrationHeader(type: NodeType): string {
  const schema: NodeSchema = SCHEMAS[type]
  const lines = [`    category: ${JSON.stringify(schema.category)},`]
  if (schema.category !== 'config') lines.push(`    color: "${COLOR}",`, `    icon: "${type}.svg",`)
  lines.push(`    paletteLabel: function () { return this._("${type}.paletteLabel"); },`)
  if (schema.category !== 'config') {
    lines.push(
      `    onpaletteadd: function () { if (window.AioStateStore) ` +
        `window.AioStateStore.paletteSearchWords("${type}"); },`,
      '    onadd: function () { window.AioStateStore.onadd.call(this); },',
    )
  }
  lines.push(
    '    defaults: {',
    Object.entries(schema.defaults)
      .map(([key, setting]) => settingLine(key, setting, '      '))
      .join(',\n'),
    '    },',
  )
  return lines.join('\n') + '\n'
}

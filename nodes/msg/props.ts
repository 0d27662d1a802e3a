import type { Node, NodeAPI, NodeMessage } from 'node-red'
import { Hlc } from '../../src/hlc'
import { maxNotifiedKeyBytes } from '../../src/protocol'
import { InputError } from '../lib/errors'
import type { Translate } from '../lib/i18n'
import { rememberKey } from './msg-key'
import { wholeNumber as readWholeNumber } from '../../src/checks/whole-number'

/**
 * The longest key any node accepts: a bound no real key comes near, so a runaway msg fails here
 * rather than as an oversized request. Watching allows less (see parseWatchedKey).
 */
export const MAX_KEY_BYTES = 65_535

/**
 * A typedInput value as stored in the flow: the value and its type (`str`, `msg`, `flow`, `global`, `env`, `jsonata`,
 * ...).
 */
export interface TypedProperty {
  value: string
  type: string
}

/** Where get, set and del read key, value and fencing token unless configured otherwise (the editor's defaults too). */
const TYPED_DEFAULTS = {
  key: { value: 'topic', type: 'msg' },
  value: { value: 'payload', type: 'msg' },
  fencingToken: { value: 'fencingToken', type: 'msg' },
} as const

/** A typed-input setting of a node (`<name>` and `<name>Type`), with the shared default when unset. */
export function typedSetting(def: object, name: keyof typeof TYPED_DEFAULTS): TypedProperty {
  const settings = def as Record<string, unknown>
  const value = settings[name]
  const type = settings[`${name}Type`]
  return {
    value: typeof value === 'string' ? value : TYPED_DEFAULTS[name].value,
    type: typeof type === 'string' && type !== '' ? type : TYPED_DEFAULTS[name].type,
  }
}

/**
 * `RED.util.evaluateNodeProperty` in its callback form: the only form that evaluates JSONata (async since Node-RED 4)
 * and async context stores.
 */
export function evaluate(RED: NodeAPI, node: Node, prop: TypedProperty, msg: NodeMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    try {
      RED.util.evaluateNodeProperty(prop.value, prop.type, node, msg, (err, result) =>
        err ? reject(err) : resolve(result),
      )
    } catch (err) {
      // `json` and `bin` parse synchronously and throw even in the callback form.
      reject(err)
    }
  })
}

/**
 * Reads a typedInput; a failure (bad JSONata, unreadable context) becomes an input error naming the property by its
 * label in the edit dialog.
 */
export async function evaluateInput(
  RED: NodeAPI,
  node: Node,
  prop: TypedProperty,
  msg: NodeMessage,
  what: 'key' | 'value' | 'fencingToken',
  t: Translate,
): Promise<unknown> {
  try {
    return await evaluate(RED, node, prop, msg)
  } catch (err) {
    throw new InputError(
      'PropertyFailed',
      t('errors.property', { property: t(`label.${what}`), error: err instanceof Error ? err.message : String(err) }),
    )
  }
}

/**
 * The rule for msg overrides, the same in every node: a setting the help lists as overridable takes
 * the msg property when the node allows overrides and the msg has it (not undefined); otherwise the
 * node's own setting applies. A refused override is ignored, never an error.
 */
export function override<T>(msg: NodeMessage, property: string, allowed: boolean, configured: T): unknown {
  return allowed && msg[property] !== undefined ? msg[property] : configured
}

export function parseKey(key: unknown, t: Translate): string {
  if (key === undefined || key === null) throw new InputError('KeyMissing', t('errors.keyMissing'))
  if (typeof key !== 'string') throw new InputError('KeyNotString', t('errors.keyNotString', { type: typeName(key) }))
  if (key.length === 0) throw new InputError('KeyEmpty', t('errors.keyEmpty'))
  const bytes = Buffer.byteLength(key, 'utf8')
  if (bytes > MAX_KEY_BYTES) throw new InputError('KeyTooLong', t('errors.keyTooLong', { bytes, max: MAX_KEY_BYTES }))
  return key
}

/**
 * Whether a key to watch reads as a glob (`*`, `?` or `[`, as get key's pattern reads). The state
 * store notifies changes of single keys only (KEYNOTIFY has no pattern), so such a key would be
 * registered as the literal key and never fire: the watch node refuses it instead.
 */
export function isKeyPattern(key: string): boolean {
  return /[*?[]/.test(key)
}

/** A key to watch: its notification topic carries it hex-encoded, so the client id sets a lower limit; no pattern. */
export function parseWatchedKey(key: unknown, clientId: string, t: Translate): string {
  const text = parseKey(key, t)
  if (isKeyPattern(text))
    throw new InputError('PatternNotWatchable', t('errors.patternNotWatchable', { key: preview(text) }))
  const bytes = Buffer.byteLength(text, 'utf8')
  const max = maxNotifiedKeyBytes(clientId)
  if (bytes > max) throw new InputError('KeyTooLong', t('errors.keyTooLongToWatch', { bytes, max }))
  return text
}

/**
 * The key a msg addresses: what the node's Key setting names, and nothing else (a fixed string, or
 * `msg.topic`, a context value, `${ENV}`, JSONata, ...). No msg property outside the settings moves
 * the key, the override option included: every state store node leaves the key it used in `msg.key`,
 * so reading that would move a node whose Key is `msg.topic` to the previous node's key.
 */
export async function resolveKey(
  RED: NodeAPI,
  node: Node,
  msg: NodeMessage,
  key: TypedProperty,
  t: Translate,
): Promise<string> {
  return parseKey(await keyInput(RED, node, msg, key, t), t)
}

/** What resolveKey reads, before it is checked to be one key (get and delete also take an array of keys). */
export async function keyInput(
  RED: NodeAPI,
  node: Node,
  msg: NodeMessage,
  key: TypedProperty,
  t: Translate,
): Promise<unknown> {
  const value = await evaluateInput(RED, node, key, msg, 'key', t)
  if (typeof value === 'string') rememberKey(msg, value)
  return value
}

/** Fencing tokens travel as HLC strings (`msg.fencingToken` from ss-lock); empty or absent means "no token". */
export function parseFencingToken(value: unknown, t: Translate): Hlc | undefined {
  if (value === undefined || value === null || value === '') return undefined
  if (value instanceof Hlc) return value
  if (typeof value === 'string') {
    try {
      return Hlc.parse(value)
    } catch {
      // fall through to the error below: the parse message is about HLC internals, not about the msg
    }
  }
  throw new InputError('FencingTokenInvalid', t('errors.fencingToken', { value: preview(value) }))
}

/** The fencing token a msg carries per the node's setting; the typed-input type `none` never sends one. */
export async function resolveFencingToken(
  RED: NodeAPI,
  node: Node,
  msg: NodeMessage,
  token: TypedProperty,
  t: Translate,
): Promise<Hlc | undefined> {
  return token.type === 'none'
    ? undefined
    : parseFencingToken(await evaluateInput(RED, node, token, msg, 'fencingToken', t), t)
}

/**
 * Expiry in whole milliseconds; 0, empty or absent means none. Numeric strings are accepted (`${ENV}`, form fields).
 */
export function parseExpiry(value: unknown, t: Translate): number | undefined {
  if (value === undefined || value === null || value === '' || value === 0 || value === '0') return undefined
  const n = readWholeNumber(value)
  if (n === undefined) throw new InputError('ExpiryInvalid', t('errors.expiry', { value: preview(value) }))
  return n
}

/** A whole number >= 0 from a node setting, or the default when blank or not such a number. */
export function wholeNumber(value: unknown, fallback: number): number {
  return readWholeNumber(value) ?? fallback
}

/** A positive whole number of milliseconds from a node setting, or the default when blank. */
export function positiveInt(value: unknown, fallback: number): number {
  return readWholeNumber(value, 1) ?? fallback
}

export function typeName(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'array'
  if (Buffer.isBuffer(value)) return 'buffer'
  return typeof value
}

export function preview(value: unknown): string {
  let text: string
  try {
    text = typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value))
  } catch {
    text = typeName(value)
  }
  return text.length > 40 ? `${text.slice(0, 39)}…` : text
}

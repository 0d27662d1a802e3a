import type { NodeAPI, NodeDef, Node } from 'node-red'
import type { SetOptions } from '../src/client'
import { encodeAs, isEncoding, type Encoding } from './msg/codec'
import { InputError } from './lib/errors'
import { onInput } from './msg/handler'
import { parseKeyValues } from './msg/key-list'
import { runKeys, type SendAs } from './msg/many-keys'
import {
  evaluateInput,
  override,
  parseExpiry,
  positiveInt,
  preview,
  resolveFencingToken,
  resolveKey,
  typedSetting,
} from './msg/props'
import { attach } from './config/config-node'
import { writeTimeUnderHold } from './lock/write-guard'
import { SCHEMAS, wholeDefaults, type SettingsOf } from './config/schemas'

const DEFAULTS = SCHEMAS['ss-set'].defaults

/** The node's config as saved, derived from its schema. */
type SetDef = NodeDef & SettingsOf<'ss-set'>

const FALLBACK = wholeDefaults('ss-set')

const CONDITIONS = DEFAULTS.condition.choices

export = function (RED: NodeAPI) {
  function SsSet(this: Node, def: SetDef) {
    RED.nodes.createNode(this, def)
    const node = this
    const { status, t, client } = attach(RED, node, def.store)
    const key = typedSetting(def, 'key')
    const value = typedSetting(def, 'value')
    const token = typedSetting(def, 'fencingToken')
    const overrides = def.overrides !== false
    const secondOutput = def.notApplied === 'output'
    const encoding: Encoding = isEncoding(def.encode) ? def.encode : 'auto'
    const several = def.multi === 'object'
    const sendAs: SendAs = def.sendAs === 'key' ? 'key' : 'all'
    const inFlight = positiveInt(def.inFlight, FALLBACK.inFlight)
    const maxKeys = positiveInt(def.maxKeys, FALLBACK.maxKeys)

    onInput(node, status, async (msg, send) => {
      const name = several ? '' : await resolveKey(RED, node, msg, key, t)
      const input = await evaluateInput(RED, node, value, msg, 'value', t)
      const entries = several ? parseKeyValues(input, maxKeys, t) : null
      const bytes = entries ? Buffer.alloc(0) : encodeAs(input, encoding, t)
      const condition = override(msg, 'condition', overrides, def.condition || DEFAULTS.condition.value)
      if (!CONDITIONS.includes(condition as SetOptions['condition'] & string)) {
        throw new InputError('ConditionInvalid', t('errors.condition', { value: preview(condition) }))
      }
      const options: SetOptions = {
        condition: condition as SetOptions['condition'],
        expiryMs: parseExpiry(override(msg, 'expiry', overrides, def.expiry), t),
        fencingToken: await resolveFencingToken(RED, node, msg, token, t),
        persist: Boolean(override(msg, 'persist', overrides, def.persist === true)),
      }
      const c = await client()
      if (entries) {
        const values = new Map(entries)
        await runKeys({ RED, node, status, t }, msg, send, {
          keys: entries.map(([k]) => k),
          inFlight,
          sendAs,
          run: (k) =>
            c.set(k, encodeAs(values.get(k), encoding, t), { ...options, ...writeTimeUnderHold(msg.lock, k, t) }),
          one(copy, k, result) {
            copy.payload = values.get(k)
            copy.applied = result.applied
            copy.version = result.version.toString()
            status.outcome(result.applied ? 'status.applied' : 'status.notApplied')
            return secondOutput ? (result.applied ? [copy, null] : [null, copy]) : copy
          },
          all(whole, results) {
            whole.applied = Object.fromEntries([...results].map(([k, r]) => [k, r.applied]))
            whole.version = Object.fromEntries([...results].map(([k, r]) => [k, r.version.toString()]))
            status.outcome(
              'status.applied',
              `${[...results.values()].filter((r) => r.applied).length}/${entries.length}`,
            )
            return whole
          },
        })
        return
      }
      const result = await c.set(name, bytes, { ...options, ...writeTimeUnderHold(msg.lock, name, t) })
      msg.key = name
      msg.applied = result.applied
      msg.version = result.version.toString()
      status.outcome(result.applied ? 'status.applied' : 'status.notApplied')
      send(secondOutput ? (result.applied ? [msg, null] : [null, msg]) : msg)
    })
  }

  RED.nodes.registerType('ss-set', SsSet)
}

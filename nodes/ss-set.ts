import type { NodeAPI, NodeDef, Node } from 'node-red'
import type { SetOptions } from '../src/client'
import { encodeAs, isEncoding, type Encoding } from './lib/codec'
import { InputError } from './lib/errors'
import { onInput } from './lib/handler'
import { evaluateInput, override, parseExpiry, preview, resolveFencingToken, resolveKey, typedSetting } from './lib/props'
import { attach } from './lib/config-node'
import { writeTimeUnderHold } from './lock/write-guard'

interface SetDef extends NodeDef {
  store: string
  key: string
  keyType: string
  value: string
  valueType: string
  condition: 'always' | 'NX' | 'NEX'
  expiry: string | number
  fencingToken: string
  fencingTokenType: string
  persist: boolean
  notApplied: 'output' | 'same'
  overrides: boolean
  encode?: Encoding
}

const CONDITIONS = ['always', 'NX', 'NEX'] as const

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

    onInput(node, status, async (msg, send) => {
      const name = await resolveKey(RED, node, msg, key, overrides, t)
      const bytes = encodeAs(await evaluateInput(RED, node, value, msg, 'value', t), encoding, t)
      const condition = override(msg, 'condition', overrides, def.condition || 'always')
      if (!CONDITIONS.includes(condition as SetOptions['condition'] & string)) {
        throw new InputError('ConditionInvalid', t('errors.condition', { value: preview(condition) }))
      }
      const options: SetOptions = {
        condition: condition as SetOptions['condition'],
        expiryMs: parseExpiry(override(msg, 'expiry', overrides, def.expiry), t),
        fencingToken: await resolveFencingToken(RED, node, msg, token, t),
        persist: Boolean(override(msg, 'persist', overrides, def.persist === true)),
      }
      const result = await (await client()).set(name, bytes, { ...options, ...writeTimeUnderHold(msg.lock, name, t) })
      msg.key = name
      msg.applied = result.applied
      msg.version = result.version.toString()
      status.outcome(result.applied ? 'status.applied' : 'status.notApplied')
      send(secondOutput ? (result.applied ? [msg, null] : [null, msg]) : msg)
    })
  }

  RED.nodes.registerType('ss-set', SsSet)
}

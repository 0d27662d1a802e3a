import type { NodeAPI, NodeDef, Node } from 'node-red'
import { encodePayload } from './lib/codec'
import { onInput } from './lib/handler'
import { evaluateInput, resolveFencingToken, resolveKey, typedSetting } from './lib/props'
import { attach } from './lib/config-node'
import { writeTimeUnderHold } from './lock/write-guard'

interface DelDef extends NodeDef {
  store: string
  key: string
  keyType: string
  mode: 'delete' | 'vdel'
  value: string
  valueType: string
  fencingToken: string
  fencingTokenType: string
  overrides: boolean
}

export = function (RED: NodeAPI) {
  function SsDel(this: Node, def: DelDef) {
    RED.nodes.createNode(this, def)
    const node = this
    const { status, t, client } = attach(RED, node, def.store)
    const key = typedSetting(def, 'key')
    const value = typedSetting(def, 'value')
    const token = typedSetting(def, 'fencingToken')
    const overrides = def.overrides !== false
    const onlyIfEqual = def.mode === 'vdel'

    onInput(node, status, async (msg, send) => {
      const name = await resolveKey(RED, node, msg, key, overrides, t)
      const expected = onlyIfEqual ? encodePayload(await evaluateInput(RED, node, value, msg, 'value', t), t) : null
      const fencingToken = await resolveFencingToken(RED, node, msg, token, t)
      const c = await client()
      const options = { fencingToken, ...writeTimeUnderHold(msg.lock, name, t) }
      const result = expected ? await c.vdel(name, expected, options) : await c.del(name, options)
      msg.key = name
      msg.deleted = result.deleted
      status.outcome(result.deleted === 1 ? 'status.deleted' : result.deleted === 0 ? 'status.notFound' : 'status.mismatch')
      send(msg)
    })
  }

  RED.nodes.registerType('ss-del', SsDel)
}

import type { NodeAPI, NodeDef, Node } from 'node-red'
import { decodePayload, isDecoding, type Decoding } from './lib/codec'
import { onInput } from './lib/handler'
import { resolveKey, typedSetting } from './lib/props'
import { attach } from './lib/config-node'

interface GetDef extends NodeDef {
  store: string
  key: string
  keyType: string
  decode: Decoding
  notFound: 'output' | 'payload'
  overrides: boolean
}

export = function (RED: NodeAPI) {
  function SsGet(this: Node, def: GetDef) {
    RED.nodes.createNode(this, def)
    const node = this
    const { status, t, client } = attach(RED, node, def.store)
    const key = typedSetting(def, 'key')
    const decode: Decoding = isDecoding(def.decode) ? def.decode : 'auto'
    const overrides = def.overrides !== false
    const secondOutput = def.notFound === 'output'

    onInput(node, status, async (msg, send) => {
      const name = await resolveKey(RED, node, msg, key, overrides, t)
      const result = await (await client()).get(name)
      if (result.value === null) {
        msg.payload = undefined
        msg.found = false
        msg.version = undefined
        status.outcome('status.notFound')
        send(secondOutput ? [null, msg] : msg)
        return
      }
      msg.payload = decodePayload(result.value, decode, t)
      msg.found = true
      msg.version = result.version?.toString()
      status.outcome('status.found')
      send(secondOutput ? [msg, null] : msg)
    })
  }

  RED.nodes.registerType('ss-get', SsGet)
}

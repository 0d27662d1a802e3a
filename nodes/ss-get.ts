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
  /** `value` reads the key; `keys` lists the keys the Key setting matches as a glob (SCAN). */
  mode?: 'value' | 'keys'
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
    const listKeys = def.mode === 'keys'

    onInput(node, status, async (msg, send) => {
      const name = await resolveKey(RED, node, msg, key, overrides, t)
      if (listKeys) {
        const keys: string[] = []
        for await (const page of (await client()).scan(name)) keys.push(...page)
        msg.payload = keys.sort()
        msg.found = keys.length > 0
        msg.version = undefined
        status.outcome('status.listed', String(keys.length))
        send(secondOutput ? (msg.found ? [msg, null] : [null, msg]) : msg)
        return
      }
      const result = await (await client()).get(name)
      msg.key = name
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

import type { NodeAPI, NodeDef, Node } from 'node-red'
import type { Hlc } from '../src/hlc'
import { encodePayload } from './msg/codec'
import { onInput } from './msg/handler'
import { parseKeyList } from './msg/key-list'
import { runKeys, type SendAs } from './msg/many-keys'
import { evaluateInput, keyInput, parseKey, positiveInt, resolveFencingToken, typedSetting } from './msg/props'
import { attach } from './config/config-node'
import { writeTimeUnderHold } from './lock/write-guard'
import { wholeDefaults, type SettingsOf } from './config/schemas'

/** The node's config as saved, derived from its schema. */
type DelDef = NodeDef & SettingsOf<'ss-del'>

const FALLBACK = wholeDefaults('ss-del')

export = function (RED: NodeAPI) {
  function SsDel(this: Node, def: DelDef) {
    RED.nodes.createNode(this, def)
    const node = this
    const { status, t, client } = attach(RED, node, def.store)
    const key = typedSetting(def, 'key')
    const value = typedSetting(def, 'value')
    const token = typedSetting(def, 'fencingToken')
    const onlyIfEqual = def.mode === 'vdel'
    const sendAs: SendAs = def.sendAs === 'key' ? 'key' : 'all'
    const inFlight = positiveInt(def.inFlight, FALLBACK.inFlight)
    const maxKeys = positiveInt(def.maxKeys, FALLBACK.maxKeys)
    const outcome = (deleted: number) =>
      status.outcome(deleted === 1 ? 'status.deleted' : deleted === 0 ? 'status.notFound' : 'status.mismatch')

    onInput(node, status, async (msg, send) => {
      const input = await keyInput(RED, node, msg, key, t)
      const names = Array.isArray(input) ? parseKeyList(input, maxKeys, t) : null
      const name = names ? '' : parseKey(input, t)
      const expected = onlyIfEqual ? encodePayload(await evaluateInput(RED, node, value, msg, 'value', t), t) : null
      const fencingToken: Hlc | undefined = await resolveFencingToken(RED, node, msg, token, t)
      const c = await client()
      const remove = async (k: string) => {
        const options = { fencingToken, ...writeTimeUnderHold(msg.lock, k, t) }
        return (await (expected ? c.vdel(k, expected, options) : c.del(k, options))).deleted
      }
      if (names) {
        await runKeys({ RED, node, status, t }, msg, send, {
          keys: names,
          inFlight,
          sendAs,
          run: remove,
          one(copy, _k, deleted) {
            copy.deleted = deleted
            outcome(deleted)
            return copy
          },
          all(whole, results) {
            whole.deleted = Object.fromEntries(results)
            status.outcome('status.deleted', `${[...results.values()].filter((d) => d === 1).length}/${names.length}`)
            return whole
          },
        })
        return
      }
      const deleted = await remove(name)
      msg.key = name
      msg.deleted = deleted
      outcome(deleted)
      send(msg)
    })
  }

  RED.nodes.registerType('ss-del', SsDel)
}

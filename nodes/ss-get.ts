import type { NodeAPI, NodeDef, Node, NodeMessage } from 'node-red'
import { decodePayload, isDecoding, type Decoding } from './msg/codec'
import { onInput } from './msg/handler'
import { parseKeyList } from './msg/key-list'
import { runKeys, type Output } from './msg/many-keys'
import { readPattern, type PatternSendAs, type ReadValue } from './msg/pattern-read'
import { keyInput, parseKey, positiveInt, typedSetting } from './msg/props'
import { attach } from './config/config-node'
import { SCHEMAS, wholeDefaults, type SettingsOf } from './config/schemas'

const DEFAULTS = SCHEMAS['ss-get'].defaults

/** The node's config as saved, derived from its schema. */
type GetDef = NodeDef & SettingsOf<'ss-get'>

const FALLBACK = wholeDefaults('ss-get')

export = function (RED: NodeAPI) {
  function SsGet(this: Node, def: GetDef) {
    RED.nodes.createNode(this, def)
    const node = this
    const { status, t, client } = attach(RED, node, def.store)
    const key = typedSetting(def, 'key')
    const decode: Decoding = isDecoding(def.decode) ? def.decode : 'auto'
    const secondOutput = def.notFound === 'output'
    const mode = def.mode ?? DEFAULTS.mode.value
    const sendAs: PatternSendAs = def.sendAs === 'key' || def.sendAs === 'page' ? def.sendAs : 'all'
    const inFlight = positiveInt(def.inFlight, FALLBACK.inFlight)
    const maxKeys = positiveInt(def.maxKeys, FALLBACK.maxKeys)
    const ctx = { RED, node, status, t }
    const route = (msg: NodeMessage, found: boolean): Output =>
      secondOutput ? (found ? [msg, null] : [null, msg]) : msg
    const read = async (name: string): Promise<ReadValue | null> => {
      const result = await (await client()).get(name)
      return result.value === null
        ? null
        : { value: decodePayload(result.value, decode, t), version: result.version?.toString() }
    }

    onInput(node, status, async (msg, send) => {
      const input = await keyInput(RED, node, msg, key, t)
      if (mode === 'keys') {
        const keys: string[] = []
        for await (const page of (await client()).scan(parseKey(input, t))) keys.push(...page)
        msg.payload = keys.sort()
        msg.found = keys.length > 0
        msg.version = undefined
        status.outcome('status.listed', String(keys.length))
        send(route(msg, keys.length > 0))
        return
      }
      if (mode === 'values') {
        const scan = (await client()).scan(parseKey(input, t))
        await readPattern(ctx, msg, send, {
          scan,
          sendAs,
          inFlight,
          maxKeys,
          read,
          route,
          progress: (n) => status.outcome('status.read', String(n)),
        })
        return
      }
      if (Array.isArray(input)) {
        const keys = parseKeyList(input, maxKeys, t)
        await runKeys(ctx, msg, send, {
          keys,
          inFlight,
          sendAs: sendAs === 'key' ? 'key' : 'all',
          run: read,
          one(copy, _name, result) {
            copy.payload = result?.value
            copy.found = result !== null
            copy.version = result?.version
            status.outcome(result ? 'status.found' : 'status.notFound')
            return route(copy, result !== null)
          },
          all(whole, results) {
            const payload: Record<string, unknown> = {}
            const found: Record<string, boolean> = {}
            const version: Record<string, string | undefined> = {}
            for (const [name, result] of results) {
              found[name] = result !== null
              if (result === null) continue
              payload[name] = result.value
              version[name] = result.version
            }
            whole.payload = payload
            whole.found = found
            whole.version = version
            status.outcome('status.found', `${Object.keys(payload).length}/${keys.length}`)
            return whole
          },
        })
        return
      }
      const name = parseKey(input, t)
      const result = await read(name)
      msg.key = name
      msg.payload = result?.value
      msg.found = result !== null
      msg.version = result?.version
      status.outcome(result ? 'status.found' : 'status.notFound')
      send(route(msg, result !== null))
    })
  }

  RED.nodes.registerType('ss-get', SsGet)
}

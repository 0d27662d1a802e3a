import type { NodeAPI, NodeDef, Node, NodeMessage } from 'node-red'
import { DEFAULT_LEASE_MS, keyLockName, updateKey } from '../src/locks'
import { StateStoreError } from '../src/diagnostics/errors'
import type { Hlc } from '../src/hlc'
import { decodePayload, encodePayload } from './msg/codec'
import { InputError } from './lib/errors'
import { bound, cancelAll, evaluateBounded, type Expression, type Running } from './msg/bounded-expression'
import { onInput } from './msg/handler'
import { evaluate, positiveInt, resolveKey, typedSetting } from './msg/props'
import { attach } from './config/config-node'
import { holderName, holdValue } from './lock/holds'
import { SCHEMAS, wholeDefaults, type SettingsOf } from './config/schemas'

const DEFAULTS = SCHEMAS['ss-update'].defaults

/** The node's config as saved, derived from its schema. */
type UpdateDef = NodeDef & SettingsOf<'ss-update'>

const FALLBACK = wholeDefaults('ss-update')

const OWN = 'node-red-contrib-aio-statestore/ss-update:ss-update.'

/** The largest value the node writes: the service's default value limit (the emulator's --max-value-bytes). */
const MAX_VALUE_BYTES = 16 * 1024 * 1024
/** The largest value the expression is given: a larger one fails with ValueTooLarge before it is decoded. */
const MAX_INPUT_BYTES = 1024 * 1024

export = function (RED: NodeAPI) {
  function SsUpdate(this: Node, def: UpdateDef) {
    RED.nodes.createNode(this, def)
    const node = this
    const { store, status, t, client } = attach(RED, node, def.store)
    const key = typedSetting(def, 'key')
    const timeoutMs = positiveInt(def.timeout, FALLBACK.timeout)
    const exprTimeoutMs = positiveInt(def.exprTimeout, FALLBACK.exprTimeout)
    const own = (k: string, s?: Record<string, string | number>) => RED._(OWN + k, s)
    const running: Running = new Set()
    const initial = {
      value: def.initial ?? DEFAULTS.initial.value,
      type: def.initialType || DEFAULTS.initialType.value,
    }
    const holder = holderName(def.holder, store?.clientId, node.id)
    let expression: Expression | null = null
    let expressionError = ''
    try {
      const source = def.expression || 'value'
      expression = bound(RED.util.prepareJSONataExpression(source, node), source, { timeoutMs: exprTimeoutMs, t: own })
      // The expression's input is { value, version, msg }, never the msg itself: Node-RED's legacy
      // mode (taken for an expression that names `msg`) would wrap it in { msg } once more.
      ;(expression as { _legacyMode?: boolean })._legacyMode = false
    } catch (err) {
      expressionError = (err as Error).message
      status.misconfigured(`${OWN}status.badExpression`)
    }

    /** The expression over `value`, `version` and `msg` (the whole input msg), within its time and depth. */
    async function compute(value: unknown, version: Hlc | null, msg: NodeMessage): Promise<unknown> {
      try {
        return await evaluateBounded(
          RED,
          expression!,
          { value, version: version?.toString() ?? null, msg },
          exprTimeoutMs,
          running,
        )
      } catch (err) {
        if (err instanceof InputError || err instanceof StateStoreError) throw err
        throw new InputError('ExpressionFailed', own('errors.expression', { error: (err as Error).message }))
      }
    }
    node.on('close', () => cancelAll(running))

    onInput(node, status, async (msg, send) => {
      if (!expression)
        throw new InputError('ExpressionInvalid', RED._(`${OWN}errors.expression`, { error: expressionError }))
      const name = await resolveKey(RED, node, msg, key, t)
      const start = await evaluate(RED, node, initial, msg)
      // The decoded values of each attempt, by the bytes it wrote: an attempt given up on may still finish computing
      // later.
      const decoded = new Map<unknown, { previous: unknown; value: unknown }>()
      const updated = await updateKey(
        await client(),
        name,
        async (current, version) => {
          // Before anything reads it: one built-in call over a huge value ($split of 40 MB) is one step the time bound
          // cannot stop.
          if (current !== null && current.length > MAX_INPUT_BYTES)
            throw new InputError(
              'ValueTooLarge',
              own('errors.inputTooLarge', { bytes: current.length, max: MAX_INPUT_BYTES }),
            )
          const previous = current === null ? null : decodePayload(current, 'auto', t)
          const value = await compute(current === null ? start : previous, version, msg)
          // A copy of its own: encodePayload hands back a Buffer value as it is, which two attempts may share.
          const bytes = Buffer.from(encodePayload(value, t))
          if (bytes.length > MAX_VALUE_BYTES)
            throw new InputError(
              'ValueTooLarge',
              own('errors.valueTooLarge', { bytes: bytes.length, max: MAX_VALUE_BYTES }),
            )
          decoded.set(bytes, { previous, value })
          return bytes
        },
        {
          // A value of its own per attempt: two msgs in one node must exclude each other too.
          holdValue: () => holdValue(holder),
          leaseMs: DEFAULT_LEASE_MS,
          timeoutMs,
          persist: def.persist === true,
          onLock: (lock) =>
            store?.activity.trackLease(
              node.id,
              String(keyLockName(name)),
              'lock',
              holder,
              DEFAULT_LEASE_MS,
              lock.lease,
            ),
        },
      )
      const written = decoded.get(updated.value)!
      msg.key = name
      msg.payload = written.value
      msg.previous = written.previous
      msg.version = updated.version.toString()
      // The lock's fencing token stays inside the node: the lock is released by now, and on the msg a
      // set or delete node next in the flow would carry it (its default), fencing a key it was never
      // for, or in place of the token of a lock the msg holds.
      status.outcome('status.applied')
      send(msg)
    })
  }

  RED.nodes.registerType('ss-update', SsUpdate)
}

import type { NodeAPI, NodeDef, Node, NodeMessage } from 'node-red'
import { SLOT_SEPARATOR } from '../src/locks'
import { InputError } from './lib/errors'
import { onInput, reportError, type Send } from './msg/handler'
import { evaluateInput, override, positiveInt, preview, parseKey, resolveKey } from './msg/props'
import { attach } from './config/config-node'
import { carried, find, holderName, releaseCarried } from './lock/holds'
import type { Action, LockMode, ModeContext } from './lock/mode'
import { leaseMode } from './lock/lease-mode'
import { lockMode } from './lock/lock-mode'
import { leaderMode } from './lock/leader-mode'
import { onceMode } from './lock/once-mode'
import { derivedClaimKey } from './lock/claim-id'
import { SCHEMAS, wholeDefaults, type SettingsOf } from './config/schemas'

const DEFAULTS = SCHEMAS['ss-lock'].defaults

const FALLBACK = wholeDefaults('ss-lock')
const ACTIONS: readonly string[] = DEFAULTS.action.choices
const MODES: readonly string[] = DEFAULTS.mode.choices

/** The node's config as saved, derived from its schema. */
type LockDef = NodeDef & SettingsOf<'ss-lock'>

/** A whole number ≥ 0 from a setting (0 means "no limit"), or the default when blank or invalid. */
function wholeOrZero(value: unknown, fallback: number): number {
  if (value === '' || value === undefined || value === null) return fallback
  const n = Number(value)
  return Number.isSafeInteger(n) && n >= 0 ? n : fallback
}

export = function (RED: NodeAPI) {
  function SsLock(this: Node, def: LockDef) {
    RED.nodes.createNode(this, def)
    const node = this
    const modeName: LockDef['mode'] = MODES.includes(def.mode) ? def.mode : DEFAULTS.mode.value
    const leaseMs = positiveInt(def.leaseMs, FALLBACK.leaseMs)
    const overrides = def.overrides !== false
    const keyProp = { value: def.key ?? '', type: def.keyType || DEFAULTS.keyType.value }
    let closing = false
    // Set once attached; the config node tells a connection that is up already while attaching.
    let leader: ReturnType<typeof leaderMode> | null = null
    let mode: LockMode | null = null

    const { store, status, t, client } = attach(RED, node, def.store, {
      beforeClose: async () => {
        closing = true
        await mode?.close()
      },
      onConnection: (s) => {
        if (s.state === 'connected') mode?.connected?.()
        if (s.state === 'connected' && leader && def.campaign !== false) void startConfigured()
      },
    })
    const ctx: ModeContext = {
      RED,
      node,
      store,
      status,
      t,
      holder: holderName(def.holder, store?.clientId, node.id),
      leaseMs,
      renewPeriodMs: def.autoRenew !== false ? Math.max(1, Math.floor(leaseMs / 3)) : undefined,
      timeoutMs: positiveInt(def.timeout, FALLBACK.timeout),
      holdMs: wholeOrZero(def.holdMs, FALLBACK.holdMs),
      queueSize: wholeOrZero(def.queue, FALLBACK.queue),
      limit: positiveInt(def.limit, FALLBACK.limit),
      closing: () => closing,
    }
    leader = modeName === 'leader' || modeName === 'gate' ? leaderMode(ctx, { gate: modeName === 'gate' }) : null
    const modeOfNode: LockMode =
      leader ??
      (modeName === 'lock'
        ? lockMode(ctx)
        : modeName === 'once'
          ? onceMode({ ...ctx, keepMs: positiveInt(def.keepMs, FALLBACK.keepMs) })
          : leaseMode(ctx))
    mode = modeOfNode

    /** Leader mode starts campaigning for its configured name when deployed (and again after a failed start). */
    let started = false
    async function startConfigured(): Promise<void> {
      if (started || closing || !leader) return
      started = true
      try {
        const name = parseKey(await evaluateInput(RED, node, keyProp, {}, 'key', t), t)
        leader.start(await client(), name)
      } catch (err) {
        started = false
        // Cut short by the node closing (a deploy, a stop): no error of the flow's.
        if (!closing) reportError(node, status, err)
      }
    }

    onInput(node, status, async (msg, send: Send) => {
      const action = override(msg, 'action', overrides, def.action || DEFAULTS.action.value)
      if (typeof action !== 'string' || !ACTIONS.includes(action))
        throw new InputError(
          'ActionUnknown',
          t('errors.action', { value: preview(action), allowed: ACTIONS.join(', ') }),
        )
      const out = (name: string) => (ok: boolean, m: NodeMessage) => {
        // The lock name it used, told on the msg: no node reads msg.key unless its Key setting names it;
        // a gate passes the msg on as it came (its msg.key is the flow's, not the position's).
        if (!(modeName === 'gate' && action === 'acquire')) (m as Record<string, unknown>).key = name
        send(ok ? [m, null] : [null, m])
      }
      // A msg that carries a hold is released (or renewed) by that hold when this node's Lock name is
      // blank or names the same lock. A name of its own is that lock: a hold of another lock, left on
      // the msg by a lock node upstream, does not move the node to it.
      const carriedHold = leader ? null : carried((msg as Record<string, unknown>).lock)
      const blank = keyProp.type === 'str' && keyProp.value.trim() === ''
      const fromHold =
        blank && carriedHold !== null && (action === 'release' || action === 'renew' || action === 'complete')
      // Run once with a blank Key claims an id derived from the msg (claim-id.ts), never msg.key: a key
      // an earlier node read is no msg's identity.
      const derived = modeName === 'once' && blank && action === 'acquire'
      const name = fromHold
        ? carriedHold.name
        : derived
          ? derivedClaimKey(msg)
          : await resolveKey(RED, node, msg, keyProp, t)
      // A semaphore's hold names its slot (`<name>/slot-<i>`): a node naming the semaphore releases it too.
      const hold =
        carriedHold && (carriedHold.name === name || carriedHold.name.startsWith(name + SLOT_SEPARATOR))
          ? carriedHold
          : null
      if (hold && action === 'release') {
        const released = await releaseCarried(await client(), hold)
        ;(msg as Record<string, unknown>).released = released
        if (released) status.outcome('status.released')
        else status.attention('node-red-contrib-aio-statestore/ss-lock:ss-lock.status.notReleased')
        return out(hold.name)(true, msg)
      }
      if (hold && action === 'complete') {
        // A run-once claim made in this runtime is completed where it was made; any other is not.
        const completed = (await find(hold)?.complete?.()) ?? false
        ;(msg as Record<string, unknown>).completed = completed
        if (completed) status.outcome('node-red-contrib-aio-statestore/ss-lock:ss-lock.status.completed')
        else status.attention('node-red-contrib-aio-statestore/ss-lock:ss-lock.status.notCompleted')
        return out(hold.name)(completed, msg)
      }
      if (hold && action === 'renew' && find(hold)) {
        const token = await find(hold)!.renew()
        const m = msg as Record<string, unknown>
        m.acquired = token !== null
        if (token !== null) {
          m.fencingToken = token
          m.lock = { ...hold, fencingToken: token }
        }
        if (token !== null) status.outcome('status.renewed')
        else status.attention('status.lost')
        return out(hold.name)(token !== null, msg)
      }
      // A lock wait rides through a connection that is down when the msg comes (the wait retries until
      // its own timeout); it must not give up after the config node's connection wait.
      const c = modeName === 'lock' && action === 'acquire' && store?.client ? await store.client : await client()
      await modeOfNode.act(c, action as Action, name, msg, out(name))
    })

    if (leader && def.campaign !== false && store) void startConfigured()
  }

  RED.nodes.registerType('ss-lock', SsLock)
}

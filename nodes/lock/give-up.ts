import type { NodeMessage } from 'node-red'
import type { StateStoreClient } from '../../src/client'
import { ConnectionError } from '../../src/diagnostics/errors'
import { clip } from '../lib/status'
import { heldSince } from './holds'
import { holderIfReachable, type ModeContext, type Out } from './mode'

const OWN = 'node-red-contrib-aio-statestore/ss-lock:ss-lock.'
/** Holds named in the log, per node; the oldest is forgotten past this many. */
const LOGGED_KEPT = 1000

/**
 * What a msg that gives up needs told: itself, where it goes, and whether the store was ever connected while it waited.
 */
export interface GivingUp {
  readonly msg: NodeMessage & Record<string, unknown>
  readonly out: Out
  readonly sawConnection: boolean
}

/**
 * A lock-mode node's msgs that give up after *Wait up to*: each leaves by output 2 with who holds
 * the lock and since how long (msg.holder, msg.heldMs), the status says so in yellow, and the log
 * once per hold, however many msgs give up behind it. A msg that waited with no connection at any
 * time learnt nothing of the lock: it fails NotConnected, which a flow tells from a busy lock.
 */
export function givingUp(ctx: ModeContext): (c: StateStoreClient, name: string, w: GivingUp) => Promise<void> {
  const { RED, node, status, timeoutMs, holdMs } = ctx
  const logged = new Set<string>()
  return async (c, name, w) => {
    if (!w.sawConnection && !status.connected)
      throw new ConnectionError('NotConnected', `not connected (waited ${timeoutMs} ms for the lock "${name}")`)
    const current = await holderIfReachable(c, name)
    w.msg.acquired = false
    if (current !== undefined) w.msg.holder = current
    if (current === undefined || current === null) {
      status.attention('status.notAcquired')
      return w.out(false, w.msg)
    }
    const now = Date.now()
    const heldMs = now - heldSince(name, current, now)
    w.msg.heldMs = heldMs
    const seconds = (heldMs / 1000).toFixed(1)
    // The holder is cut to fit the status; the log and msg.holder have it whole.
    status.attention('status.notAcquired', RED._(`${OWN}status.heldBy`, { holder: clip(current, 16), s: seconds }))
    const hold = `${name}\u0000${current}`
    if (!logged.has(hold)) {
      logged.add(hold)
      if (logged.size > LOGGED_KEPT) logged.delete(logged.values().next().value as string)
      node.warn(
        RED._(`${OWN}warn.gaveUp`, {
          node: node.name || node.id,
          name,
          holder: current,
          s: seconds,
          wait: timeoutMs,
          hold: holdMs,
        }),
      )
    }
    w.out(false, w.msg)
  }
}

import type { NodeMessage } from 'node-red'
import type { StateStoreClient } from '../../src/client'
import { Lease } from '../../src/locks'
import { register, unregister, type Hold } from './holds'
import { holderIfReachable, text, type Action, type LockMode, type ModeContext, type Out } from './mode'

interface Held {
  readonly lease: Lease
  readonly hold: Hold
  /** Input actions in progress: their own reply reports the outcome, so a 'lost' during them is not sent again. */
  busy: number
}

/** Lease mode: one lease per name for the node's holder, tried once, renewed while held. */
export function leaseMode(ctx: ModeContext): LockMode {
  const { node, store, status, holder, leaseMs, renewPeriodMs } = ctx
  const held = new Map<string, Held>()

  function entry(c: StateStoreClient, name: string): Held {
    const existing = held.get(name)
    if (existing) return existing
    const lease = new Lease(c, name, { holder, leaseMs, renewPeriodMs })
    let since = 0
    const hold: Hold = {
      info: { name, holder, value: holder, fencingToken: '' },
      get since() {
        return since
      },
      release: (options) => lease.release(options),
      remainingMs: () => lease.remainingMs,
      renew: async () => ((await lease.renew()) && lease.fencingToken ? lease.fencingToken.toString() : null),
    }
    const created: Held = { lease, hold, busy: 0 }
    lease.on('error', (err) => node.warn(err.message))
    lease.on('acquired', () => {
      since = Date.now()
      register(hold)
    })
    lease.on('released', () => {
      unregister(hold)
      // Released by another node (the msg's hold): this node no longer says "acquired".
      if (!ctx.closing() && created.busy === 0) status.outcome('status.released')
    })
    lease.on('lost', ({ reason }) => {
      unregister(hold)
      if (ctx.closing() || created.busy > 0) return
      status.attention('status.lost')
      node.send([null, { topic: name, key: name, payload: false, acquired: false, lost: true, holder, reason }])
    })
    store?.activity.trackLease(node.id, name, 'lease', holder, leaseMs, lease)
    held.set(name, created)
    return created
  }

  return {
    async act(c: StateStoreClient, action: Action, name: string, msg: NodeMessage, out: Out): Promise<void> {
      const h = entry(c, name)
      h.busy += 1
      try {
        const lease = h.lease
        if (action === 'holder') {
          const current = await lease.holder()
          const m = msg as NodeMessage & Record<string, unknown>
          m.holder = text(current.holder)
          store?.activity.holderSeen(node.id, name, m.holder as string | null)
          m.payload = m.holder
          if (current.version) m.version = current.version.toString()
          status.outcome(current.holder ? 'status.held' : 'status.free')
          return out(true, msg)
        }
        if (action === 'release') {
          const released = await lease.release()
          ;(msg as Record<string, unknown>).released = released
          if (released) status.outcome('status.released')
          else status.attention('node-red-contrib-aio-statestore/ss-lock:ss-lock.status.notReleased')
          return out(true, msg)
        }
        let token: string | null = null
        if (action === 'renew') {
          token = (await lease.renew()) && lease.fencingToken ? lease.fencingToken.toString() : null
        } else {
          const result = await lease.tryAcquire()
          token = result.acquired && result.fencingToken ? result.fencingToken.toString() : null
        }
        const m = msg as NodeMessage & Record<string, unknown>
        m.acquired = token !== null
        if (token !== null) {
          m.fencingToken = token
          m.holder = holder
          m.lock = { ...h.hold.info, fencingToken: token }
          status.outcome(action === 'renew' ? 'status.renewed' : 'status.acquired')
        } else {
          const current = await holderIfReachable(c, name)
          if (current !== undefined) m.holder = current
          status.attention(action === 'renew' ? 'status.lost' : 'status.notAcquired')
        }
        out(token !== null, msg)
      } finally {
        h.busy -= 1
      }
    },

    async close(): Promise<void> {
      const work = [...held.values()].map(async ({ lease, hold }) => {
        unregister(hold)
        try {
          if (lease.fencingToken) await lease.release({ timeoutMs: 800 })
          await lease.close()
        } catch {
          // the lease expires on its own; closing must not wait for a dead connection
        }
      })
      held.clear()
      await Promise.all(work)
    },
  }
}

import type { NodeAPI, NodeDef, Node, NodeMessage } from 'node-red'
import type { StateStoreClient } from '../src/client'
import { DEFAULT_LEASE_MS, LeaderElection, Lease, Lock } from '../src/locks'
import { ConnectionError, TimeoutError } from '../src/errors'
import { InputError } from './lib/errors'
import { onInput, reportError, type Send } from './lib/handler'
import { evaluateInput, override, positiveInt, preview, parseKey, resolveKey } from './lib/props'
import { attach } from './lib/config-node'

type Mode = 'lease' | 'lock' | 'leader'
type Action = 'acquire' | 'renew' | 'release' | 'holder'
const ACTIONS: readonly string[] = ['acquire', 'renew', 'release', 'holder']

interface LockDef extends NodeDef {
  store: string
  key: string
  keyType: string
  mode: Mode
  action: Action
  holder: string
  leaseMs: string | number
  timeout: string | number
  autoRenew: boolean
  campaign: boolean
  overrides: boolean
}

/**
 * One lock name this node works with, by mode: a lease, a lock (a lease that can be waited for) or
 * an election. `busy` counts input actions in progress: their own reply reports the outcome, so a
 * 'lost' during them is not sent again.
 */
type Held = LeaseHeld | LockHeld | LeaderHeld
interface LeaseHeld {
  readonly mode: 'lease'
  readonly lease: Lease
  busy: number
}
interface LockHeld {
  readonly mode: 'lock'
  readonly lock: Lock
  readonly lease: Lease
  busy: number
}
interface LeaderHeld {
  readonly mode: 'leader'
  readonly election: LeaderElection
  /** Set while campaigning; aborted by release and close. */
  campaigning?: AbortController
  busy: number
}

const text = (b: Buffer | null | undefined): string | null => (b ? b.toString('utf8') : null)

/**
 * Who holds it, told on a "not acquired" msg; undefined when the store cannot be reached to ask:
 * a lock wait that ran out during an outage is still "not acquired", not an error that would stop
 * a flow that waits again (chaos run, seed 20261125).
 */
async function holderIfReachable(lease: Lease): Promise<string | null | undefined> {
  try {
    return text((await lease.holder()).holder)
  } catch (err) {
    if (err instanceof ConnectionError && err.code !== 'closed') return undefined
    throw err
  }
}

export = function (RED: NodeAPI) {
  function SsLock(this: Node, def: LockDef) {
    RED.nodes.createNode(this, def)
    const node = this
    const mode: Mode = def.mode === 'lock' || def.mode === 'leader' ? def.mode : 'lease'
    const leaseMs = positiveInt(def.leaseMs, DEFAULT_LEASE_MS)
    const renewPeriodMs = def.autoRenew !== false ? Math.max(1, Math.floor(leaseMs / 3)) : undefined
    // Wait for a lock at most one default lease length, as the editor's default says.
    const timeoutMs = positiveInt(def.timeout, DEFAULT_LEASE_MS)
    const overrides = def.overrides !== false
    const keyProp = { value: def.key ?? '', type: def.keyType || 'str' }
    const held = new Map<string, Held>()
    let closing = false

    const { store, status, t, client } = attach(RED, node, def.store, {
      beforeClose: releaseAll,
      onConnection: (s) => {
        if (s.state === 'connected' && mode === 'leader' && def.campaign !== false) void startConfigured()
      },
    })
    const holder = def.holder?.trim() || `${store?.clientId ?? 'nodered'}/${node.id}`

    function entry(c: StateStoreClient, name: string): Held {
      const existing = held.get(name)
      if (existing) return existing
      let h: Held
      if (mode === 'leader') {
        const election = new LeaderElection(c, name, { candidate: holder, termMs: leaseMs })
        const created: LeaderHeld = { mode, election, busy: 0 }
        election.on('elected', ({ fencingToken }) => {
          status.outcome('status.leader')
          node.send([{ topic: name, key: name, payload: true, leader: true, holder, fencingToken: fencingToken.toString() }, null])
        })
        election.on('lost', ({ reason }) => {
          if (closing) return
          status.outcome('status.follower')
          node.send([null, { topic: name, key: name, payload: false, leader: false, holder, reason }])
        })
        election.on('error', (err) => node.warn(err.message))
        store?.activity.trackLease(node.id, name, mode, holder, leaseMs, election.lease, election)
        h = created
      } else {
        const options = { holder, leaseMs, renewPeriodMs }
        const lock = mode === 'lock' ? new Lock(c, name, options) : undefined
        const lease = lock ? lock.lease : new Lease(c, name, options)
        const created: LeaseHeld | LockHeld = lock ? { mode: 'lock', lock, lease, busy: 0 } : { mode: 'lease', lease, busy: 0 }
        lease.on('error', (err) => node.warn(err.message))
        lease.on('lost', ({ reason }) => {
          if (closing || created.busy > 0) return
          status.outcome('status.lost')
          node.send([null, { topic: name, key: name, payload: false, acquired: false, lost: true, holder, reason }])
        })
        store?.activity.trackLease(node.id, name, mode, holder, leaseMs, lease)
        h = created
      }
      held.set(name, h)
      return h
    }

    /** Stands for election (the core campaigns again after a lost term); stops on close or release. */
    function campaign(name: string, h: LeaderHeld): void {
      h.campaigning?.abort()
      const abort = new AbortController()
      h.campaigning = abort
      h.election
        .stand({
          signal: abort.signal,
          onCampaign: () => status.outcome('status.campaigning'),
          onError: (err) => reportError(node, status, err, { topic: name }),
        })
        .catch((err: Error) => node.warn(err.message))
        .finally(() => {
          if (h.campaigning === abort) h.campaigning = undefined
        })
    }

    /** Leader mode starts campaigning for its configured name when deployed (and again after a failed start). */
    let started = false
    async function startConfigured(): Promise<void> {
      if (started || closing) return
      started = true
      try {
        const name = parseKey(await evaluateInput(RED, node, keyProp, {}, 'key', t), t)
        const h = entry(await client(), name)
        if (h.mode === 'leader' && !h.campaigning) campaign(name, h)
      } catch (err) {
        started = false
        // Cut short by the node closing (a deploy, a stop): no error of the flow's.
        if (!closing) reportError(node, status, err)
      }
    }

    async function releaseAll(): Promise<void> {
      closing = true
      const work = [...held.values()].map(async (h) => {
        try {
          if (h.mode === 'leader') {
            h.campaigning?.abort()
            if (h.election.isLeader) await h.election.resign({ timeoutMs: 800 })
            await h.election.close()
          } else {
            if (h.lease.fencingToken) await h.lease.release({ timeoutMs: 800 })
            await h.lease.close()
          }
        } catch {
          // the lease expires on its own; closing must not wait for a dead connection
        }
      })
      held.clear()
      await Promise.all(work)
    }

    onInput(node, status, async (msg, send) => {
      const action = override(msg, 'action', overrides, def.action || 'acquire')
      if (typeof action !== 'string' || !ACTIONS.includes(action)) throw new InputError('ActionUnknown', t('errors.action', { value: preview(action), allowed: ACTIONS.join(', ') }))
      const name = await resolveKey(RED, node, msg, keyProp, overrides, t)
      // A lock wait rides through a connection that is down when the msg comes (the wait retries until
      // its own timeout); it must not give up after the config node's connection wait (chaos run, seed 20261125).
      const h = entry(mode === 'lock' && action === 'acquire' && store?.client ? await store.client : await client(), name)
      h.busy += 1
      try {
        await act(h, action as Action, name, msg, send)
      } finally {
        h.busy -= 1
      }
    })

    async function act(h: Held, action: Action, name: string, msg: NodeMessage, send: Send): Promise<void> {
      const out = (ok: boolean, m: NodeMessage) => {
        // The key it used stays on the msg, so a following node with a blank Key works on the same one.
        m.key = name
        send(ok ? [m, null] : [null, m])
      }

      if (action === 'holder') {
        const current = h.mode === 'leader' ? { holder: await h.election.leader(), version: null } : await h.lease.holder()
        msg.holder = text(current.holder)
        store?.activity.holderSeen(node.id, name, msg.holder as string | null)
        msg.payload = msg.holder
        if (current.version) msg.version = current.version.toString()
        status.outcome(current.holder ? 'status.held' : 'status.free')
        return out(true, msg)
      }
      if (action === 'release') {
        if (h.mode === 'leader') {
          h.campaigning?.abort()
          h.campaigning = undefined
        }
        msg.released = h.mode === 'leader' ? await h.election.resign() : h.mode === 'lock' ? await h.lock.release() : await h.lease.release()
        status.outcome('status.released')
        return out(true, msg)
      }
      if (h.mode === 'leader') {
        if (action === 'renew') throw new InputError('ActionUnsupported', t('errors.renewLeader'))
        if (!h.campaigning) campaign(name, h)
        return
      }
      const lease = h.lease
      let token: string | null = null
      if (action === 'renew') {
        token = (await lease.renew()) && lease.fencingToken ? lease.fencingToken.toString() : null
      } else if (h.mode === 'lock') {
        try {
          token = (await h.lock.acquire({ timeoutMs })).toString()
        } catch (err) {
          if (!(err instanceof TimeoutError)) throw err
        }
      } else {
        const result = await lease.tryAcquire()
        token = result.acquired && result.fencingToken ? result.fencingToken.toString() : null
      }
      msg.acquired = token !== null
      if (token !== null) {
        msg.fencingToken = token
        msg.holder = holder
        status.outcome(action === 'renew' ? 'status.renewed' : 'status.acquired')
      } else {
        const current = await holderIfReachable(lease)
        if (current !== undefined) msg.holder = current
        status.outcome(action === 'renew' ? 'status.lost' : 'status.notAcquired')
      }
      out(token !== null, msg)
    }

    if (mode === 'leader' && def.campaign !== false && store) void startConfigured()
  }

  RED.nodes.registerType('ss-lock', SsLock)
}

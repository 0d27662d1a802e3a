import type { NodeAPI, NodeDef, Node, NodeMessage } from 'node-red'
import { LeaderElection, Lease, Lock, type StateStoreClient } from '../src/client'
import { TimeoutError } from '../src/errors'
import { InputError } from './lib/errors'
import { onInput, reportError, type Send } from './lib/handler'
import { evaluateInput, override, positiveInt, preview, requireKey, resolveKey } from './lib/props'
import { attach } from './lib/store'

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

/** One lock name this node works with: a lease (lease and lock modes) or an election (leader mode). */
interface Held {
  lease?: Lease
  lock?: Lock
  election?: LeaderElection
  campaigning?: AbortController
  /** Input actions in progress: their own reply reports the outcome, so 'lost' from them is not sent again. */
  busy: number
}

const text = (b: Buffer | null | undefined): string | null => (b ? b.toString('utf8') : null)

export = function (RED: NodeAPI) {
  function SsLock(this: Node, def: LockDef) {
    RED.nodes.createNode(this, def)
    const node = this
    const mode: Mode = def.mode === 'lock' || def.mode === 'leader' ? def.mode : 'lease'
    const leaseMs = positiveInt(def.leaseMs, 10_000)
    const renewPeriodMs = def.autoRenew !== false ? Math.max(1, Math.floor(leaseMs / 3)) : undefined
    const timeoutMs = positiveInt(def.timeout, 10_000)
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
      let h = held.get(name)
      if (h) return h
      const created: Held = { busy: 0 }
      h = created
      if (mode === 'leader') {
        const election = new LeaderElection(c, name, { candidate: holder, termMs: leaseMs })
        election.on('elected', ({ fencingToken }) => {
          status.outcome('status.leader')
          node.send([{ topic: name, payload: true, leader: true, holder, fencingToken: fencingToken.toString() }, null])
        })
        election.on('lost', ({ reason }) => {
          if (closing) return
          status.outcome('status.follower')
          node.send([null, { topic: name, payload: false, leader: false, holder, reason }])
          if (h?.campaigning) void campaign(name, h)
        })
        election.on('error', (err) => node.warn(err.message))
        store?.activity.trackLease(node.id, name, mode, holder, leaseMs, election.lease, election)
        h.election = election
      } else {
        const options = { holder, leaseMs, renewPeriodMs }
        const lock = mode === 'lock' ? new Lock(c, name, options) : undefined
        const lease = lock ? lock.lease : new Lease(c, name, options)
        lease.on('error', (err) => node.warn(err.message))
        lease.on('lost', ({ reason }) => {
          if (closing || created.busy > 0) return
          status.outcome('status.lost')
          node.send([null, { topic: name, payload: false, acquired: false, lost: true, holder, reason }])
        })
        store?.activity.trackLease(node.id, name, mode, holder, leaseMs, lease)
        h.lease = lease
        h.lock = lock
      }
      held.set(name, h)
      return h
    }

    /** Campaigns until elected; the 'elected' event reports it. Stops on close or release. */
    async function campaign(name: string, h: Held): Promise<void> {
      h.campaigning?.abort()
      const abort = new AbortController()
      h.campaigning = abort
      status.outcome('status.campaigning')
      while (!abort.signal.aborted && !closing) {
        try {
          await h.election!.campaign({ signal: abort.signal })
          return
        } catch (err) {
          if (abort.signal.aborted || closing) return
          reportError(node, status, err, { topic: name })
          await new Promise((resolve) => setTimeout(resolve, 1000).unref())
        }
      }
    }

    /** Leader mode starts campaigning for its configured name when deployed (and again after a failed start). */
    let started = false
    async function startConfigured(): Promise<void> {
      if (started || closing) return
      started = true
      try {
        const name = requireKey(await evaluateInput(RED, node, keyProp, {}, 'key', t), t)
        const h = entry(await client(), name)
        if (!h.campaigning) void campaign(name, h)
      } catch (err) {
        started = false
        reportError(node, status, err)
      }
    }

    async function releaseAll(): Promise<void> {
      closing = true
      const work = [...held.values()].map(async (h) => {
        h.campaigning?.abort()
        try {
          if (h.election) {
            if (h.election.isLeader) await h.election.resign({ timeoutMs: 800 })
            await h.election.close()
          } else if (h.lease) {
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
      const h = entry(await client(), name)
      h.busy += 1
      try {
        await act(h, action as Action, name, msg, send)
      } finally {
        h.busy -= 1
      }
    })

    async function act(h: Held, action: Action, name: string, msg: NodeMessage, send: Send): Promise<void> {
      const out = (ok: boolean, m: NodeMessage) => send(ok ? [m, null] : [null, m])

      if (action === 'holder') {
        const current = h.election ? { holder: await h.election.leader(), version: null } : await h.lease!.holder()
        msg.holder = text(current.holder)
        store?.activity.holderSeen(node.id, name, msg.holder as string | null)
        msg.payload = msg.holder
        if (current.version) msg.version = current.version.toString()
        status.outcome(current.holder ? 'status.held' : 'status.free')
        return out(true, msg)
      }
      if (action === 'release') {
        if (h.campaigning) h.campaigning.abort()
        h.campaigning = undefined
        msg.released = h.election ? await h.election.resign() : h.lock ? await h.lock.release() : await h.lease!.release()
        status.outcome('status.released')
        return out(true, msg)
      }
      if (h.election) {
        if (action === 'renew') throw new InputError('ActionUnsupported', t('errors.renewLeader'))
        if (!h.campaigning) void campaign(name, h)
        return
      }
      const lease = h.lease!
      let token: string | null = null
      if (action === 'renew') {
        token = (await lease.renew()) && lease.fencingToken ? lease.fencingToken.toString() : null
      } else if (h.lock) {
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
        msg.holder = text((await lease.holder()).holder)
        status.outcome(action === 'renew' ? 'status.lost' : 'status.notAcquired')
      }
      out(token !== null, msg)
    }

    if (mode === 'leader' && def.campaign !== false && store) void startConfigured()
  }

  RED.nodes.registerType('ss-lock', SsLock)
}

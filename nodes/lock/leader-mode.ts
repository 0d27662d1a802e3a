import type { NodeMessage } from 'node-red'
import type { StateStoreClient } from '../../src/client'
import { LeaderElection } from '../../src/locks'
import { InputError } from '../lib/errors'
import { reportError } from '../msg/handler'
import { text, type Action, type LockMode, type ModeContext, type Out } from './mode'

interface Held {
  readonly election: LeaderElection
  /** Set while campaigning; aborted by release and close. */
  campaigning?: AbortController
  /** Who leads, as last observed (null: nobody; undefined: not known yet). */
  leader?: string | null
}

/**
 * Leader mode: the node stands for election for its holder, and tells when it leads and when not.
 * As a gate (`gate`), it sends nothing of its own: each msg passes by output 1 while this node
 * surely leads (elected, and its term not yet run out as this runtime measures it from the last
 * renewal sent), with the term's fencing token, and by output 2 otherwise.
 */
export function leaderMode(
  ctx: ModeContext,
  options: { gate?: boolean } = {},
): LockMode & { start(client: StateStoreClient, name: string): void } {
  const { node, store, status, t, holder, leaseMs } = ctx
  const gate = options.gate === true
  const held = new Map<string, Held>()

  function entry(c: StateStoreClient, name: string): Held {
    const existing = held.get(name)
    if (existing) return existing
    const election = new LeaderElection(c, name, { candidate: holder, termMs: leaseMs })
    const created: Held = { election }
    election.on('elected', ({ fencingToken }) => {
      status.outcome('status.leader')
      if (gate) return
      node.send([
        { topic: name, key: name, payload: true, leader: true, holder, fencingToken: fencingToken.toString() },
        null,
      ])
    })
    election.on('lost', ({ reason }) => {
      if (ctx.closing()) return
      status.outcome('status.follower')
      if (gate) return
      node.send([null, { topic: name, key: name, payload: false, leader: false, holder, reason }])
    })
    election.on('leader', ({ leader }) => (created.leader = text(leader)))
    election.on('error', (err) => node.warn(err.message))
    store?.activity.trackLease(node.id, name, 'leader', holder, leaseMs, election.lease, election)
    held.set(name, created)
    return created
  }

  /** Stands for election (the core campaigns again after a lost term); stops on close or release. */
  function campaign(name: string, h: Held): void {
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

  /** The gate: output 1 with the term's token while this node surely leads, else output 2 with who leads (or null). */
  function pass(h: Held, m: NodeMessage & Record<string, unknown>, out: Out): void {
    const token = h.election.isLeader && h.election.lease.remainingMs > 0 ? h.election.lease.fencingToken : null
    m.leader = token !== null
    if (token) {
      m.fencingToken = token.toString()
      m.holder = holder
    } else m.holder = h.leader ?? null
    out(token !== null, m)
  }

  return {
    start(c: StateStoreClient, name: string): void {
      const h = entry(c, name)
      if (!h.campaigning) campaign(name, h)
    },

    async act(c: StateStoreClient, action: Action, name: string, msg: NodeMessage, out: Out): Promise<void> {
      const h = entry(c, name)
      const m = msg as NodeMessage & Record<string, unknown>
      if (action === 'holder') {
        const leader = text(await h.election.leader())
        m.holder = leader
        store?.activity.holderSeen(node.id, name, leader)
        m.payload = leader
        status.outcome(leader ? 'status.held' : 'status.free')
        return out(true, msg)
      }
      if (action === 'release') {
        h.campaigning?.abort()
        h.campaigning = undefined
        m.released = await h.election.resign()
        if (m.released) status.outcome('status.released')
        else status.attention('node-red-contrib-aio-statestore/ss-lock:ss-lock.status.notReleased')
        return out(true, msg)
      }
      if (action === 'renew') throw new InputError('ActionUnsupported', t('errors.renewLeader'))
      if (!h.campaigning) campaign(name, h)
      if (gate) pass(h, m, out)
    },

    async close(): Promise<void> {
      const work = [...held.values()].map(async (h) => {
        try {
          h.campaigning?.abort()
          if (h.election.isLeader) await h.election.resign({ timeoutMs: 800 })
          await h.election.close()
        } catch {
          // the term expires on its own; closing must not wait for a dead connection
        }
      })
      held.clear()
      await Promise.all(work)
    },
  }
}

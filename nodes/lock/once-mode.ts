import type { NodeMessage } from 'node-red'
import type { StateStoreClient } from '../../src/client'
import { CancelledError } from '../../src/diagnostics/errors'
import { claimOnce, parseClaim, type Claim } from '../../src/locks'
import { register, unregister, type Hold } from './holds'
import { text, type Action, type LockMode, type ModeContext, type Out } from './mode'

const OWN = 'node-red-contrib-aio-statestore/ss-lock:ss-lock.'

type Msg = NodeMessage & Record<string, unknown>

/** A claim held by a msg of this node: a Hold, so any lock node can complete or release it by msg.lock. */
interface ClaimHold extends Hold {
  readonly claim: Claim
  complete(): Promise<boolean>
}

/**
 * Run-once mode: each msg claims its id (the Key, or an id derived from the msg) with a claim of its
 * own, renewed while the work runs. The first claim passes by output 1 with its fencing token and
 * carries it in msg.lock; a msg whose id is claimed already leaves by output 2 with who claimed it
 * and when, after waiting up to *Wait up to* for a claim still in work to complete or to run out.
 * A lock node with action `complete` marks the work done (kept *Keep done for*), `release` gives it up.
 */
export function onceMode(ctx: ModeContext & { keepMs: number }): LockMode {
  const { RED, node, status, holder, leaseMs, renewPeriodMs, timeoutMs, holdMs, keepMs } = ctx
  const closing = new AbortController()
  const mine = new Set<ClaimHold>()

  function hold(claim: Claim): ClaimHold {
    const since = Date.now()
    let timer: NodeJS.Timeout | undefined
    const end = () => {
      clearTimeout(timer)
      unregister(h)
      mine.delete(h)
    }
    const h: ClaimHold = {
      claim,
      since,
      info: { name: claim.key.toString('utf8'), holder, value: claim.value, fencingToken: claim.fencingToken.toString() },
      release: async (options) => {
        end()
        return claim.release(options)
      },
      complete: async () => {
        end()
        return claim.complete()
      },
      renew: async () => ((await claim.lease.renew()) && claim.lease.fencingToken ? claim.lease.fencingToken.toString() : null),
      remainingMs: () => (claim.isEnded ? 0 : claim.lease.remainingMs),
    }
    // A msg that never reaches a completion: its claim stops renewing and runs out, so a later delivery claims it again.
    if (holdMs > 0)
      timer = setTimeout(() => {
        end()
        void claim.lease.close()
        node.warn(RED._(`${OWN}warn.workAtMost`, { node: node.name || node.id, name: h.info.name, ms: holdMs }))
      }, holdMs)
    claim.lease.on('lost', () => end())
    claim.lease.on('error', (err) => node.warn(err.message))
    register(h)
    mine.add(h)
    return h
  }

  return {
    async act(c: StateStoreClient, action: Action, name: string, msg: NodeMessage, out: Out): Promise<void> {
      const m = msg as Msg
      if (action === 'holder') {
        const { value } = await c.get(name)
        const record = value ? parseClaim(value) : null
        m.holder = record ? record.by : text(value)
        m.payload = record ?? m.holder
        status.outcome(value ? 'status.held' : 'status.free')
        return out(true, msg)
      }
      if (action !== 'acquire') {
        // Completing or releasing without the claim the msg carries: nothing of this node's to end.
        m[action === 'complete' ? 'completed' : 'released'] = false
        status.attention(`${OWN}status.${action === 'complete' ? 'notCompleted' : 'notReleased'}`)
        return out(false, msg)
      }
      let outcome
      try {
        outcome = await claimOnce(c, name, { holder, leaseMs, keepMs, timeoutMs, signal: closing.signal, ...(renewPeriodMs ? { renewPeriodMs } : {}) })
      } catch (err) {
        if (err instanceof CancelledError && closing.signal.aborted) return
        throw err
      }
      if (outcome.claimed) {
        const h = hold(outcome.claim)
        m.claimed = true
        m.fencingToken = h.info.fencingToken
        m.holder = holder
        m.lock = { ...h.info }
        status.outcome(`${OWN}status.claimed`)
        return out(true, msg)
      }
      const r = outcome.record
      m.claimed = false
      m.duplicate = true
      m.claimedBy = r ? r.by : outcome.value.toString('utf8')
      if (r) {
        m.claimedAt = new Date(r.at).toISOString()
        m.claimState = r.state === 'done' ? 'done' : 'working'
        if (r.doneAt !== undefined) m.doneAt = new Date(r.doneAt).toISOString()
      }
      status.attention(`${OWN}status.duplicate`)
      out(false, msg)
    },

    async close(): Promise<void> {
      closing.abort()
      // The claims in work lapse after their lease: a later delivery claims them again.
      const work = [...mine].map(async (h) => {
        unregister(h)
        await h.claim.lease.close()
      })
      mine.clear()
      await Promise.all(work)
    },
  }
}

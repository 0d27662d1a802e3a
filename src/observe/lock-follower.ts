import type { KeyNotification, Observation, StateStoreClient } from '../client'
import type { ActivityChange, StoreActivity } from './activity'

/**
 * Keeps the lock entries of a connection true to the store: it observes the key of every lease,
 * lock and election name the activity tracks, so an entry follows a release by another node or
 * runtime, an expiry and a new leader when they happen, not at its own next renewal. A name no
 * entry uses any more is no longer observed. A client that cannot observe (the preview dialect),
 * or a key the policy does not let it read, leaves the entries as their owners report them.
 */
export class LockFollower {
  private readonly followed = new Map<string, Promise<Observation | null>>()
  private closed = false

  constructor(
    private readonly activity: StoreActivity,
    private readonly client: Pick<StateStoreClient, 'observe' | 'canObserve'>,
  ) {
    activity.on('change', this.onChange)
    this.sync()
  }

  /** One name's change costs one look-up, whatever the number of names tracked. */
  private readonly onChange = (change: ActivityChange): void => {
    if (change.kind !== 'lock' || this.closed || !this.client.canObserve) return
    const { name } = change
    if (this.activity.usesName(name)) this.follow(name)
    else {
      const observation = this.followed.get(name)
      if (!observation) return
      this.followed.delete(name)
      void stop(observation)
    }
  }

  private follow(name: string): void {
    if (this.followed.has(name)) return
    const listener = (n: KeyNotification) => this.activity.storeHolder(name, n.operation === 'SET' ? n.value : null)
    this.followed.set(
      name,
      this.client.observe(name, listener).catch(() => null),
    )
  }

  private sync(): void {
    if (this.closed || !this.client.canObserve) return
    const names = new Set([...this.activity.locks.values()].map((l) => l.name))
    for (const name of names) this.follow(name)
    for (const [name, observation] of this.followed) {
      if (names.has(name)) continue
      this.followed.delete(name)
      void stop(observation)
    }
  }

  /** Stops following and unregisters every observation. */
  async close(): Promise<void> {
    const all = this.detach()
    await Promise.all(all.map(stop))
  }

  /** Stops following, leaving the observations to the client's own close (no request on the way out). */
  detach(): Array<Promise<Observation | null>> {
    this.closed = true
    this.activity.off('change', this.onChange)
    const all = [...this.followed.values()]
    this.followed.clear()
    return all
  }
}

async function stop(observation: Promise<Observation | null>): Promise<void> {
  try {
    await (await observation)?.close()
  } catch {
    // The connection is going or gone: nothing is left to stop.
  }
}

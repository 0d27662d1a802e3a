import { decodeAuto } from '../formats/value'
import { getPath, setPath, type Segment } from './path'
import { clientOf, encode, expiry, inactive, named, serviceKey, withoutMethods, type Session } from './session'
import { WriteQueue } from './write-queue'

type Scope = Record<string, unknown>

/**
 * The store with `cache: false`: nothing held in memory, every call asks the service (reads) or the
 * index (keys); only asynchronous calls, as localfilesystem without its cache.
 */
export class UncachedStore {
  private readonly writes = new Map<string, WriteQueue>()

  constructor(private readonly session: Session) {}

  async get(scope: string, paths: Array<readonly Segment[]>): Promise<unknown[]> {
    const client = clientOf(this.session)
    return Promise.all(
      paths.map(async (parts) => {
        const top = String(parts[0])
        const { value } = await this.session.limiter
          .run(() => client.get(serviceKey(this.session, scope, top)))
          .catch((err: unknown) => {
            throw named(this.session, err, `reading ${scope}/${top}`)
          })
        return value === null ? undefined : getPath(decodeAuto(value), parts, 1)
      }),
    )
  }

  /** Read-modify-write per top-level key (reads only for nested paths). */
  async set(scope: string, paths: Array<readonly Segment[]>, values: unknown[]): Promise<void> {
    const client = clientOf(this.session)
    const byTop = new Map<string, number[]>()
    paths.forEach((parts, i) => {
      const top = String(parts[0])
      byTop.set(top, [...(byTop.get(top) ?? []), i])
    })
    await Promise.all(
      [...byTop].map(async ([top, indices]) => {
        const holder = Object.create(null) as Scope
        if (indices.some((i) => paths[i]!.length > 1)) {
          const { value } = await this.session.limiter.run(() => client.get(serviceKey(this.session, scope, top)))
          if (value !== null) holder[top] = decodeAuto(value)
        }
        for (const i of indices) setPath(holder, paths[i]!, values[i])
        await this.write(scope, top, encode(this.session, scope, holder[top]))
      }),
    )
  }

  async keys(scope: string): Promise<string[]> {
    const state = await this.session.index!.read()
    return withoutMethods(scope, [...(state.get(scope) ?? [])])
  }

  async delete(scope: string): Promise<void> {
    clientOf(this.session)
    const tops = (await this.session.index!.read()).get(scope) ?? []
    try {
      await Promise.all([...tops].map((top) => this.write(scope, top, null)))
    } catch (err) {
      throw named(this.session, err, `deleting the context ${scope}`)
    }
  }

  async clean(activeNodes: string[]): Promise<void> {
    const indexed = this.session.index ? await this.session.index.read() : new Map()
    await Promise.all(inactive(indexed.keys(), activeNodes).map((scope) => this.delete(scope)))
  }

  /** Settles once no write is in flight and the index has caught up. */
  async drain(): Promise<void> {
    for (;;) {
      const pending = [...this.writes.values()].flatMap((q) => (q.drained ? [q.drained] : []))
      if (pending.length === 0 && !this.session.index?.busy) break
      await Promise.all([...pending, this.session.index?.flush()])
    }
  }

  /** Writes of one key go out in order (write-queue.ts); the caller hears once the index says whether it exists. */
  private write(scope: string, top: string, bytes: Buffer | null): Promise<void> {
    const key = serviceKey(this.session, scope, top)
    let queue = this.writes.get(key)
    if (!queue) {
      queue = new WriteQueue(
        (b) => this.send(scope, top, key, b),
        () => this.writes.delete(key),
      )
      this.writes.set(key, queue)
    }
    return queue.push(bytes)
  }

  private async send(scope: string, top: string, key: string, bytes: Buffer | null): Promise<void> {
    const { limiter, config } = this.session
    try {
      const client = clientOf(this.session)
      const expired = expiry(this.session, client)
      if (bytes === null) await limiter.run(() => client.del(key), expired)
      else await limiter.run(() => client.set(key, bytes, { persist: config.persist }), expired)
      await this.session.index?.check({ scope, top, exists: bytes !== null, verify: false })
    } catch (err) {
      throw named(this.session, err, `writing ${key}`)
    }
  }
}
